"""The functional layer: grad, value_and_grad, jacobian, hessian, hvp, jvp, vjp.

Outputs mirror inputs: NumPy arrays in, NumPy arrays out; Tensors in (inside an enclosing tape),
Tensors out, so the transforms nest (``grad(grad(f))``, ``hessian(f)`` = ``jacobian(jacobian(f))``).
Jacobians and Hessians are one batched sweep each, not one sweep per row.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import numpy as anp
from .core import Tensor, constant, value_of
from .forward import ForwardAccumulator
from .hessian_operator import hessian_operator
from .tree import flatten, flatten_like, ravel
from .tape import GradientTape, UnconnectedGradients, _require_scalar, _require_tensors

ZERO = UnconnectedGradients.ZERO


def _to_numpy(x):
    """Tensors to NumPy (0-d results as NumPy scalars); structures keep their shape."""
    leaves, rebuild = flatten(x)
    converted = []
    for leaf in leaves:
        value = np.asarray(value_of(leaf)) if isinstance(leaf, Tensor) else leaf
        converted.append(value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value)
    return rebuild(converted)


def _watched_args(args: Sequence, argnums):
    """Replace the differentiated arguments by watched Tensors; report whether Tensors came in."""
    single = isinstance(argnums, int)
    numbers = (argnums,) if single else tuple(argnums)
    new_args = list(args)
    tensors_in = False
    sources = []
    for k in numbers:
        leaves, rebuild = flatten(args[k])
        tensors_in = tensors_in or any(isinstance(leaf, Tensor) for leaf in leaves)
        tensors = [leaf if isinstance(leaf, Tensor) else constant(leaf) for leaf in leaves]
        new_args[k] = rebuild(tensors)
        sources.append(new_args[k])
    return new_args, (sources[0] if single else tuple(sources)), tensors_in


def _mirror(result, tensors_in: bool):
    return result if tensors_in else _to_numpy(result)


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """A function returning ``(f(*args), gradient of f w.r.t. args[argnums])``.

    One forward and one backward pass give both, as ``jax.value_and_grad``.

    Parameters
    ----------
    f : callable
        A scalar-valued function of arrays (or pytrees of arrays).
    argnums : int or sequence of int, default 0
        Which positional argument(s) to differentiate; a sequence gives a tuple of gradients.

    Returns
    -------
    callable
        Takes f's arguments; arrays in, arrays out (Tensors in, inside a tape, Tensors out).

    Raises
    ------
    TypeError
        When called, if f does not return a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> value, gradient = ad.value_and_grad(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    >>> float(value), gradient
    (9.0, array([ 3., 12.]))
    """
    def value_and_grad_f(*args, **kwargs):
        new_args, sources, tensors_in = _watched_args(args, argnums)
        with GradientTape() as tape:
            tape.watch(sources)
            y = _require_scalar(f(*new_args, **kwargs), "grad")
        g = tape.gradient(y, sources, unconnected_gradients=ZERO)
        return _mirror(y, tensors_in), _mirror(g, tensors_in)
    return value_and_grad_f


def grad(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The gradient of a scalar function, as a function (nestable: ``grad(grad(f))``).

    Parameters
    ----------
    f : callable
        A scalar-valued function of arrays (or pytrees of arrays, as in JAX).
    argnums : int or sequence of int, default 0
        Which positional argument(s) to differentiate; a sequence gives a tuple of gradients.

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
    """
    value_and_grad_f = value_and_grad(f, argnums)
    return lambda *args, **kwargs: value_and_grad_f(*args, **kwargs)[1]


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, chunk_size: int | None = None) -> Callable:
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
    def jacobian_f(*args, **kwargs):
        new_args, sources, tensors_in = _watched_args(args, argnums)
        with GradientTape() as tape:
            tape.watch(sources)
            y = _require_tensors(f(*new_args, **kwargs), "jacobian")
        return _mirror(tape.jacobian(y, sources, unconnected_gradients=ZERO, chunk_size=chunk_size),
                       tensors_in)
    return jacobian_f


