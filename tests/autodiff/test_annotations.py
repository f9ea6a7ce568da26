"""Type hints: every public function and method of autodiff is annotated, every annotation names a
real type, ``import autodiff`` pays nothing for them, and the NumPy mirrors keep the promise of
``autodiff.typing``'s ``ArrayLike`` and ``Array``: they take the plain values NumPy takes and return
what NumPy returns (a Tensor only when a Tensor comes in).

Public: a function, or a method of a class (``__init__`` included, ``self`` and ``cls`` not), whose
name has no leading underscore, in a module whose path has no part with one, listed by the module's
``__all__`` or, without one, by ``dir()``.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from types import ModuleType

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import autodiff
import autodiff.numpy as anp
from autodiff import Tensor


def _public_modules() -> list[ModuleType]:
    names = ["autodiff"] + [info.name for info in pkgutil.walk_packages(autodiff.__path__, "autodiff.")]
    return [importlib.import_module(name) for name in names
            if not any(part.startswith("_") for part in name.split(".")[1:])]


def _public_functions() -> Iterator[tuple[str, Callable, bool]]:
    """(qualified name, function, whether it is a method) of every public function and method."""
    for module in _public_modules():
        names = getattr(module, "__all__", None) or [name for name in dir(module) if not name.startswith("_")]
        for name in names:
            value = getattr(module, name, None)
            if getattr(value, "__module__", None) != module.__name__:
                continue  # imported from elsewhere: checked where it is defined
            if inspect.isfunction(value):
                yield f"{module.__name__}.{name}", value, False
            elif inspect.isclass(value):
                for attribute, method in vars(value).items():
                    if attribute.startswith("_") and attribute != "__init__":
                        continue
                    method = method.__func__ if isinstance(method, (staticmethod, classmethod)) else method
                    if inspect.isfunction(method):
                        yield f"{module.__name__}.{name}.{attribute}", method, True


def _missing_annotations(function: Callable, is_method: bool) -> list[str]:
    signature = inspect.signature(function)
    missing = [name for name, parameter in signature.parameters.items()
               if parameter.annotation is inspect.Parameter.empty
               and not (is_method and name in ("self", "cls"))]
    if signature.return_annotation is inspect.Signature.empty and function.__name__ != "__init__":
        missing.append("return")
    return missing


def test_the_walk_finds_functions_methods_and_methods_installed_on_tensor():
    found = {name: function for name, function, _ in _public_functions()}
    assert len(found) > 250
    assert found["autodiff.numpy.ops.sum"] is anp.sum is found["autodiff.core.Tensor.sum"]
    assert "autodiff.core.Tensor.reshape" in found and "autodiff.core.Variable.__init__" in found
    assert "autodiff.sparsity.hessian_sparsity" in found and "autodiff.sparsity.SparsityPattern.to_scipy" in found
    assert _missing_annotations(lambda x, *args, **kwargs: x, False) == ["x", "args", "kwargs", "return"]


def test_every_public_function_and_method_is_annotated():
    offenders = [f"{name}: {', '.join(missing)}" for name, function, is_method in _public_functions()
                 if (missing := _missing_annotations(function, is_method))]
    assert not offenders, "not annotated (parameters, or the return):\n" + "\n".join(offenders)


def _annotation_namespace(module_name: str) -> dict:
    """The module's globals, with the names it imports for type checkers only (``if TYPE_CHECKING:``)."""
    module = sys.modules[module_name]
    namespace = dict(vars(module))
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            exec(compile(ast.Module(node.body, type_ignores=[]), module.__file__, "exec"), namespace)
    return namespace


def _resolved_annotations() -> Iterator[tuple[str, Callable, dict | Exception]]:
    """(name, function, its resolved annotations or the error resolving them raised)."""
    namespaces: dict = {}
    for name, function, _ in _public_functions():
        if function.__module__ not in namespaces:
            namespaces[function.__module__] = _annotation_namespace(function.__module__)
        try:
            yield name, function, typing.get_type_hints(function, globalns=namespaces[function.__module__])
        except Exception as error:  # NameError, TypeError, AttributeError: each names the problem
            yield name, function, error


def test_every_annotation_names_a_real_type():
    unresolved = [f"{name}: {type(hints).__name__}: {hints}" for name, _, hints in _resolved_annotations()
                  if isinstance(hints, Exception)]
    assert not unresolved, "annotations that do not resolve:\n" + "\n".join(unresolved)


