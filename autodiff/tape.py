"""GradientTape with TensorFlow's semantics, and the tape-level tools built on it.

See TensorFlow's guides "Introduction to gradients and automatic differentiation" and "Advanced
automatic differentiation": the behaviours (watching, persistence, stop_recording, reset, nesting,
jacobian, batch_jacobian, custom_gradient, recompute_grad) are reproduced here over NumPy.
"""
from __future__ import annotations

import enum
import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import core
from .core import Primitive, Tensor, Variable, paused, state, sweep
from .numpy import broadcast_to, concatenate, moveaxis, reshape, stack
from .residuals import kept_values, rules_read
from .tree import flatten


class UnconnectedGradients(str, enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on.

    ``NONE`` (the default, as in TensorFlow) gives None, which tells "unconnected" apart from a zero
    gradient; ``ZERO`` gives zeros of the source's shape. The strings ``"none"`` and ``"zero"`` work
    too.

    Examples
    --------
    >>> import autodiff as ad
    >>> x, unused = ad.constant(2.0), ad.constant(1.0)
    >>> with ad.GradientTape() as tape:
    ...     tape.watch([x, unused])
    ...     y = x * x
    >>> tape.gradient(y, [x, unused], unconnected_gradients=ad.UnconnectedGradients.ZERO)
    [Tensor(array(4.)), Tensor(array(0.))]
    """

    NONE = "none"
    ZERO = "zero"


class GradientTape:
    """Records operations on watched tensors so that gradients can be taken afterwards.

    A non-persistent tape answers one ``gradient`` (or ``jacobian``) call; a persistent one answers
    any number. Trainable Variables read inside the context are watched automatically unless
    ``watch_accessed_variables=False``. Tapes nest: an outer tape records the inner tape's gradient
    computation, which gives second and higher derivatives (TensorFlow's semantics throughout).

    Parameters
    ----------
    persistent : bool, default False
        Allow several ``gradient``/``jacobian`` calls (the records are kept until the tape is freed).
    watch_accessed_variables : bool, default True
        Watch trainable Variables as soon as they are read.

    Examples
    --------
    >>> import autodiff as ad
    >>> x = ad.constant(3.0)
    >>> with ad.GradientTape() as outer:
    ...     outer.watch(x)
    ...     with ad.GradientTape() as inner:
    ...         inner.watch(x)
    ...         y = x ** 3
    ...     dy_dx = inner.gradient(y, x)
    >>> dy_dx, outer.gradient(dy_dx, x)
    (Tensor(array(27.)), Tensor(array(18.)))
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._records: list = []
        self._watched: set = set()
        self._variables: dict = {}
        self._used = False

    # --- recording ------------------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self in state.tapes:
            raise ValueError("Tape is still recording: an active GradientTape cannot be re-entered.")
        state.tapes.append(self)
        return self

    def __exit__(self, *exc):
        state.tapes.remove(self)
        return False

    def watch(self, tensor: Any) -> None:
        """Watch a Tensor, a Variable (trainable or not) or a nested structure of them.

        As in TensorFlow, only floating-point tensors can be watched: an integer one is skipped with
        a warning, and its gradient is None.

        Raises
        ------
        ValueError
            If something other than a Tensor is passed (wrap arrays with ``autodiff.constant``).

        Examples
        --------
        >>> import autodiff as ad
        >>> params = {"a": ad.constant(2.0), "b": ad.constant(5.0)}
        >>> with ad.GradientTape() as tape:
        ...     tape.watch(params)
        ...     y = params["a"] * params["b"]
        >>> tape.gradient(y, params)
        {'a': Tensor(array(5.)), 'b': Tensor(array(2.))}
        """
        for item in flatten(tensor)[0]:
            if not isinstance(item, Tensor):
                raise ValueError(f"Passed in object of type {type(item).__name__}, not a Tensor or "
                                 "Variable: only Tensors can be watched (wrap arrays with "
                                 "autodiff.constant).")
            if not self._watch_one(item):
                warnings.warn(f"The dtype of the watched tensor must be floating (e.g. float64), "
                              f"got {item.dtype}: it is not watched.", stacklevel=2)

    def watches(self, tensor: Tensor) -> bool:
        """Whether this tape watches ``tensor`` (a source, or computed from one on this tape)."""
        return tensor._id in self._watched

    @property
    def watches_reads(self) -> bool:
        """Whether trainable Variables are watched as soon as an op reads them
        (``watch_accessed_variables``)."""
        return self._watch_accessed

    def record(self, prim: Primitive, args: tuple, raw: list, kwargs: dict, out: Any, parents: tuple) -> None:
        """Keep an op (``out = prim(*args, **kwargs)``; ``raw`` the values of ``args``, ``parents``
        the positions of its Tensor arguments) if it reads a Tensor this tape watches.

        A tape that watches accessed Variables starts watching every trainable Variable the op
        reads (all of them, not just the first: ``watched_variables`` must list each one). The
        record keeps only the parents this tape watches: its sweeps never compute a cotangent
        that cannot reach one of its sources (an input-gradient tape that watches ``x`` skips the
        kernels of ``x @ W``).
        """
        watched = self._watched
        tracked = parents
        for i in parents:
            a = args[i]
            if not (a._id in watched or (self._watch_accessed and type(a) is Variable and a.trainable
                                         and self._watch_one(a))):
                tracked = tuple(j for j in tracked if j != i)
        if not tracked:
            return
        if not prim.complex_ok:
            core.refuse_complex(prim, raw, out)
        reads = None if prim.joint else rules_read(prim.vjps, tracked)
        if reads is not None:   # keep only what the rules read (autodiff.residuals)
            args, raw, out = kept_values(args, raw, out, reads)
        self._records.append((prim, args, raw, kwargs, out, tracked))
        if type(out) is tuple:
            watched.update(o._id for o in out)
        else:
            watched.add(out._id)

    def _watch_one(self, tensor: Tensor) -> bool:
        """Watch one Tensor; returns False (and does nothing) if it is not floating-point."""
        if tensor.dtype.kind not in "fc":
            return False
        self._watched.add(tensor._id)
        if isinstance(tensor, Variable):
            self._variables.setdefault(tensor._id, tensor)
        return True

    def watched_variables(self) -> tuple:
        """The Variables this tape watches, in the order it first saw them.

        Examples
        --------
        >>> import autodiff as ad
        >>> w, frozen = ad.Variable(1.0, name="w"), ad.Variable(2.0, trainable=False)
        >>> with ad.GradientTape() as tape:
        ...     y = w * frozen
        >>> [v.name for v in tape.watched_variables()]
        ['w']
        """
        return tuple(self._variables.values())

    @property
    def records(self) -> tuple:
        """What the tape recorded, in execution order: ``(primitive, args, raw values, kwargs, output,
        tracked argument positions)`` per op (the format of ``autodiff.jit.trace``'s records).

        Examples
        --------
        >>> import autodiff as ad
        >>> x = ad.constant(3.0)
        >>> with ad.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x + 1.0
        >>> [record[0].name for record in tape.records]
        ['multiply', 'add']
        """
        return tuple(self._records)

    def stop_recording(self) -> paused:
        """Temporarily pause recording on this tape (a context manager).

        Operations inside the block are computed but not recorded, so they carry no gradient.

        Raises
        ------
        RuntimeError
            If the tape is not recording (outside its ``with`` block).

        Examples
        --------
        >>> import autodiff as ad
        >>> x = ad.constant(3.0)
        >>> with ad.GradientTape(persistent=True) as tape:
        ...     tape.watch(x)
        ...     y = x * x
        ...     with tape.stop_recording():
        ...         z = y * x
        >>> tape.gradient(y, x), tape.gradient(z, x)
        (Tensor(array(6.)), None)
        """
        if self not in state.tapes:
            raise RuntimeError("GradientTape.stop_recording() can only be called when the tape is "
                               "recording.")
        return paused(tapes=(self,), accumulators=False)

    def reset(self) -> None:
        """Forget everything recorded and watched, as if the tape had just been entered.

        Examples
        --------
        >>> import autodiff as ad
        >>> x = ad.constant(3.0)
        >>> with ad.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        ...     tape.reset()
        ...     tape.watch(x)
        ...     y = 2 * x
        >>> tape.gradient(y, x)
        Tensor(array(2.))
        """
        self._records, self._watched, self._variables = [], set(), {}
        self._used = False

    # --- differentiation ------------------------------------------------------------------------
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE) -> Any:
        """d(sum of target * output_gradients)/d(sources), in the structure of ``sources``.

        Parameters
        ----------
        target : Tensor or structure of Tensors
            What to differentiate; several targets are summed.
        sources : Tensor or structure (list, tuple, dict) of Tensors
            What to differentiate with respect to; the result has this structure.
        output_gradients : array_like or structure, optional
            One cotangent per target (default: ones), which gives vector-Jacobian products.
        unconnected_gradients : UnconnectedGradients or {"none", "zero"}, default NONE
            What a source the target does not depend on gets: None or zeros.

        Returns
        -------
        Tensor, None, or a structure of them, mirroring ``sources``.

        Raises
        ------
        RuntimeError
            On a second call to a non-persistent tape.

        Examples
        --------
        >>> import numpy as np
        >>> import autodiff as ad
        >>> x = ad.constant([1.0, 2.0])
        >>> with ad.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x ** 2
        >>> tape.gradient(y, x, output_gradients=np.array([1.0, 10.0]))
        Tensor(array([ 2., 40.]))
        """
        unconnected = as_unconnected(unconnected_gradients)
        targets = flatten(target)[0]
        if output_gradients is None:
            seeds = [None] * len(targets)
        else:
            seeds = flatten(output_gradients)[0]
            if len(seeds) != len(targets):
                raise ValueError(f"output_gradients has {len(seeds)} entries for {len(targets)} "
                                 "targets")
        source_list, rebuild = _sources(sources)
        self._check_usable()
        grads = self.sweep(targets, seeds, source_list, batch_shape=())
        self._consume()
        return rebuild([source_gradient(g, s, unconnected, ()) for g, s in zip(grads, source_list)])

    def jacobian(self, target: Any, sources: Any,
                 unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE,
                 parallel_iterations: int | None = None, experimental_use_pfor: bool = True,
                 chunk_size: int | None = None) -> Any:
        """d target / d source for each source, shape ``target.shape + source.shape``.

        One batched sweep with the rows of the identity as cotangents (in chunks of ``chunk_size``
        rows to bound memory), instead of one sweep per element of the target. A structure of
        targets (list, tuple, dict) gives that structure of Jacobians, each in the structure of
        ``sources`` (as JAX's ``jacobian`` of a function with structured outputs).
        ``parallel_iterations`` and ``experimental_use_pfor`` are accepted for TensorFlow
        compatibility; the sweep is always vectorized.

        Examples
        --------
        >>> import autodiff as ad
        >>> x = ad.constant([1.0, 2.0])
        >>> with ad.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x ** 2
        >>> tape.jacobian(y, x)
        Tensor(array([[2., 0.],
                      [0., 4.]]))
        """
        unconnected = as_unconnected(unconnected_gradients)
        targets, rebuild_targets = flatten(target)
        source_list, rebuild = _sources(sources)
        self._check_usable()
        jacobians = [rebuild(self._jacobian(t, source_list, unconnected, chunk_size)) for t in targets]
        self._consume()
        return rebuild_targets(jacobians)

    def _jacobian(self, target, source_list, unconnected, chunk_size):
        """The Jacobians of one target with respect to each of ``source_list``."""
        target_shape = tuple(np.shape(core.value_of(target)))
        if not target_shape:  # a scalar's Jacobian is its gradient: no batch axis needed
            grads = self.sweep([target], [None], source_list, batch_shape=())
            return [source_gradient(g, s, unconnected, ()) for g, s in zip(grads, source_list)]
        size = int(np.prod(target_shape))
        eye = np.eye(size, dtype=_dtype(target)).reshape((size,) + target_shape)
        step = chunk_size or max(size, 1)
        chunks = [self.sweep([target], [eye[i:i + step]], source_list, (len(eye[i:i + step]),))
                  for i in range(0, size, step)]
        results = []
        for k, source in enumerate(source_list):
            parts = [chunk[k] for chunk in chunks]
            if not parts:  # an empty target: its Jacobian is empty, not unconnected
                results.append(source_gradient(None, source, UnconnectedGradients.ZERO, target_shape))
                continue
            if parts[0] is None:
                results.append(source_gradient(None, source, unconnected, target_shape))
                continue
            stacked = parts[0] if len(parts) == 1 else concatenate(parts, axis=0)
            results.append(source_gradient(reshape(stacked, target_shape + source.shape), source,
                                   unconnected, ()))
        return results

    def batch_jacobian(self, target: Tensor, source: Tensor,
                       unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE,
                       parallel_iterations: int | None = None, experimental_use_pfor: bool = True) -> Tensor | None:
        """Per-example Jacobians, shape ``(batch,) + target.shape[1:] + source.shape[1:]``.

        Assumes example b of the target depends only on example b of the source: the sweep seeds
        every example at once, so entry [b] is really the sum over b' of d target[b'] / d source[b].
        With batch-coupled layers (e.g. BatchNorm in training mode) that sum is not a per-example
        Jacobian; use ``jacobian`` there.

        Raises
        ------
        ValueError
            If target and source do not share their leading (batch) dimension.

        Examples
        --------
        >>> import autodiff as ad
        >>> x = ad.constant([[1.0, 2.0], [3.0, 4.0]])        # 2 examples of 2 features
        >>> with ad.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x[:, :1] * x                             # each example's output: 2 values
        >>> tape.batch_jacobian(y, x).numpy().tolist()       # example 0, then example 1
        [[[2.0, 0.0], [2.0, 1.0]], [[6.0, 0.0], [4.0, 3.0]]]
        """
        unconnected = as_unconnected(unconnected_gradients)
        target_shape = tuple(np.shape(core.value_of(target)))
        if not target_shape or target_shape[0] != np.shape(core.value_of(source))[0]:
            raise ValueError(f"batch_jacobian needs target and source with the same leading batch "
                             f"dimension, got {target_shape} and {np.shape(core.value_of(source))}")
        batch, inner = target_shape[0], target_shape[1:]
        size = int(np.prod(inner))
        eye = np.eye(size, dtype=_dtype(target)).reshape((size, 1) + inner)
        seed = np.broadcast_to(eye, (size,) + target_shape)
        self._check_usable()
        (g,) = self.sweep([target], [seed], [source], (size,))
        self._consume()
        source_inner = np.shape(core.value_of(source))[1:]
        if g is None:
            if unconnected is UnconnectedGradients.NONE:
                return None
            return core.constant(np.zeros((batch,) + inner + source_inner, _dtype(source)))
        return _as_tensor(reshape(moveaxis(g, 0, 1), (batch,) + inner + source_inner))

    def _check_usable(self):
        if self._used:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                               "of gradients (or jacobians); use GradientTape(persistent=True).")

    def _consume(self):
        """A non-persistent tape answers once; its records are freed once it stops recording."""
        if not self._persistent:
            self._used = True
            if self not in state.tapes:
                self._records = []

    def sweep(self, targets: list, seeds: list, sources: list, batch_shape: tuple) -> list:
        """The raw reverse sweep over this tape's records: one cotangent (None if unconnected) per
        source.

        ``seeds`` has one cotangent per target (None: ones), each of shape ``batch_shape +
        target.shape``. The cotangents are Tensors when a tape or accumulator is active (so it
        records the sweep), arrays otherwise. Unlike ``gradient``, it neither checks nor uses up a
        non-persistent tape.

        With observers (traces) and nothing recording, the sweep runs on Tensors for them to see,
        and they are told that eager code would run it on raw arrays (``raw_sweep``).
        """
        use_tensors = bool(state.tapes or state.accumulators)
        if not use_tensors and state.observers:
            observers = list(state.observers)
            for observer in observers:
                observer.raw_sweep(True)
            try:
                return self._sweep(targets, seeds, sources, batch_shape, True)
            finally:
                for observer in observers:
                    observer.raw_sweep(False)
        return self._sweep(targets, seeds, sources, batch_shape, use_tensors)

    def _sweep(self, targets: list, seeds: list, sources: list, batch_shape: tuple, use_tensors: bool) -> list:
        initial = {}
        for target, seed in zip(targets, seeds):
            if not isinstance(target, Tensor):
                continue
            if seed is None:
                seed = np.ones(batch_shape + target.shape, target.dtype)
            elif not use_tensors or not isinstance(seed, Tensor):
                seed = np.asarray(core.value_of(seed))  # rules expect arrays, not Python floats
            expected = batch_shape + target.shape
            if seed.shape != expected:
                seed = _broadcast_seed(seed, expected)
            prev = initial.get(target._id)
            initial[target._id] = seed if prev is None else prev + seed
        keep = {s._id for s in sources}
        grads = sweep(self._records, initial, keep, use_tensors)
        return [grads.get(s._id) for s in sources]


