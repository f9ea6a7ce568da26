"""Layers whose parameters are ``autodiff.Variable``s: Dense, BatchNorm and Sequential.

Layers are plain callables run inside tapes, the way Keras layers are in TensorFlow's autodiff
guides: a tape that watches accessed Variables records whatever a layer reads. A layer is built
lazily from its first input (its Variables exist from then on) and refuses inputs whose last axis
differs from the one it was built for.

BatchNorm in training mode couples the examples of a batch: each output depends on every input
through the batch mean and variance, so ``tape.batch_jacobian`` (which assumes example b of the
output depends only on example b of the input) returns the column sums of the full Jacobian's
blocks, not per-example Jacobians. Use ``tape.jacobian`` there, or ``training=False``.
"""
from __future__ import annotations

import itertools
import os
import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

import autodiff as ad
import autodiff.numpy as anp

from . import activations

_name_counters: defaultdict = defaultdict(itertools.count)


def _unique_name(kind: str) -> str:
    """Keras-style default names: dense, dense_1, dense_2, ..."""
    base = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()
    k = next(_name_counters[base])
    return base if k == 0 else f"{base}_{k}"


def _shape(x) -> tuple:
    return x.shape if isinstance(x, ad.Tensor) else np.shape(x)


#: Input dtypes a layer keeps (its Variables take them); others become float64.
_KEPT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Layer:
    """The base: a name, lazy building, the Variables, and saving and loading them.

    Subclasses implement ``create(input_dim)`` (make the Variables, in the order they are listed)
    and ``call(x, training)``. Calling a layer builds it from the first input, checks the feature
    axis of later ones, and runs ``call``.

    Parameters
    ----------
    name : str, optional
        Prefix of its Variables' names (default: the class name, Keras style: dense, dense_1, ...).

    Examples
    --------
    A layer with one trainable scale per feature; its weights saved and loaded:

    >>> import os, tempfile
    >>> import numpy as np
    >>> from hessopt import nn
    >>> class Scale(nn.Layer):
    ...     def create(self, input_dim):
    ...         self.scale = self.add_variable("scale", np.full(input_dim, 2.0))
    ...     def call(self, x, training):
    ...         return x * self.scale
    >>> layer = Scale(name="scale")
    >>> layer(np.array([[1.0, 3.0]]))
    Tensor(array([[2., 6.]]))
    >>> path = os.path.join(tempfile.mkdtemp(), "weights.npz")
    >>> layer.save_weights(path)
    >>> _ = layer.scale.assign([0.0, 0.0])
    >>> layer.load_weights(path)
    >>> layer.scale
    Variable(array([2., 2.]), name='scale/scale', trainable=True)
    """

    def __init__(self, name: str | None = None):
        self.name = name or _unique_name(type(self).__name__)
        self.input_dim: int | None = None
        self.dtype = np.dtype(np.float64)   # float32 when built from float32 inputs (their precision is kept)
        self._variables: list[ad.Variable] = []

    @property
    def built(self) -> bool:
        """Whether the Variables exist (after the first call or ``build``)."""
        return self.input_dim is not None

    def __call__(self, x, training: bool = False):
        if not isinstance(x, ad.Tensor):
            x = np.asarray(x)
            x = x if x.dtype in _KEPT_DTYPES else x.astype(np.float64)
        shape = _shape(x)
        if len(shape) < 1:
            raise ValueError(f"layer {self.name!r} needs inputs with a feature axis, got a scalar")
        if not self.built:
            dtype = ad.core.dtype_of(x)
            self.dtype = dtype if dtype in _KEPT_DTYPES else np.dtype(np.float64)
            self.build(shape)
        elif shape[-1] != self.input_dim:
            raise ValueError(f"layer {self.name!r} was built for inputs whose last axis has size "
                             f"{self.input_dim}, got an input of shape {shape}")
        return self.call(x, training)

    def build(self, input_shape: Sequence[int]) -> None:
        """Make the Variables for inputs of ``input_shape`` (only its last axis matters)."""
        if not self.built:
            self.create(int(input_shape[-1]))
            self.input_dim = int(input_shape[-1])

    def create(self, input_dim: int) -> None:
        """Make the layer's Variables (with ``add_variable``) for inputs with ``input_dim`` features."""
        raise NotImplementedError

    def call(self, x, training: bool):
        """The layer's computation on x (built, feature axis checked); ``training`` selects the mode."""
        raise NotImplementedError

    def add_variable(self, role: str, value: np.ndarray, trainable: bool = True) -> ad.Variable:
        """A new Variable named ``"<layer name>/<role>"``, listed in ``variables`` in creation order."""
        variable = ad.Variable(np.asarray(value, dtype=self.dtype), trainable=trainable, name=f"{self.name}/{role}")
        self._variables.append(variable)
        return variable

    @property
    def variables(self) -> list[ad.Variable]:
        """Every Variable, trainable or not, in creation order (layers in order)."""
        return list(self._variables)

    @property
    def trainable_variables(self) -> list[ad.Variable]:
        """The trainable Variables (what an optimizer updates), in ``variables`` order."""
        return [v for v in self.variables if v.trainable]

    @property
    def non_trainable_variables(self) -> list[ad.Variable]:
        """The Variables no tape watches on its own (BatchNorm's moving statistics)."""
        return [v for v in self.variables if not v.trainable]

    def save_weights(self, path: str | os.PathLike) -> None:
        """Write every Variable's value to an ``.npz`` file (the suffix is added if missing)."""
        variables = self._built_variables("save_weights")
        np.savez(_npz(path), **{f"{k:04d}:{v.name}": v.numpy() for k, v in enumerate(variables)})

    def load_weights(self, path: str | os.PathLike) -> None:
        """Read values written by ``save_weights`` into the Variables, matched by position.

        Every count and shape is checked before anything is assigned, so a file that does not fit
        leaves the model unchanged.
        """
        variables = self._built_variables("load_weights")
        with np.load(_npz(path)) as stored:
            keys = sorted(stored.files)
            if len(keys) != len(variables):
                raise ValueError(f"load_weights: {os.fspath(path)!r} holds {len(keys)} arrays but "
                                 f"{self.name!r} has {len(variables)} variables")
            values = [stored[key] for key in keys]
        for key, value, variable in zip(keys, values, variables):
            if value.shape != variable.shape:
                raise ValueError(f"load_weights: {key.split(':', 1)[-1]!r} in the file has shape "
                                 f"{value.shape} but {variable.name!r} has shape {variable.shape}; "
                                 "nothing was loaded")
        for value, variable in zip(values, variables):
            variable.assign(value)

    def _built_variables(self, what: str) -> list[ad.Variable]:
        if not self.built:
            raise ValueError(f"{what}: {self.name!r} is not built yet (its Variables are created by "
                             "the first call; call the model on an input or use build(input_shape))")
        return self.variables

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