def hessian(f: Callable, argnums: int = 0, chunk_size: int | None = None) -> Callable:
    """The Hessian of a scalar function: the Jacobian of its gradient, in one batched sweep.

    An array argument of shape s gives shape ``s + s``; a pytree argument gives one flat (n, n)
    matrix over ``ravel(arg)``. For products with a few vectors, ``hvp`` or ``hessian_operator``
    avoid forming the matrix.

    Parameters
    ----------
    f : callable
        A scalar-valued function.
    argnums : int, default 0
        Which positional argument to differentiate.
    chunk_size : int, optional
        How many rows each sweep computes (default: all).

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
    def hessian_f(*args, **kwargs):
        if isinstance(args[argnums], (list, tuple, dict)):
            flat, unravel = _ravel_mirrored(args[argnums])
            return hessian(lambda v: f(*_insert(args, argnums, unravel(v)), **kwargs), 0, chunk_size)(flat)
        return jacobian(jacobian(f, argnums), argnums, chunk_size)(*args, **kwargs)
    return hessian_f


def _has_tensors(tree) -> bool:
    return any(isinstance(leaf, Tensor) for leaf in flatten(tree)[0])


def _ravel_mirrored(tree):
    """``ravel(tree)``, but with Tensor leaves the flat vector is a Tensor on the active tapes."""
    flat, unravel = ravel(tree)
    if _has_tensors(tree):
        flat = anp.concatenate([anp.astype(anp.ravel(leaf), float) for leaf in flatten(tree)[0]])
    return flat, unravel


def _insert(args, k, value):
    args = list(args)
    args[k] = value
    return args


def hvp(f: Callable, x, v):
    """H(x) @ v for a scalar f, shaped like x (a flat vector for a pytree x, as ``hessian``).

    Arrays in: one backward sweep over the recorded gradient. Tensors in (inside an enclosing
    tape): forward-over-reverse, so the result is a Tensor the enclosing tape differentiates.
    The Hessian is never formed; for many products at one x, ``hessian_operator`` records the
    gradient once.

    Parameters
    ----------
    f : callable
        A scalar-valued function of x.
    x : array_like, Tensor or pytree
        Where to take the Hessian.
    v : array_like
        The vector, shaped like x (flat, for a pytree x).

    Returns
    -------
    ndarray or Tensor

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> ad.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    if isinstance(x, Tensor):
        return jvp(grad(f), (x,), (v,))[1]
    if isinstance(x, (list, tuple, dict)) and _has_tensors(x):
        flat, unravel = _ravel_mirrored(x)
        return hvp(lambda z: f(unravel(z)), flat, v)
    hv = hessian_operator(f, x).matvec(v)
    return hv if isinstance(x, (list, tuple, dict)) else np.reshape(hv, np.shape(x))


def jvp(f: Callable, primals: Sequence, tangents: Sequence):
    """``(f(*primals), J @ tangents)`` in forward mode; ``tangents`` mirrors ``primals``, whose
    entries may be pytrees (as in ``jax.jvp``).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> value, tangent = ad.jvp(np.sin, (np.array([0.0, np.pi]),), (np.array([2.0, 1.0]),))
    >>> tangent                              # cos(x) * t
    array([ 2., -1.])
    """
    primals = tuple(primals)
    tangent_leaves = flatten_like(tuple(tangents), primals)
    watched, _, tensors_in = _watched_args(primals, tuple(range(len(primals))))
    with ForwardAccumulator(flatten(watched)[0], tangent_leaves) as accumulator:
        y = _require_tensors(f(*watched), "jvp")
    return _mirror(y, tensors_in), _mirror(accumulator.jvp(y, unconnected_gradients=ZERO), tensors_in)


def vjp(f: Callable, *primals):
    """``(f(*primals), vjp_fn)`` with ``vjp_fn(cotangent)`` the tuple of input cotangents, each in the
    structure of its primal (primals may be pytrees; the cotangent mirrors f's output).

    f is recorded once; each ``vjp_fn`` call is one backward sweep (as ``jax.vjp``).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> y, vjp_fn = ad.vjp(lambda x: x ** 2, np.array([1.0, 2.0]))
    >>> y, vjp_fn(np.array([1.0, 10.0]))       # cotangent times 2 x
    (array([1., 4.]), (array([ 2., 40.]),))
    """
    watched, _, tensors_in = _watched_args(primals, tuple(range(len(primals))))
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch(watched)
        y = _require_tensors(f(*watched), "vjp")

    def vjp_fn(cotangent):
        grads = tape.gradient(y, watched, output_gradients=flatten_like(cotangent, y),
                              unconnected_gradients=ZERO)
        return _mirror(tuple(grads), tensors_in)
    return _mirror(y, tensors_in), vjp_fn
