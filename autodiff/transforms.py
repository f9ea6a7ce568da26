"""The transforms: grad, value_and_grad, jacobian, hessian, hvp, jvp, vjp, linearize.

Each is written once, on plain callables. Outputs mirror inputs: NumPy arrays in, NumPy arrays out;
Tensors in (inside an enclosing tape), Tensors out, so the transforms nest (``grad(grad(f))``,
``hessian(f)`` = ``jacobian(jacobian(f))``). Jacobians and Hessians are one batched sweep each, not
one sweep per row.

They keep JAX's signatures and habits: ``has_aux=True`` for a function returning ``(output, aux)``
(aux is passed through, never differentiated), pytrees in and out (``hvp`` of a dict with a dict
tangent is a dict), and ``hvp(f)(x, v)`` curried as autograd's ``hessian_vector_product(f)(x, v)``.

A callable may supply its own version of a transform of it (``autodiff.function`` does: its
transforms are replayed programs). Two methods, looked up on its type, make the protocol:

- ``__autodiff_transform__(body, *args)`` returns its own ``body(f, *args)``, the function that a
  transform makes of f (``grad(f, argnums)`` is ``transformed(_grad, f, argnums)``);
- ``__autodiff_partial__(build, args, late)`` returns its own ``build(f, *args)``: a value and a
  function of late arguments (``vjp``'s pullback, ``linearize``'s push-forward, the Hessian
  operator's product), whose late arguments look like ``late(value)``;
- optionally, ``__autodiff_deferred__(build, x)``: that function at a point x, with the value
  made on first use (its ``start()`` gives the pair), or None (a Hessian operator asked for one
  product per point need not compute the value and gradient it does not read).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import numpy as anp
from .core import Tensor, Variable, constant, paused, state, value_of
from .forward import ForwardAccumulator
from .tape import GradientTape, UnconnectedGradients, require_scalar, require_tensors, source_gradient
from .tree import flatten, flatten_like, mirror, ravel

ZERO = UnconnectedGradients.ZERO


def transformed(body: Callable, f: Callable, *args: Any) -> Callable:
    """``body(f, *args)``, or f's own version of it (``__autodiff_transform__``)."""
    own = getattr(type(f), "__autodiff_transform__", None)
    return body(f, *args) if own is None else own(f, body, *args)


def partially_evaluated(build: Callable, f: Callable, args: tuple, late: Callable) -> tuple:
    """``build(f, *args)`` (a value and a function of late arguments), or f's own version of it
    (``__autodiff_partial__``)."""
    own = getattr(type(f), "__autodiff_partial__", None)
    return build(f, *args) if own is None else own(f, build, args, late)


# --- outputs mirror inputs (tree.mirror) -----------------------------------------------------------

def _has_tensors(tree) -> bool:
    return any(isinstance(leaf, Tensor) for leaf in flatten(tree)[0])


def _watched_args(args: Sequence, argnums):
    """Replace the differentiated arguments by Tensors to watch; report whether Tensors came in.

    A Tensor argument is watched through a fresh alias of it, so that the transform differentiates
    in the argument only, not in the same Tensor reached through a closure (``grad(lambda y: x *
    y)(x)`` is x, not 2 x: the perturbation confusion of Siskind and Pearlmutter 2005). Variables
    stay themselves: f reads them (TensorFlow's semantics)."""
    single = isinstance(argnums, int)
    numbers = (argnums,) if single else tuple(argnums)
    new_args = list(args)
    tensors_in = False
    sources = []
    for k in numbers:
        leaves, rebuild = flatten(args[k])
        tensors_in = tensors_in or any(isinstance(leaf, Tensor) for leaf in leaves)
        tensors = [(leaf if isinstance(leaf, Variable) else anp.ops.alias(leaf)) if isinstance(leaf, Tensor)
                   else constant(leaf) for leaf in leaves]
        new_args[k] = rebuild(tensors)
        sources.append(new_args[k])
    return new_args, (sources[0] if single else tuple(sources)), tensors_in



def _recording() -> bool:
    """Whether a tape or accumulator records: then results must be Tensors it differentiates."""
    return bool(state.tapes or state.accumulators)