def _npz(path) -> str:
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"


class Dense(Layer):
    """``activation(x @ kernel + bias)`` with kernel (inputs, units) and bias (units,).

    The kernel starts Glorot-uniform (Glorot & Bengio 2010, Keras' default) from ``seed``; the
    bias starts at zero. ``activation`` is a function or a name (see ``activations``).

    Parameters
    ----------
    units : int
        The number of outputs.
    activation : str or callable, optional
        Applied to ``x @ kernel + bias`` (default: none).
    use_bias : bool, default True
        Whether there is a bias.
    seed : int, optional
        Seed of the kernel's initialization.
    name : str, optional
        Prefix of the Variables' names.

    Raises
    ------
    ValueError
        For a non-positive ``units``, an unknown activation name, or (when called) an input whose
        last axis differs from the one the layer was built for.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> layer = nn.Dense(2, activation="tanh", seed=0, name="hidden")
    >>> layer(np.ones((3, 4))).shape
    (3, 2)
    >>> [(v.name, v.shape) for v in layer.trainable_variables]
    [('hidden/kernel', (4, 2)), ('hidden/bias', (2,))]
    """

    def __init__(self, units: int, activation: str | Callable | None = None, use_bias: bool = True,
                 seed: int | None = None, name: str | None = None):
        super().__init__(name)
        if int(units) != units or units < 1:
            raise ValueError(f"Dense needs a positive integer number of units, got {units!r}")
        self.units, self.use_bias, self.seed = int(units), bool(use_bias), seed
        self.activation = activations.get(activation)
        self.kernel: ad.Variable | None = None
        self.bias: ad.Variable | None = None

    def create(self, input_dim: int) -> None:
        """The kernel (Glorot-uniform) and the bias (zeros)."""
        limit = np.sqrt(6.0 / (input_dim + self.units))
        rng = np.random.default_rng(self.seed)
        self.kernel = self.add_variable("kernel", rng.uniform(-limit, limit, (input_dim, self.units)))
        if self.use_bias:
            self.bias = self.add_variable("bias", np.zeros(self.units))

    def call(self, x, training: bool):
        """``activation(x @ kernel + bias)``."""
        y = anp.matmul(x, self.kernel)
        return self.activation(y + self.bias if self.use_bias else y)