def as_unconnected(value: UnconnectedGradients | str) -> UnconnectedGradients:
    """``unconnected_gradients`` as the enum (its strings 'none' and 'zero' too)."""
    return value if value is UnconnectedGradients.NONE else UnconnectedGradients(value)


def _sources(sources):
    source_list, rebuild = flatten(sources)
    for s in source_list:
        if not isinstance(s, Tensor):
            raise TypeError(f"gradient sources must be Tensors or Variables, got "
                            f"{type(s).__name__}; watch a Tensor made with autodiff.constant")
    return source_list, rebuild


def require_tensors(y: Any, what: str) -> Any:
    """``y`` if each of its leaves is a Tensor; a plain value does not depend on the inputs through
    the engine, and differentiating it would answer zeros for a derivative that is not zero."""
    for leaf in flatten(y)[0]:
        if not isinstance(leaf, Tensor):
            raise TypeError(f"autodiff.{what}: the function returned a plain {type(leaf).__name__}, not "
                            "a Tensor: its value does not depend on x, the input being differentiated, "
                            "through the engine (t.numpy(), t.item() or a constant result leave it). "
                            "Compute the result with NumPy operations on the input.")
    return y


def require_scalar(y: Any, what: str) -> Tensor:
    """``y`` if it is a Tensor of one element (see ``require_tensors``): a 0-d one, or one of shape
    (1,), (1, 1), ... (as autograd, TensorFlow and PyTorch take; the gradient of its element)."""
    if not isinstance(require_tensors(y, what), Tensor) or y.size != 1:
        got = f"shape {y.shape}" if isinstance(y, Tensor) else f"a {type(y).__name__}"
        raise TypeError(f"{what} needs a function with a scalar output, got {got} (use jacobian "
                        "for vector outputs)")
    if y.dtype.kind == "c":  # as JAX: the gradient of a complex output is not defined
        raise TypeError(f"{what} needs a real-valued output, got {y.dtype} (differentiate np.real and "
                        "np.imag of it, or use vjp)")
    return y