def test_a_none_default_is_among_the_types_its_annotation_allows():
    """No implicit Optional (PEP 484): ``dtype: DTypeLike = None`` would tell a type checker that None,
    the default, is not a valid argument (numpy.typing.DTypeLike leaves None out)."""
    offenders = []
    for name, function, hints in _resolved_annotations():
        for parameter in inspect.signature(function).parameters.values():
            hint = hints.get(parameter.name, typing.Any) if isinstance(hints, dict) else typing.Any
            if parameter.default is None and hint is not typing.Any and hint is not type(None) \
                    and type(None) not in typing.get_args(hint):
                offenders.append(f"{name}: {parameter.name}")
    assert not offenders, "a None default that the annotation does not allow:\n" + "\n".join(offenders)


def test_the_aliases_resolve_to_numpy_types_and_tensor():
    hints = typing.get_type_hints(anp.sum, globalns=_annotation_namespace("autodiff.numpy.ops"))
    assert Tensor in typing.get_args(hints["a"]) and Tensor in typing.get_args(hints["return"])
    assert {np.ndarray, np.generic} <= set(typing.get_args(hints["return"]))
    assert hints["out"] is type(None)   # out= is refused: None is all it takes


def test_importing_autodiff_does_not_load_numpy_typing():
    """The aliases are imported for type checkers only: annotations cost nothing at import."""
    code = "import sys, autodiff; print('numpy.typing' in sys.modules, 'autodiff.typing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# --- what ArrayLike and Array promise: plain values in, NumPy's results out ---------------------------

V = [1.0, -2.0, 3.0, 0.5]
M = [[4.0, 1.0], [1.0, 3.0]]
U = [[2.0, 1.0], [0.0, 3.0]]
C = [1.0 + 1.0j, -1.0, 2.0j]