def _output_and_aux(f: Callable, what: str) -> tuple[Callable, list]:
    """f's output alone, as a function, and the list where each call leaves its aux: for
    ``has_aux=True``, f returns the pair ``(output, aux)`` (as in JAX)."""
    auxes: list = []

    def output(*args: Any, **kwargs: Any) -> Any:
        out = f(*args, **kwargs)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            got = f"a {type(out).__name__}" + (f" of {len(out)} entries" if isinstance(out, (tuple, list)) else "")
            raise TypeError(f"{what} with has_aux=True needs a function returning a pair (output, aux), got {got}")
        auxes.append(out[1])
        return out[0]
    return output, auxes


def _scalar(y: Any, what: str) -> Tensor:
    """``y`` if it is a Tensor of one element; for grad and value_and_grad a tuple or list names
    ``has_aux`` (f may return ``(loss, aux)``); anything else is refused as ``require_scalar`` does."""
    if isinstance(y, (tuple, list)) and what == "grad":
        raise TypeError(f"{what} needs a function with a scalar output, got a {type(y).__name__} of {len(y)} "
                        "entries; for a function returning (output, aux) pass has_aux=True (as in JAX), for "
                        "vector outputs use jacobian")
    return require_scalar(y, what)


# --- gradients, Jacobians, Hessians ----------------------------------------------------------------