def _broadcast_seed(seed, shape):
    try:
        return broadcast_to(seed, shape)
    except ValueError:
        raise ValueError(f"output_gradients of shape {np.shape(core.value_of(seed))} does not "
                         f"match the target shape {shape}") from None


def _dtype(x):
    dtype = np.asarray(core.value_of(x)).dtype
    return dtype if dtype.kind in "fc" else np.float64


def _as_tensor(x):
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x))


def source_gradient(g: Any, source: Tensor, unconnected: UnconnectedGradients,
                    batch_shape: tuple) -> Tensor | None:
    """The gradient of one source: a Tensor of its dtype, or None/zeros when unconnected."""
    if g is None:
        if unconnected is UnconnectedGradients.NONE:
            return None
        return core.constant(np.zeros(batch_shape + source.shape, _dtype(source)))
    if not isinstance(g, Tensor):
        g = np.asarray(g)
        if g.dtype != source.dtype and source.dtype.kind == "f":
            g = g.astype(source.dtype)
    return _as_tensor(g)


# --- tape-level tools ------------------------------------------------------------------------------

class CustomNode(Primitive):
    """A record whose backward pass is a user function over all its inputs at once."""

    def __init__(self, name: str, backward: Callable):
        super().__init__(None, name)
        self._backward = backward
        self.joint = True

    def backward(self, g: Any, ans: Any, args: Any, kwargs: dict, parents: tuple) -> list:
        cotangents = self._backward(g, args)
        return cotangents if len(parents) == len(args) else [cotangents[i] for i in parents]