# (name in autodiff.numpy, arguments, keyword arguments): each takes Python lists and numbers, as the
# function of that name in NumPy (numpy.linalg, numpy.fft, scipy.linalg, scipy.special) takes them.
PLAIN_CALLS = [
    ("angle", (C,), {}), ("where", ([True, False, True, False], V, 0.0), {}), ("where", ([True, False],), {}),
    ("clip", (V, 0.0, 1.0), {}), ("sum", (M,), {"axis": 0}), ("mean", (M,), {}), ("max", (V,), {}),
    ("min", (V,), {}), ("amax", (M,), {"axis": 1}), ("amin", (M,), {}), ("prod", (V,), {}),
    ("var", (V,), {"ddof": 1}), ("std", (V,), {}), ("cumsum", (M,), {"axis": 1}), ("flip", (V,), {}),
    ("reshape", (V, (2, 2)), {}), ("ravel", (M,), {}), ("squeeze", ([[1.0, 2.0]],), {}),
    ("expand_dims", (V, 0), {}), ("atleast_1d", (V,), {}), ("atleast_1d", (2.0,), {}), ("atleast_2d", (M,), {}),
    ("atleast_3d", (M,), {}), ("atleast_1d", (V, M), {}), ("transpose", (M,), {}), ("swapaxes", (M, 0, 1), {}),
    ("moveaxis", (M, 0, 1), {}), ("broadcast_to", (V, (2, 4)), {}), ("broadcast_to", (V, (4,)), {}),
    ("concatenate", ([V, V],), {}), ("stack", ([V, V],), {}), ("hstack", ([V, V],), {}),
    ("vstack", ([V, V],), {}), ("dstack", ([V, V],), {}), ("array_split", (V, 3), {}), ("tile", (V, 2), {}),
    ("repeat", (V, 2), {}), ("pad", (V, 1), {}), ("take", (V, [0, 2]), {}), ("sort", (V,), {}),
    ("partition", (V, 1), {}), ("diagonal", (M,), {}), ("diag", (V,), {}), ("diag", (M,), {}), ("trace", (M,), {}),
    ("triu", (M,), {}), ("tril", (M,), {}), ("dot", (M, [1.0, 2.0]), {}), ("vdot", (V, V), {}),
    ("inner", (V, V), {}), ("outer", (V, V), {}), ("tensordot", (M, M), {}),
    ("einsum", ("ij,j->i", M, [1.0, 2.0]), {}), ("copy", (V,), {}), ("positive", (V,), {}),
    ("hypot", (V, V), {}), ("exp2", (V,), {}), ("deg2rad", (V,), {}), ("rad2deg", (V,), {}),
    ("radians", (V,), {}), ("degrees", (V,), {}), ("fabs", ([-1, 2],), {}), ("float_power", (V, 2), {}),
    ("sinc", (V,), {}), ("fmax", ([1.0, np.nan], [np.nan, 2.0]), {}), ("fmin", ([1.0, np.nan], [np.nan, 2.0]), {}),
    ("copysign", (V, [-1.0, 1.0, -1.0, 1.0]), {}), ("diff", (V,), {}), ("diff", (V,), {"n": 0}),
    ("diff", (V,), {"prepend": 0.0}), ("trapezoid", (V,), {}), ("average", (V,), {"weights": V}),
    ("nansum", ([1.0, np.nan],), {}), ("nanmean", ([1.0, np.nan],), {}), ("ptp", (V,), {}),
    ("quantile", (V, 0.3), {}), ("percentile", (V, [10.0, 50.0]), {}), ("median", (V,), {}), ("cov", (M,), {}),
    ("corrcoef", (M,), {}), ("roll", (V, 1), {}), ("append", (V, V), {}), ("column_stack", ([V, V],), {}),
    ("flipud", (M,), {}), ("fliplr", (M,), {}), ("rot90", (M,), {}), ("rot90", (M, 0), {}),
    ("select", ([[True, False], [False, True]], [[1.0, 2.0], [3.0, 4.0]]), {}),
    ("nan_to_num", ([np.nan, 1.0],), {}), ("real_if_close", (V,), {}), ("real_if_close", ([1.0 + 1e-20j],), {}),
    ("logaddexp2", (V, V), {}), ("gradient", (V,), {}), ("gradient", (M,), {}), ("linspace", (0.0, 1.0, 5), {}),
    ("kron", (M, M), {}), ("cross", ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]), {}), ("cumprod", (V,), {}),
    ("convolve", (V, [1.0, 2.0]), {}), ("correlate", (V, [1.0, 2.0]), {}), ("polyval", ([1.0, 2.0, 3.0], 2.0), {}),
    ("interp", ([0.5, 1.5], [0.0, 1.0, 2.0], [0.0, 2.0, 3.0]), {}), ("array", (V,), {}), ("asarray", (M,), {}),
    ("linalg.slogdet", (M,), {}), ("linalg.eigh", (M,), {}), ("linalg.eigvalsh", (M,), {}),
    ("linalg.eig", (U,), {}), ("linalg.eigvals", (U,), {}), ("linalg.svd", (M,), {}), ("linalg.svdvals", (M,), {}),
    ("linalg.pinv", (M,), {}), ("linalg.qr", (M,), {}),
    ("linalg.lstsq", ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [1.0, 2.0, 2.0]), {}), ("linalg.norm", (V,), {}),
    ("linalg.norm", (M,), {"ord": 2}), ("linalg.matrix_power", (M, 0), {}), ("linalg.matrix_power", (M, 1), {}),
    ("linalg.matrix_power", (M, -2), {}), ("linalg.multi_dot", ([M, M, M],), {}),
    ("fft.fft", (V,), {}), ("fft.ifft", (V,), {}), ("fft.rfft", (V,), {}), ("fft.irfft", (V,), {}),
    ("fft.fft2", (M,), {}), ("fft.ifft2", (M,), {}), ("fft.rfft2", (M,), {}), ("fft.irfft2", (M,), {}),
    ("fft.fftn", (M,), {}), ("fft.ifftn", (M,), {}), ("fft.rfftn", (M,), {}), ("fft.irfftn", (M,), {}),
    ("fft.fftshift", (V,), {}), ("fft.ifftshift", (V,), {}),
    ("scipy_linalg.block_diag", (M, [1.0]), {}), ("scipy_linalg.cho_factor", (M,), {}),
    ("scipy_linalg.cho_solve", ((U, False), [1.0, 2.0]), {}), ("scipy_linalg.cholesky", (M,), {}),
    ("scipy_linalg.det", (M,), {}), ("scipy_linalg.eigh", (M,), {}), ("scipy_linalg.eigvalsh", (M,), {}),
    ("scipy_linalg.expm", (M,), {}), ("scipy_linalg.expm_frechet", (U, M), {}), ("scipy_linalg.inv", (M,), {}),
    ("scipy_linalg.solve", (M, [1.0, 2.0]), {}), ("scipy_linalg.solve", (M, [1.0, 2.0]), {"assume_a": "pos"}),
    ("scipy_linalg.solve_banded", ((1, 0), [[4.0, 3.0], [1.0, 0.0]], [1.0, 2.0]), {}),
    ("scipy_linalg.solve_continuous_lyapunov", (U, M), {}), ("scipy_linalg.solve_sylvester", (U, U, M), {}),
    ("scipy_linalg.solve_triangular", (U, [1.0, 2.0]), {}), ("scipy_linalg.sqrtm", (M,), {}),
    ("scipy_linalg.svd", (M,), {}), ("scipy_linalg.svdvals", (M,), {}),
    ("special.log_expit", (V,), {}), ("special.polygamma", (1, V), {}),
    ("special.multigammaln", ([3.0, 4.0], 2), {}), ("special.logsumexp", (V,), {}), ("special.softmax", (V,), {}),
    ("special.log_softmax", (V,), {}), ("special.gammasgn", (V,), {}),
    ("split", (V, 2), {}), ("hsplit", (V, 2), {}), ("vsplit", (M, 2), {}), ("dsplit", ([[[1.0, 2.0]]], 2), {}),
    ("rollaxis", (M, 1), {}), ("take_along_axis", (M, [[1], [0]], 1), {}), ("astype", (V, np.float32), {}),
]
# NumPy's own of these refuse a list (np.split([1.0, 2.0], 2) raises): theirs gets arrays.
NUMPY_NEEDS_AN_ARRAY = {"astype", "dsplit", "hsplit", "rollaxis", "split", "take_along_axis", "vsplit"}