class BatchNorm(Layer):
    """Batch normalization over the last axis (Ioffe & Szegedy 2015), Keras' defaults.

    ``training=True`` normalizes with the batch mean and (biased) variance and moves the
    non-trainable ``moving_mean`` and ``moving_variance`` toward them by ``1 - momentum``;
    ``training=False`` normalizes with the moving statistics. ``gamma`` and ``beta`` are trainable.

    Parameters
    ----------
    momentum : float, default 0.99
        How much of the moving statistics each training batch keeps.
    epsilon : float, default 1e-3
        Added to the variance before the square root.
    name : str, optional
        Prefix of the Variables' names.

    Raises
    ------
    ValueError
        For momentum outside [0, 1] or a non-positive epsilon.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> norm = nn.BatchNorm(name="norm")
    >>> norm(np.array([[1.0], [3.0]]), training=True).numpy().round(4)     # (x - 2) / sqrt(1 + 1e-3)
    array([[-0.9995],
           [ 0.9995]])
    >>> norm.moving_mean                      # moved 1% of the way to the batch mean 2
    Variable(array([0.02]), name='norm/moving_mean', trainable=False)
    """

    def __init__(self, momentum: float = 0.99, epsilon: float = 1e-3, name: str | None = None):
        super().__init__(name)
        if not 0 <= momentum <= 1 or epsilon <= 0:
            raise ValueError(f"BatchNorm needs 0 <= momentum <= 1 and epsilon > 0, got {momentum}, "
                             f"{epsilon}")
        self.momentum, self.epsilon = float(momentum), float(epsilon)

    def create(self, input_dim: int) -> None:
        """gamma (ones), beta (zeros), and the moving mean (zeros) and variance (ones)."""
        self.gamma = self.add_variable("gamma", np.ones(input_dim))
        self.beta = self.add_variable("beta", np.zeros(input_dim))
        self.moving_mean = self.add_variable("moving_mean", np.zeros(input_dim), trainable=False)
        self.moving_variance = self.add_variable("moving_variance", np.ones(input_dim), trainable=False)

    def call(self, x, training: bool):
        """Normalize with the batch statistics (training, updating the moving ones) or the moving ones."""
        if training:
            axes = tuple(range(len(_shape(x)) - 1))
            mean, variance = anp.mean(x, axis=axes), anp.var(x, axis=axes)
            keep = self.momentum
            self.moving_mean.assign(keep * self.moving_mean.numpy() + (1 - keep) * _value(mean))
            self.moving_variance.assign(keep * self.moving_variance.numpy()
                                        + (1 - keep) * _value(variance))
        else:
            mean, variance = self.moving_mean, self.moving_variance
        return (x - mean) / anp.sqrt(variance + self.epsilon) * self.gamma + self.beta


def _value(x) -> np.ndarray:
    """The value of a statistic, explicitly out of the engine (moving averages carry no gradient)."""
    return x.numpy() if isinstance(x, ad.Tensor) else np.asarray(x)


class Sequential(Layer):
    """Layers (or plain functions such as activations) applied in order.

    ``training`` is passed to every layer; ``variables`` and ``trainable_variables`` list each
    layer's in order (a Dense layer's kernel before its bias).

    Parameters
    ----------
    layers : sequence of Layer or callable
        Applied first to last.
    name : str, optional
        The model's name.

    Raises
    ------
    TypeError
        If an entry is not callable.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from hessopt import nn
    >>> model = nn.Sequential([nn.Dense(8, "tanh", seed=0, name="hidden"), nn.Dense(1, seed=1, name="out")])
    >>> x, y = np.array([[0.5, -1.0], [1.0, 2.0]]), np.zeros((2, 1))
    >>> with ad.GradientTape() as tape:
    ...     loss = nn.losses.mean_squared_error(y, model(x))
    >>> gradients = tape.gradient(loss, model.trainable_variables)
    >>> [(v.name, g.shape) for v, g in zip(model.trainable_variables, gradients)]
    [('hidden/kernel', (2, 8)), ('hidden/bias', (8,)), ('out/kernel', (8, 1)), ('out/bias', (1,))]
    """

    def __init__(self, layers: Sequence[Layer | Callable] = (), name: str | None = None):
        super().__init__(name)
        self.layers = list(layers)
        for layer in self.layers:
            if not callable(layer):
                raise TypeError(f"Sequential takes layers or functions, got {type(layer).__name__}")

    def create(self, input_dim: int) -> None:
        """Build every layer by running them once on a zero input (inference mode)."""
        self.call(np.zeros((1, input_dim), dtype=self.dtype), training=False)

    def call(self, x, training: bool):
        """Each layer (or function) on the previous one's output."""
        for layer in self.layers:
            x = layer(x, training=training) if isinstance(layer, Layer) else layer(x)
        return x

    @property
    def variables(self) -> list[ad.Variable]:
        """Every layer's Variables, layers in order."""
        return [v for layer in self.layers if isinstance(layer, Layer) for v in layer.variables]