def _record_node(name: str, backward: Callable, inputs: list, variables: list, y):
    """Record ``y`` (a Tensor or a tuple/list of them) as one node over inputs and variables."""
    outputs, rebuild = flatten(y)
    fresh = tuple(Tensor(np.asarray(core.value_of(o))) for o in outputs)
    args = tuple(inputs) + tuple(variables)
    out = fresh if len(fresh) > 1 else fresh[0]
    if state.tapes or state.observers:
        core.record(CustomNode(name, backward), args, [a._value for a in args], {}, out,
                    tuple(range(len(args))))
    return rebuild(list(fresh))


def _wrap_cotangent(g):
    return tuple(_as_tensor(x) for x in g) if type(g) is tuple else _as_tensor(g)


def custom_gradient(f: Callable) -> Callable:
    """Decorator: ``f(*x)`` returns ``(y, grad_fn)``; ``grad_fn(*upstream)`` gives the input gradients.

    When ``f`` reads trainable Variables, ``grad_fn`` is called with ``variables=[...]`` and returns
    ``(input_grads, variable_grads)``. A ``grad_fn`` written with autodiff ops is itself
    differentiable (it is recorded when an outer tape is active during the backward sweep).
    Keyword arguments are passed to ``f``; as in TensorFlow, ``grad_fn`` gives gradients for the
    positional ones only, so a keyword Tensor that a tape or accumulator tracks is refused (a
    Variable that ``f`` reads gets its gradient through ``variables`` wherever it is passed).

    Raises
    ------
    TypeError
        For a tracked keyword Tensor, or inside a ``ForwardAccumulator`` (there is no forward rule).

    Examples
    --------
    Clip the gradient's norm to 1 on the way back (TensorFlow's guide example):

    >>> import numpy as np
    >>> import autodiff as ad
    >>> @ad.custom_gradient
    ... def clip_gradient_norm(x):
    ...     def grad_fn(upstream):
    ...         return upstream / max(1.0, float(np.linalg.norm(upstream.numpy())))
    ...     return x, grad_fn
    >>> x = ad.constant([3.0, 4.0])
    >>> with ad.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = np.sum(10 * clip_gradient_norm(x))
    >>> tape.gradient(y, x)
    Tensor(array([0.70710678, 0.70710678]))
    """

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        tracked_keywords = [name for name, value in kwargs.items() if isinstance(value, Tensor)
                            and not isinstance(value, Variable) and core.tracked(value)]
        if tracked_keywords:
            raise TypeError(f"autodiff: custom_gradient function {f.__name__} got the tracked Tensor "
                            f"keyword argument(s) {tracked_keywords}, which its grad_fn cannot give "
                            "gradients for (it answers for positional arguments): pass them "
                            "positionally")
        if any(accumulator.watches(args + tuple(kwargs.values())) for accumulator in state.accumulators):
            raise TypeError(f"autodiff: custom_gradient function {f.__name__} has no forward-mode "
                            "rule; it cannot be used inside a ForwardAccumulator")
        # f runs on the active tapes, so that a grad_fn using f's intermediates is differentiable;
        # the scratch tape notes the Variables f reads.
        with GradientTape() as scratch:
            y, grad_fn = f(*args, **kwargs)
        inputs = [a for a in args if isinstance(a, Tensor)]
        input_ids = {a._id for a in inputs}
        variables = [v for v in scratch.watched_variables() if v._id not in input_ids]

        def backward_one(upstream, values):
            if variables:
                input_grads, variable_grads = grad_fn(*upstream, variables=variables)
            else:
                input_grads, variable_grads = grad_fn(*upstream), []
            input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            tensor_grads = [gi for a, gi in zip(args, input_grads) if isinstance(a, Tensor)] \
                if len(input_grads) == len(args) else input_grads
            return [_unwrap_if_raw(gi, values) for gi in tensor_grads + list(variable_grads)]

        first_output = flatten(y)[0][0]

        def backward(g, values):
            upstream = _wrap_cotangent(g)
            upstream = upstream if type(upstream) is tuple else (upstream,)
            batch_shape = _batch_shape(upstream[0], first_output)
            if not batch_shape:
                return backward_one(upstream, values)
            # grad_fn is written for one cotangent (it may clip its norm, say): a batched sweep
            # (jacobian, hessian) calls it once per batch element
            rows = [backward_one(tuple(u[index] for u in upstream), values)
                    for index in np.ndindex(batch_shape)]
            return [None if column[0] is None else
                    reshape(stack(column), batch_shape + np.shape(core.value_of(column[0])))
                    for column in zip(*rows)]

        return _record_node(f.__name__, backward, inputs, variables, y)

    return wrapper