def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(f(*args), gradient of f with respect to args[argnums])``.

    One forward and one backward pass give both, as ``jax.value_and_grad``; with ``has_aux`` f
    returns ``(output, aux)`` and the result is ``((output, aux), gradient)``.

    Parameters
    ----------
    f : callable
        A scalar-valued function of arrays (or pytrees of arrays); an output of one element of any
        shape counts as a scalar.
    argnums : int or sequence of int, default 0
        Which positional argument(s) to differentiate; a sequence gives a tuple of gradients.
    has_aux : bool, default False
        Whether f returns a pair ``(output, aux)``: the output is differentiated, aux is returned
        as computed (JAX's meaning).

    Returns
    -------
    callable
        Takes f's arguments; arrays in, arrays out (Tensors in, inside a tape, Tensors out).

    Raises
    ------
    TypeError
        When called, if f does not return a scalar (or, with ``has_aux``, a pair with one first).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> value, gradient = ad.value_and_grad(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    >>> float(value), gradient
    (9.0, array([ 3., 12.]))
    >>> (value, aux), gradient = ad.value_and_grad(lambda x: (np.sum(x ** 3), x ** 2), has_aux=True)(
    ...     np.array([1.0, 2.0]))
    >>> aux                                     # as computed, not differentiated
    array([1., 4.])
    """
    return transformed(_value_and_grad, f, argnums, has_aux)


def _value_and_grad(f: Callable, argnums, has_aux: bool = False, what: str = "grad") -> Callable:
    def value_and_grad_f(*args: Any, **kwargs: Any) -> tuple:
        new_args, sources, tensors_in = _watched_args(args, argnums)
        output, auxes = _output_and_aux(f, what) if has_aux else (f, None)
        with GradientTape() as tape:
            tape.watch(sources)
            y = _scalar(output(*new_args, **kwargs), what)
        g = tape.gradient(y, sources, unconnected_gradients=ZERO)
        value = (y, auxes[0]) if has_aux else y
        return mirror(value, tensors_in), mirror(g, tensors_in)
    return value_and_grad_f


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function, as a function (nestable: ``grad(grad(f))``).

    Parameters
    ----------
    f : callable
        A scalar-valued function of arrays (or pytrees of arrays, as in JAX); an output of one
        element of any shape, such as ``np.sum(x, keepdims=True)``, counts as a scalar.
    argnums : int or sequence of int, default 0
        Which positional argument(s) to differentiate; a sequence gives a tuple of gradients.
    has_aux : bool, default False
        Whether f returns a pair ``(output, aux)``; then ``grad_f`` returns ``(gradient, aux)``,
        aux as computed (JAX's meaning).

    Returns
    -------
    callable
        ``grad_f(*args)``: the gradient, shaped like ``args[argnums]``.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> ad.grad(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([ 3., 12.])
    >>> float(ad.grad(ad.grad(lambda x: x ** 3))(2.0))      # second derivative: 6 x
    12.0
    >>> ad.grad(lambda x: (x ** 3, {"x squared": x ** 2}), has_aux=True)(2.0)
    (np.float64(12.0), {'x squared': np.float64(4.0)})
    """
    return transformed(_grad, f, argnums, has_aux)


def _grad(f: Callable, argnums, has_aux: bool = False) -> Callable:
    value_and_grad_f = _value_and_grad(f, argnums, has_aux)

    def grad_f(*args: Any, **kwargs: Any) -> Any:
        value, g = value_and_grad_f(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return grad_f


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, chunk_size: int | None = None,
             has_aux: bool = False) -> Callable:
    """d f / d args[argnums], shape ``f.shape + arg.shape``, in one batched sweep.

    A function returning a structure (list, tuple, dict) of arrays gives that structure of
    Jacobians, as ``jax.jacobian`` does. The sweep pushes all rows of the identity at once;
    ``chunk_size`` rows at a time bounds its memory.

    Parameters
    ----------
    f : callable
        A function of arrays returning an array (or a structure of arrays).
    argnums : int or sequence of int, default 0
        Which positional argument(s) to differentiate.
    chunk_size : int, optional
        How many rows each sweep computes (default: all).
    has_aux : bool, default False
        Whether f returns a pair ``(output, aux)``; then ``jacobian_f`` returns ``(jacobian, aux)``
        (JAX's meaning).

    Returns
    -------
    callable
        ``jacobian_f(*args)``.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> ad.jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return transformed(_jacobian, f, argnums, chunk_size, has_aux)


def _jacobian(f: Callable, argnums, chunk_size, has_aux: bool = False) -> Callable:
    def jacobian_f(*args: Any, **kwargs: Any) -> Any:
        new_args, sources, tensors_in = _watched_args(args, argnums)
        output, auxes = _output_and_aux(f, "jacobian") if has_aux else (f, None)
        with GradientTape() as tape:
            tape.watch(sources)
            y = require_tensors(output(*new_args, **kwargs), "jacobian")
        jac = tape.jacobian(y, sources, unconnected_gradients=ZERO, chunk_size=chunk_size)
        return mirror((jac, auxes[0]) if has_aux else jac, tensors_in)
    return jacobian_f


def hessian(f: Callable, argnums: int = 0, chunk_size: int | None = None, has_aux: bool = False) -> Callable:
    """The Hessian of a scalar function: the Jacobian of its gradient, in one batched sweep.

    An array argument of shape s gives shape ``s + s``; a pytree argument gives one flat (n, n)
    matrix over ``ravel(arg)`` (``jax.hessian`` gives nested pytrees instead: that is
    ``jacobian(grad(f))`` here). For products with a few vectors, ``hvp`` or ``hessian_operator``
    avoid forming the matrix.

    Parameters
    ----------
    f : callable
        A scalar-valued function.
    argnums : int, default 0
        Which positional argument to differentiate.
    chunk_size : int, optional
        How many rows each sweep computes (default: all).
    has_aux : bool, default False
        Whether f returns a pair ``(output, aux)``; then ``hessian_f`` returns ``(hessian, aux)``
        (JAX's meaning).

    Returns
    -------
    callable
        ``hessian_f(*args)``.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> ad.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    >>> ad.hessian(lambda p: p["a"] ** 2 * p["b"])({"a": 1.0, "b": 3.0})   # over ravel: (a, b)
    array([[6., 2.],
           [2., 0.]])
    """
    return transformed(_hessian, f, argnums, chunk_size, has_aux)


def _hessian(f: Callable, argnums, chunk_size, has_aux: bool = False) -> Callable:
    def hessian_f(*args: Any, **kwargs: Any) -> Any:
        if isinstance(args[argnums], (list, tuple, dict)):
            flat, unravel = _ravel_mirrored(args[argnums])
            return _hessian(lambda v: f(*_insert(args, argnums, unravel(v)), **kwargs), 0, chunk_size,
                            has_aux)(flat)
        return _jacobian(_jacobian(f, argnums, None, has_aux), argnums, chunk_size, has_aux)(*args, **kwargs)
    return hessian_f


def _ravel_mirrored(tree):
    """``ravel(tree)``, but with Tensor leaves the flat vector is a Tensor (Tensors in, Tensors out)."""
    flat, unravel = ravel(tree)
    return (constant(flat) if _has_tensors(tree) and not isinstance(flat, Tensor) else flat), unravel


def _insert(args, k, value):
    args = list(args)
    args[k] = value
    return args


# --- products -------------------------------------------------------------------------------------

def cached_hvp(f: Callable, x: Any) -> tuple:
    """``((f(x), flat gradient), product)``: f and its gradient recorded once at x; ``product(V)``
    is H V for V of shape (n,) or (k, n), one backward sweep of the recording seeded with V (the
    VJP of the gradient: H is symmetric; Pearlmutter 1994). Nothing is recorded per product, on
    this recording or on the caller's tapes. With x a Variable or a structure of Variables, f
    takes no argument (it reads them).
    """
    leaves = flatten(x)[0]
    reads_variables = bool(leaves) and all(isinstance(leaf, Variable) for leaf in leaves)
    call = (lambda _: f()) if reads_variables else f
    (value, gradient), pullback = recorded_vjp(_value_and_flat_gradient(call), x)
    sizes = [int(np.size(value_of(leaf))) for leaf in leaves]

    def product(seeds: Any) -> Any:
        with paused():
            result = flat_cotangent(pullback((None, seeds))[0], sizes, np.shape(value_of(seeds))[:-1])
        return result if isinstance(seeds, Tensor) else value_of(result)
    return (value, gradient), product


def flat_cotangent(tree: Any, sizes: list, batch_shape: tuple) -> Any:
    """A cotangent of a point (a tree whose leaves have ``sizes`` elements after ``batch_shape``),
    its leaves raveled and concatenated: ``batch_shape + (n,)``."""
    return anp.concatenate([anp.reshape(p, batch_shape + (size,)) for p, size in zip(flatten(tree)[0], sizes)],
                           axis=-1)


def _value_and_flat_gradient(f: Callable) -> Callable:
    """x -> (f(x), the gradient raveled and concatenated in ``flatten`` order), on the tape."""
    value_and_grad_f = _value_and_grad(f, 0, what="hessian_operator")

    def value_and_flat_gradient(x: Any) -> tuple:
        value, gradient = value_and_grad_f(x)
        flat = [anp.ravel(g) for g in flatten(gradient)[0]]
        return value, flat[0] if len(flat) == 1 else anp.concatenate(flat)
    return value_and_flat_gradient


_CURRIED = object()   # hvp(f) without x and v: the curried form


def hvp(f: Callable, x: Any = _CURRIED, v: Any = _CURRIED) -> Any:
    """H(x) @ v for a scalar f, shaped like x; ``hvp(f)`` is the function ``(x, v) -> H(x) @ v``
    (autograd's ``hessian_vector_product(f)``).

    A pytree x takes a tangent v of its structure and gives H v in it (as ``jax.jvp(jax.grad(f),
    (x,), (v,))[1]``); a flat vector v over ``ravel(x)`` still gives a flat H v, as before.
    One backward sweep over the recorded gradient. Inside an enclosing tape or accumulator, it is
    forward-over-reverse instead, so that the result is a Tensor the enclosing tape differentiates.
    The Hessian is never formed; for many products at one x, ``hessian_operator`` records the
    gradient once.

    Parameters
    ----------
    f : callable
        A scalar-valued function of x.
    x : array_like, Tensor or pytree
        Where to take the Hessian.
    v : array_like or pytree
        The vector: shaped like x, or for a pytree x either x's structure or flat over ``ravel(x)``.

    Returns
    -------
    ndarray, Tensor or pytree
        Shaped like v (a function of ``(x, v)`` when only f is given).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> ad.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    >>> ad.hvp(lambda p: p["a"] ** 2 * p["b"])({"a": 1.0, "b": 3.0}, {"a": 1.0, "b": 0.0})
    {'a': np.float64(6.0), 'b': np.float64(2.0)}
    """
    product = transformed(_hvp, f)
    if x is _CURRIED and v is _CURRIED:
        return product
    if x is _CURRIED or v is _CURRIED:
        raise TypeError("hvp takes f, x and v (H(x) @ v), or f alone (the function (x, v) -> H(x) @ v)")
    return product(x, v)


def _tangent_tree(v: Any, x: Any) -> list | None:
    """The leaves of v in x's leaf order when v is a tangent of x's structure (a pytree x); None when
    v is a flat vector over ``ravel(x)`` (an array, or a list of numbers that is not x's structure)."""
    if not isinstance(x, (list, tuple, dict)) or not isinstance(v, (list, tuple, dict)):
        return None
    try:
        leaves = flatten_like(v, x)
    except ValueError:
        if isinstance(v, dict):
            raise
        return None
    for leaf, primal in zip(leaves, flatten(x)[0]):
        if np.shape(value_of(leaf)) != np.shape(value_of(primal)):
            raise ValueError(f"a tangent of shape {np.shape(value_of(leaf))} for a primal of shape "
                             f"{np.shape(value_of(primal))}")
    return leaves


def _hvp(f: Callable) -> Callable:
    def hvp_f(x: Any, v: Any) -> Any:
        leaves = _tangent_tree(v, x)
        if leaves is not None:   # x's structure in, x's structure out
            flat_v = anp.concatenate([anp.ravel(leaf) for leaf in leaves]) if _has_tensors(leaves) else \
                np.concatenate([np.ravel(np.asarray(leaf, dtype=float)) for leaf in leaves])
            hv = ravel(x)[1](hvp_f(x, flat_v))
            return mirror(hv, _has_tensors(x) or _has_tensors(leaves))
        tree = isinstance(x, (list, tuple, dict))
        # Inside an enclosing tape or accumulator, f may depend on what it tracks through x or
        # through a closure (hvp of y -> a * g(y) at a plain y, differentiated in a): forward over
        # reverse keeps that dependence; the cached product's sweep runs paused.
        if _recording() and tree:
            flat, unravel = _ravel_mirrored(x)
            return _hvp(lambda z: f(unravel(z)))(flat, v)
        if _recording():
            return _jvp(_grad(f, 0))((x,), (v,))[1]
        (_, gradient), product = cached_hvp(f, x)
        n = np.size(value_of(gradient))
        if np.size(value_of(v)) != n:
            raise ValueError(f"vector of length {np.size(value_of(v))} for a Hessian of shape {(n, n)}")
        v = v if isinstance(v, Tensor) else np.asarray(v, dtype=value_of(gradient).dtype)
        hv = product(anp.reshape(v, (n,)))
        hv = hv if tree else anp.reshape(hv, np.shape(value_of(x)))
        tensors_in = _has_tensors(x) or isinstance(v, Tensor)
        return hv if isinstance(hv, Tensor) or not tensors_in else constant(hv)
    return hvp_f


def jvp(f: Callable, primals: Sequence, tangents: Sequence, has_aux: bool = False) -> tuple:
    """``(f(*primals), J @ tangents)`` in forward mode; ``tangents`` mirrors ``primals``, whose
    entries may be pytrees (as in ``jax.jvp``: a dict tangent in, a dict out). With ``has_aux``, f
    returns ``(output, aux)`` and the result is ``(output, J @ tangents, aux)``.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> value, tangent = ad.jvp(np.sin, (np.array([0.0, np.pi]),), (np.array([2.0, 1.0]),))
    >>> tangent                              # cos(x) * t
    array([ 2., -1.])
    >>> ad.jvp(lambda p: p["a"] * p["b"], ({"a": 2.0, "b": 3.0},), ({"a": 1.0, "b": 0.0},))[1]
    np.float64(3.0)
    """
    return transformed(_jvp, f, has_aux)(tuple(primals), tuple(tangents))


def _jvp(f: Callable, has_aux: bool = False) -> Callable:
    def jvp_f(primals: tuple, tangents: tuple) -> tuple:
        tangent_leaves = flatten_like(tangents, primals)
        watched, _, tensors_in = _watched_args(primals, tuple(range(len(primals))))
        output, auxes = _output_and_aux(f, "jvp") if has_aux else (f, None)
        with ForwardAccumulator(flatten(watched)[0], tangent_leaves) as accumulator:
            y = require_tensors(output(*watched), "jvp")
        result = (y, accumulator.jvp(y, unconnected_gradients=ZERO)) + ((auxes[0],) if has_aux else ())
        return mirror(result, tensors_in)
    return jvp_f


def vjp(f: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(f(*primals), vjp_fn)`` with ``vjp_fn(cotangent)`` the tuple of input cotangents, each in the
    structure of its primal (primals may be pytrees; the cotangent mirrors f's output). With
    ``has_aux``, f returns ``(output, aux)`` and the result is ``(output, vjp_fn, aux)`` (as JAX).

    f is recorded once; each ``vjp_fn`` call is one backward sweep (as ``jax.vjp``). A cotangent
    with leading batch axes (the same on every leaf) gives the VJPs of all of them in one batched
    sweep; a None leaf is a zero cotangent (that output is not swept).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> y, vjp_fn = ad.vjp(lambda x: x ** 2, np.array([1.0, 2.0]))
    >>> y, vjp_fn(np.array([1.0, 10.0]))       # cotangent times 2 x
    (array([1., 4.]), (array([ 2., 40.]),))
    >>> vjp_fn(np.eye(2))[0]                   # two cotangents, one sweep: the Jacobian's rows
    array([[2., 0.],
           [0., 4.]])
    """
    if has_aux:
        (y, aux), vjp_fn = partially_evaluated(_vjp_with_aux, f, primals, lambda value: (zeros_like_tree(value[0]),))
        return y, vjp_fn, aux
    return partially_evaluated(recorded_vjp, f, primals, lambda y: (zeros_like_tree(y),))


def _vjp_with_aux(f: Callable, *primals: Any) -> tuple:
    """``((f's output, aux), vjp_fn)`` for f returning ``(output, aux)``."""
    output, auxes = _output_and_aux(f, "vjp")
    y, vjp_fn = recorded_vjp(output, *primals)
    return (y, mirror(auxes[0], _has_tensors(primals))), vjp_fn


def recorded_vjp(f: Callable, *primals: Any) -> tuple:
    """``(f(*primals), vjp_fn)`` from one recording, without ``vjp``'s partial evaluation."""
    watched, _, tensors_in = _watched_args(primals, tuple(range(len(primals))))
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch(watched)
        y = require_tensors(f(*watched), "vjp")
    targets, sources = flatten(y)[0], flatten(watched)[0]
    rebuild = flatten(tuple(watched))[1]

    def vjp_fn(cotangent: Any) -> tuple:
        pairs = [(t, c) for t, c in zip(targets, flatten_like(cotangent, y)) if c is not None]
        batch_shape = _batch_shape(pairs)
        grads = tape.sweep([t for t, _ in pairs], [c for _, c in pairs], sources, batch_shape)
        cotangents = rebuild([source_gradient(g, s, ZERO, batch_shape) for g, s in zip(grads, sources)])
        return mirror(cotangents, tensors_in or _has_tensors(cotangent))
    return mirror(y, tensors_in), vjp_fn


def _batch_shape(pairs: list) -> tuple:
    """The leading axes of the cotangents beyond their targets' shapes (from the first one)."""
    if not pairs:
        return ()
    target, cotangent = pairs[0]
    shape = np.shape(value_of(cotangent))
    return tuple(shape[:max(len(shape) - target.ndim, 0)])


def zeros_like_tree(tree: Any) -> Any:
    """Zeros in the structure, shapes and dtypes of ``tree``'s leaves."""
    return flatten(tree)[1]([np.zeros(np.shape(value_of(leaf)), value_of(leaf).dtype)
                             for leaf in flatten(tree)[0]])


def linearize(f: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(f(*primals), f_jvp)`` with ``f_jvp(*tangents)`` = J @ tangents, as ``jax.linearize``
    (with ``has_aux``, f returns ``(output, aux)`` and the result is ``(output, f_jvp, aux)``).

    f is recorded once, and so is its VJP u -> J^T u (linear in u); each ``f_jvp`` call is one
    backward sweep over that recording, its transpose (Schraudolph 2002's J v by two VJPs), with
    no new evaluation of f. Tangents mirror the primals; with leading batch axes (the same on
    every leaf), one batched sweep gives the products with all of them. The linearization of a
    gradient is the cached Hessian-vector product: ``linearize(grad(f), x)`` gives the gradient
    and v -> H v.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> y, f_jvp = ad.linearize(np.sin, np.array([0.0, np.pi]))
    >>> f_jvp(np.array([2.0, 1.0]))             # cos(x) * t
    array([ 2., -1.])
    >>> g, hvp = ad.linearize(ad.grad(lambda x: np.sum(x ** 3)), np.array([1.0, 2.0]))
    >>> hvp(np.array([1.0, 1.0]))               # 6 x * v
    array([ 6., 12.])
    """
    late = lambda value: tuple(zeros_like_tree(p) for p in primals)  # noqa: E731
    if has_aux:
        (y, aux), f_jvp = partially_evaluated(_linearize_with_aux, f, primals, late)
        return y, f_jvp, aux
    return partially_evaluated(_linearize, f, primals, late)


def _linearize_with_aux(f: Callable, *primals: Any) -> tuple:
    """``((f's output, aux), f_jvp)`` for f returning ``(output, aux)``."""
    output, auxes = _output_and_aux(f, "linearize")
    y, f_jvp = _linearize(output, *primals)
    return (y, mirror(auxes[0], _has_tensors(primals))), f_jvp


def _linearize(f: Callable, *primals) -> tuple:
    y, pullback = recorded_vjp(f, *primals)
    _, push = recorded_vjp(pullback, zeros_like_tree(y))  # the VJP of u -> J^T u, linear in u, is v -> J v

    def f_jvp(*tangents: Any) -> Any:
        return push(tangents)[0]
    return y, f_jvp