_REFERENCES = {"": np, "linalg": np.linalg, "fft": np.fft, "scipy_linalg": scipy.linalg, "special": scipy.special}


def _leaves(result) -> list:
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in _leaves(item)]
    return [result]


def _python_functions() -> set[str]:
    """The NumPy mirrors written as Python functions (primitives call NumPy's own function on plain
    values), named as in ``PLAIN_CALLS``."""
    names = {name for name, value in anp.NUMPY_FUNCTIONS.items() if inspect.isfunction(value)
             and value.__module__ in ("autodiff.numpy.ops", "autodiff.numpy.composite")} | {"array", "asarray"}
    for prefix in ("linalg", "fft", "scipy_linalg", "special"):
        module = getattr(anp, prefix)
        names |= {f"{prefix}.{name}" for name in module.__all__
                  if inspect.isfunction(getattr(module, name)) and getattr(module, name).__module__ == module.__name__}
    return names


def test_the_plain_calls_cover_every_python_function_of_the_namespaces():
    assert _python_functions() == {name for name, _, _ in PLAIN_CALLS}


@pytest.mark.parametrize("name", sorted(NUMPY_NEEDS_AN_ARRAY))
def test_numpy_itself_refuses_a_list_where_the_reference_gets_an_array(name):
    args = next(args for called, args, _ in PLAIN_CALLS if called == name)
    with pytest.raises((AttributeError, TypeError)):
        getattr(np, name)(*args)


@pytest.mark.parametrize("name, args, kwargs", PLAIN_CALLS, ids=[name for name, _, _ in PLAIN_CALLS])
def test_plain_values_in_give_numpys_results_out(name, args, kwargs):
    module, _, function = name.rpartition(".")
    ours = getattr(getattr(anp, module) if module else anp, function)(*args, **kwargs)
    if name in NUMPY_NEEDS_AN_ARRAY:
        args = tuple(np.asarray(a) if isinstance(a, list) else a for a in args)
    reference = getattr(_REFERENCES[module], function)(*args, **kwargs)
    ours, reference = _leaves(ours), _leaves(reference)
    assert len(ours) == len(reference)
    for mine, theirs in zip(ours, reference):
        if isinstance(theirs, np.integer) and type(mine) is int:
            pass  # lstsq's rank: a Python int, not LAPACK's int32
        elif isinstance(theirs, (np.ndarray, np.generic)):
            assert isinstance(mine, (np.ndarray, np.generic)), f"{type(mine).__name__} where NumPy gives an array"
            assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
        finite = np.abs(np.asarray(theirs))[np.isfinite(theirs)]
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12 * np.max(finite, initial=1.0))