def _batch_shape(cotangent, output) -> tuple:
    """The leading batch axes of a cotangent of ``output`` (empty for an unbatched sweep)."""
    shape = np.shape(core.value_of(cotangent))
    return shape[:len(shape) - np.ndim(core.value_of(output))]


def _unwrap_if_raw(g, values):
    """Raw sweeps expect raw cotangents back."""
    if values and not isinstance(values[0], Tensor):
        return core.value_of(g)
    return g


def recompute_grad(f: Callable) -> Callable:
    """Gradient checkpointing: keep only f's inputs on the tape and re-run f in the backward pass.

    Memory for f's intermediates is traded for a second forward pass (Chen et al. 2016, "Training
    deep nets with sublinear memory cost"). Tensors passed by keyword are inputs too, and get their
    gradients like positional ones.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> block = ad.recompute_grad(lambda x: np.tanh(x) ** 2)
    >>> x = ad.constant(0.5)
    >>> with ad.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = block(x)
    >>> round(tape.gradient(y, x).item(), 6)      # 2 tanh(x) (1 - tanh(x)^2)
    0.726862
    """

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        if state.accumulators:
            # Forward mode runs through f: its tangents come from f's own ops, which the tapes
            # must record too (for reverse-over-forward), so there is nothing to checkpoint.
            return f(*args, **kwargs)
        with paused(accumulators=False), GradientTape() as scratch:  # scratch notes the Variables read
            y = f(*args, **kwargs)
        keywords = [name for name, value in kwargs.items() if isinstance(value, Tensor)]
        inputs = [a for a in args if isinstance(a, Tensor)] + [kwargs[name] for name in keywords]
        input_ids = {a._id for a in inputs}
        variables = [v for v in scratch.watched_variables() if v._id not in input_ids]

        def backward(g, values):
            raw_sweep = values and not isinstance(values[0], Tensor)
            rerun = [core.constant(v) if raw_sweep else v for v in values[:len(inputs)]]
            replaced = iter(rerun)
            call_args = [next(replaced) if isinstance(a, Tensor) else a for a in args]
            call_kwargs = {**kwargs, **{name: next(replaced) for name in keywords}}
            with GradientTape() as tape:
                tape.watch(rerun)
                y2 = f(*call_args, **call_kwargs)
            outputs, seeds = flatten(y2)[0], list(g) if type(g) is tuple else [g]
            grads = tape.sweep(outputs, seeds, rerun + variables,  # batched g: jacobian, hessian
                                _batch_shape(seeds[0], outputs[0]))
            return [_unwrap_if_raw(gi, values) for gi in grads]

        return _record_node(getattr(f, "__name__", "recompute_grad"), backward, inputs, variables, y)

    return wrapper
