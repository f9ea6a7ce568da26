"""Sparsity detection, colourings and sparse derivatives against the dense ones.

Every propagation rule has a function here whose pattern is compared with the nonzeros of the dense
Hessian or Jacobian at a random point: equal where the rule is exact, a superset where it is
conservative by design (the fallback, extrema, linear algebra), and the sparse matrix equal to the
dense one either way. A hypothesis-drawn family of programs checks the superset property.
"""
from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autodiff as ad
import autodiff.numpy as anp
from autodiff import _index_sets as index_sets
from autodiff import coloring, sparsity
from autodiff._index_sets import Sets
from autodiff.extend import defvjp, primitive
from autodiff.function import CACHE_SIZE


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def arwhead(x):
    return np.sum(-4 * x[:-1] + 3) + np.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2)


_reversed_squares = primitive(lambda x: x[::-1] ** 2, "reversed_squares")   # no propagation rule
defvjp(_reversed_squares, lambda g, ans, x: g[..., ::-1] * 2 * x)

A = np.random.default_rng(0).normal(size=(4, 3))

# name -> (scalar function of x (n = 24), whether the pattern is exact rather than a superset)
HESSIAN_CASES = {
    "unary and binary ufuncs, slices": (rosen, True),
    "arrowhead": (arwhead, True),
    "where, clip": (lambda x: np.sum(np.where(x > 0.5, x ** 2, np.sin(x)) * np.clip(x[::-1], 0.3, 0.8)), True),
    "maximum: both sides kept (superset)": (lambda x: np.sum(np.maximum(x[1:], x[:-1]) ** 2), False),
    "sum over an axis, prod": (lambda x: np.sum(np.sum(x.reshape(6, 4), axis=1) ** 3)
                               + np.sum(np.prod(x.reshape(4, 6), axis=0)), True),
    "max, min (superset)": (lambda x: np.sum(np.max(x.reshape(6, 4), axis=1) ** 2)
                            + np.sum(np.min(x.reshape(4, 6), axis=0) ** 3), False),
    "norm, cumsum, mean": (lambda x: np.sum(np.linalg.norm(x.reshape(8, 3), axis=1) ** 3)
                           + np.sum(np.cumsum(x[:6]) ** 2) + np.mean(x) ** 2, True),
    "matmul": (lambda x: np.sum((x.reshape(6, 4) @ A) ** 2) + x[:4] @ x[4:8]
               + np.sum(x[:6] @ x[6:18].reshape(6, 2)), True),
    "einsum, tensordot": (lambda x: np.einsum("ij,ij->", x.reshape(4, 6), x.reshape(4, 6) ** 2)
                          + np.sum(np.einsum("ij,jk->ik", x[:12].reshape(3, 4), A) ** 2)
                          + np.tensordot(x[:6].reshape(2, 3), x[6:12].reshape(2, 3), 2), True),
    "indexing with repeats, take, scatter": (lambda x: np.sum(x[[0, 5, 5, 7]] ** 3)
                                             + np.sum(np.take(x, [1, 2]) ** 2 * x[[3, 4]]), True),
    "reshape, transpose, flip, concatenate, stack": (
        lambda x: np.sum(np.concatenate([x[:12].reshape(3, 4).T, np.flip(x[12:24]).reshape(3, 4).T], axis=1)
                         ** 3 * np.stack([x[::2], x[1::2]]).T.reshape(4, 6)), True),
    "pad, diagonal, triu, tril, broadcast_to, tile, repeat, roll": (
        lambda x: np.sum(np.pad(x[:4], 2) ** 2 * np.roll(x[4:12], 3)) + np.sum(np.diagonal(x[:16].reshape(4, 4)) ** 3)
        + np.sum(np.triu(x[:16].reshape(4, 4)) * np.tril(x[8:24].reshape(4, 4)))
        + np.sum(np.broadcast_to(x[:3], (2, 3)) ** 3) + np.sum(np.tile(x[:2], 3) * np.repeat(x[2:5], 2)), True),
    "batched det, inv, solve": (lambda x: np.sum(np.linalg.det(x[:16].reshape(4, 2, 2)) ** 2)
                                + np.sum(np.linalg.inv(x[:8].reshape(2, 2, 2) + 3 * np.eye(2)))
                                + np.sum(np.linalg.solve(x[8:16].reshape(2, 2, 2) + 3 * np.eye(2),
                                                         x[16:20].reshape(2, 2))), True),
    "fallback: a primitive without a rule (superset)": (lambda x: np.sum(_reversed_squares(x[:8]) * x[8:16]), False),
}


def nonzeros(matrix: np.ndarray) -> np.ndarray:
    return np.abs(matrix) > 0


@pytest.mark.parametrize("name", list(HESSIAN_CASES))
def test_hessian_pattern_and_matrix_equal_the_dense_ones(name):
    f, exact = HESSIAN_CASES[name]
    x = np.random.default_rng(1).uniform(0.1, 1.0, 24)
    dense = ad.hessian(f)(x)
    pattern = ad.hessian_sparsity(f, x)
    structure = pattern.to_dense()
    assert pattern.shape == (24, 24) and pattern.nnz == structure.sum()
    assert np.array_equal(structure, structure.T)
    assert not np.any(nonzeros(dense) & ~structure), "a nonzero outside the pattern"
    if exact:
        assert np.array_equal(structure, nonzeros(dense))
    else:
        assert structure.sum() > nonzeros(dense).sum()
    sparse = ad.sparse_hessian(f)(x)
    assert sparse.format == "csc" and sparse.shape == (24, 24)
    np.testing.assert_allclose(sparse.toarray(), dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())
    assert np.array_equal(sparse.toarray(), sparse.toarray().T)  # each pair read once


@pytest.mark.parametrize("n", [10, 2000])
def test_chained_rosenbrock_is_tridiagonal_with_three_colours(n):
    x = np.random.default_rng(2).normal(size=n)
    pattern = ad.hessian_sparsity(rosen, x)
    i = np.arange(n)
    expected = np.abs(i[:, None] - i[None, :]) <= 1
    assert np.array_equal(pattern.to_dense(), expected)
    assert pattern.coloring().max() + 1 == 3
    dense = ad.hessian(rosen)(x)
    np.testing.assert_allclose(ad.sparse_hessian(rosen)(x).toarray(), dense, rtol=1e-12,
                               atol=1e-12 * np.abs(dense).max())


@pytest.mark.parametrize("n", [10, 2000])
def test_arwhead_is_an_arrowhead_with_two_colours(n):
    x = np.random.default_rng(3).normal(size=n)
    pattern = ad.hessian_sparsity(arwhead, x)
    expected = np.eye(n, dtype=bool)
    expected[-1, :] = expected[:, -1] = True
    assert np.array_equal(pattern.to_dense(), expected)
    assert pattern.coloring().max() + 1 == 2
    dense = ad.hessian(arwhead)(x)
    np.testing.assert_allclose(ad.sparse_hessian(arwhead)(x).toarray(), dense, rtol=1e-12,
                               atol=1e-12 * np.abs(dense).max())


JACOBIAN_CASES = {
    "residuals": (lambda x: np.concatenate([10 * (x[1:] - x[:-1] ** 2), 1 - x[:-1]]), True),
    "cumsum, convolve": (lambda x: np.concatenate([np.cumsum(x[:5]), np.convolve(x, [1.0, -2.0, 1.0], "valid")]), True),
    "matrix outputs": (lambda x: (x[:12].reshape(3, 4) @ x[12:20].reshape(4, 2)), True),
    "sort: read values, recorded eagerly": (lambda x: np.sort(x)[::2] * x[:10], True),
    "custom_gradient (superset)": (
        lambda x: ad.custom_gradient(lambda t: (t ** 2, lambda g: 2 * g * t))(x[:6]) + x[6:], False),
}


@pytest.mark.parametrize("name", list(JACOBIAN_CASES))
def test_jacobian_pattern_and_matrix_equal_the_dense_ones(name):
    f, exact = JACOBIAN_CASES[name]
    x = np.random.default_rng(4).uniform(0.1, 1.0, 12 if "residuals" in name else 20)
    if "custom" in name:
        x = x[:12]
    dense = np.reshape(ad.jacobian(f)(x), (-1, x.size))
    pattern = ad.jacobian_sparsity(f, x)
    structure = pattern.to_dense()
    assert pattern.shape == dense.shape
    assert not np.any(nonzeros(dense) & ~structure)
    assert np.array_equal(structure, nonzeros(dense)) if exact else structure.sum() > nonzeros(dense).sum()
    sparse = ad.sparse_jacobian(f)(x)
    assert sparse.format == "csc"
    np.testing.assert_allclose(sparse.toarray(), dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())


def test_column_coloring_of_a_banded_jacobian():
    x = np.ones(50)
    pattern = ad.jacobian_sparsity(lambda x: x[2:] * x[1:-1] - x[:-2], x)
    colours = pattern.coloring()
    assert colours.max() + 1 == 3                      # rows i, i + 1, i + 2: three colours
    coloring.column_recovery(pattern.rows, pattern.cols, colours)   # valid: raises otherwise


# --- dense rows and columns: forward and reverse products -------------------------------------------

def budget(x):
    """A chain of constraints and a budget sum(x) = 1: one dense row."""
    return np.append(x[1:] ** 2 - x[:-1], np.sum(x) - 1.0)


def three_dense_rows(x):
    return np.concatenate([x[1:] ** 2 - x[:-1], [np.sum(x) - 1.0, np.sum(x ** 2), x @ np.arange(x.size)]])


def arrow(x):
    """A dense first column (x[0] in every row) and a dense last row."""
    return np.append(x[0] * x[1:] + x[:-1] ** 2, np.sum(x ** 2))


def blocks(x):
    """50 rows over disjoint blocks of 40, each scaled by x[0]: a dense column, long rows."""
    return x[0] * np.sum(x[1:].reshape(50, -1) ** 2, axis=1)


def count_products(monkeypatch) -> list:
    """The number of vectors in each batch of products the sparse Jacobians compute, as they run."""
    counted = []
    original = sparsity._in_chunks
    monkeypatch.setattr(sparsity, "_in_chunks", lambda products, vectors, length, chunk: (
        counted.append(vectors.shape[0]) or original(products, vectors, length, chunk)))
    return counted


# f, n, (forward, reverse) products of the automatic choice, and those of forward or reverse products alone
DENSE_LINES = {"budget": (budget, 300, (2, 1), 300, 3), "three dense rows": (three_dense_rows, 300, (2, 3), 300, 5),
               "dense row and column": (arrow, 300, (3, 1), 300, 300),
               "dense column, long rows": (blocks, 2001, (1, 1), 41, 50)}


@pytest.mark.parametrize("name", list(DENSE_LINES))
def test_dense_rows_and_columns_take_a_few_products_of_each_kind(monkeypatch, name):
    """A dense row would make a column colouring take n products (and a dense column a row
    colouring m): its entries come from one reverse product (a dense column's from one forward
    product), the rest from a colouring of what is left; the matrix is the dense one."""
    f, n, (forward, reverse), columns_only, rows_only = DENSE_LINES[name]
    x = np.random.default_rng(8).uniform(0.5, 1.5, n)
    counted = count_products(monkeypatch)
    J = ad.sparse_jacobian(f)(x)
    assert counted == [forward, reverse]
    dense = ad.jacobian(f)(x)
    np.testing.assert_allclose(J.toarray(), dense, rtol=1e-13, atol=1e-13 * np.abs(dense).max())
    pattern = ad.jacobian_sparsity(f, x)
    assert pattern.bicoloring("columns")[0].max() + 1 == pattern.coloring().max() + 1 == columns_only
    assert pattern.bicoloring("rows")[1].max() + 1 == rows_only


@pytest.mark.parametrize("partition, products", [("columns", (300, 0)), ("rows", (0, 3)), ("bidirectional", (2, 1))])
def test_the_partition_option_chooses_the_products(monkeypatch, partition, products):
    x = np.random.default_rng(9).uniform(0.5, 1.5, 300)
    counted = count_products(monkeypatch)
    jacobian = ad.sparse_jacobian(budget, partition=partition)
    np.testing.assert_allclose(jacobian(x).toarray(), ad.jacobian(budget)(x), rtol=1e-13, atol=0)
    assert counted == list(products)
    copy = pickle.loads(pickle.dumps(jacobian))
    assert copy._partition == partition and len(copy._cache) == 0
    with pytest.raises(ValueError, match="partition must be one of 'auto', 'columns', 'rows', 'bidirectional', "
                                         "got 'column'"):
        ad.sparse_jacobian(budget, partition="column")


def test_a_budget_jacobian_at_a_hundred_thousand_variables_is_its_closed_form(monkeypatch):
    """Rows x_{i+1}^2 - x_i, then sum(x) - 1, sum(x^2) and sum_i i x_i: the chain by 2 forward
    products, the three dense rows by 3 reverse products, equal to the closed form (the same
    arithmetic: exact), and replayed at a second point with the pattern found once."""
    import scipy.sparse
    n = 100_000
    counted, coloured = count_products(monkeypatch), spy(monkeypatch, "bicoloring")
    jacobian = ad.sparse_jacobian(three_dense_rows)
    for seed in (10, 11):
        x = np.random.default_rng(seed).uniform(0.5, 1.5, n)
        i = np.arange(n - 1)
        chain = scipy.sparse.csr_matrix((np.concatenate([np.full(n - 1, -1.0), 2 * x[1:]]),
                                         (np.concatenate([i, i]), np.concatenate([i, i + 1]))), shape=(n - 1, n))
        dense_rows = scipy.sparse.csr_matrix((np.concatenate([np.ones(n), 2 * x, np.arange(n, dtype=float)]),
                                              (np.repeat(np.arange(3), n), np.tile(np.arange(n), 3))))
        expected = scipy.sparse.vstack([chain, dense_rows])
        J = jacobian(x)
        assert J.shape == (n + 2, n) and J.nnz == expected.nnz == 2 * (n - 1) + 3 * n
        assert abs(J - expected).max() == 0.0
    assert counted == [2, 3, 2, 3] and coloured == ["bicoloring"]       # the pattern and partition found once
    (kept,) = jacobian._cache.values()
    assert len(kept.compressions) == 1


def test_a_pattern_too_dense_for_any_colouring_says_so_and_takes_the_identity(monkeypatch):
    """(sum x)^2 has a dense Hessian and a dense gradient Jacobian: no colouring can save half the
    products, so none is searched (it took 33 s at n = 200 before), each column is its own colour,
    the matrix is exact, and a DensePatternWarning tells the caller, once per pattern."""
    n = 300
    rank_one = lambda x: np.sum(x[1:] * x[:-1] ** 2) + np.sum(x) ** 2  # noqa: E731
    x = np.random.default_rng(12).uniform(0.5, 1.5, n)
    searched = spy(monkeypatch, "_by_classes") + spy(monkeypatch, "_jones_plassmann")
    hessian = ad.sparse_hessian(rank_one)
    with pytest.warns(ad.DensePatternWarning, match=r"Hessian's pattern is dense \(90,000 of 300 x 300 entries\): "
                                                  r"its 300 products"):
        H = hessian(x)
    assert np.array_equal(hessian.pattern(x).coloring(), np.arange(n)) and searched == []
    dense = ad.hessian(rank_one)(x)
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-13, atol=1e-13 * np.abs(dense).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # said once
        hessian(x + 1.0)
    gradient = ad.grad(rank_one)
    with pytest.warns(ad.DensePatternWarning, match="Jacobian's pattern is dense"):
        J = ad.sparse_jacobian(gradient)(x)
    np.testing.assert_allclose(J.toarray(), dense, rtol=1e-13, atol=1e-13 * np.abs(dense).max())


@pytest.mark.parametrize("n", [300, 3000])
def test_an_arrowhead_lagrangian_is_star_coloured_in_four_colours(n):
    """A chain objective and a multiplier times x_n * sum(x^2): a dense last row and column beside
    a tridiagonal band, three colours for the band and one for the dense column."""
    lagrangian = lambda x: np.sum(x[1:] * x[:-1] ** 2) + 0.7 * x[-1] * np.sum(x ** 2)  # noqa: E731
    x = np.random.default_rng(13).uniform(0.5, 1.5, n)
    pattern = ad.hessian_sparsity(lagrangian, x)
    assert pattern.coloring().max() + 1 == 4
    expected = band(n, 1)
    expected[-1] = expected[:, -1] = True
    assert np.array_equal(pattern.to_dense(), expected)
    dense = ad.hessian(lagrangian)(x)
    np.testing.assert_allclose(ad.sparse_hessian(lagrangian)(x).toarray(), dense, rtol=1e-13,
                               atol=1e-13 * np.abs(dense).max())


def random_values(rng, dense: np.ndarray) -> np.ndarray:
    return np.where(dense, rng.normal(size=dense.shape), 0.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.floats(0.02, 0.3), st.integers(0, 3), st.integers(0, 3),
       st.integers(0, 2 ** 16))
def test_bicolourings_recover_every_entry(m, n, density, dense_rows, dense_columns, seed):
    """Random patterns with dense rows and columns: every partition reads every entry exactly from
    its products, and "auto" takes no more products than any other."""
    rng = np.random.default_rng(seed)
    dense = rng.random((m, n)) < density
    dense[rng.integers(0, m, dense_rows)] = True
    dense[:, rng.integers(0, n, dense_columns)] = True
    rows, cols = np.nonzero(dense)
    values = random_values(rng, dense)
    products = {}
    for partition in coloring.PARTITIONS:
        column_colours, row_colours = coloring.bicoloring(rows, cols, (m, n), partition)
        seeds, cotangents = sparsity._indicators(column_colours), sparsity._indicators(row_colours)
        computed = np.concatenate([(values @ seeds.T).T.ravel(), (cotangents @ values).ravel()])
        read = coloring.bicoloring_recovery(rows, cols, column_colours, row_colours)
        assert np.array_equal(computed[read], values[rows, cols])
        products[partition] = seeds.shape[0] + cotangents.shape[0]
    assert products["auto"] == min(products.values())


@pytest.mark.parametrize("f", [three_dense_rows, ad.function(three_dense_rows)], ids=["plain", "autodiff.function"])
def test_forward_and_reverse_products_are_traced_once_and_replayed(f):
    jacobian = ad.sparse_jacobian(f)
    x = np.random.default_rng(14).uniform(0.5, 1.5, 200)
    jacobian(x)
    (kept,) = jacobian._cache.values()
    traces = [program.traces for program in kept.programs]      # the forward and the reverse products
    for point in (x, x + 1.0, 2 * x):
        np.testing.assert_allclose(jacobian(point).toarray(), ad.jacobian(three_dense_rows)(point), rtol=1e-13, atol=0)
    assert [program.traces for program in kept.programs] == traces and jacobian.untraced_reason is None


def test_reverse_products_of_a_function_the_tracer_refuses_run_eagerly():
    f = lambda x: np.append(np.sort(x)[1:] * x[1:] ** 2, np.sum(x))  # noqa: E731  (sort reads float values)
    jacobian = ad.sparse_jacobian(f, partition="bidirectional")
    for seed in range(2):
        x = np.random.default_rng(seed).permutation(13) + 1.0
        np.testing.assert_allclose(jacobian(x[1:]).toarray(), ad.jacobian(f)(x[1:]), rtol=1e-13, atol=0)
    assert "sort" in jacobian.untraced_reason
    assert jacobian.pattern(x[1:]).bicoloring("bidirectional")[1].max() == 0      # the sum: one reverse product


# --- the conservative superset over a family of programs ---------------------------------------

STEPS = ["square", "sin", "shift product", "reverse", "pair sums", "cumsum", "gather", "outer block"]


def program(steps, x):
    """A chain of the drawn steps on x (n = 12), ending in a sum of squares."""
    v = x
    for step in steps:
        if step == "square":
            v = v * v + 0.5
        elif step == "sin":
            v = np.sin(v) + v
        elif step == "shift product":
            v = np.concatenate([v[1:] * v[:-1], v[-1:]])
        elif step == "reverse":
            v = v[::-1] * x
        elif step == "pair sums":
            v = np.repeat(np.sum(v.reshape(6, 2), axis=1), 2) * v
        elif step == "cumsum":
            v = np.cumsum(v) * 0.1 + v
        elif step == "gather":
            v = v[[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]] + v
        elif step == "outer block":
            v = np.concatenate([(v[:3, None] * v[None, 3:6]).ravel(), v[9:]])
    return np.sum(v ** 2)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(STEPS), min_size=1, max_size=4), st.integers(0, 2 ** 16))
def test_no_nonzero_of_the_dense_hessian_falls_outside_the_pattern(steps, seed):
    f = lambda x: program(steps, x)  # noqa: E731
    x = np.random.default_rng(seed).uniform(0.2, 1.0, 12)
    pattern = ad.hessian_sparsity(f, x).to_dense()
    for point in (x, np.random.default_rng(seed + 1).uniform(-1.0, 1.0, 12)):
        dense = ad.hessian(f)(point)
        assert not np.any(nonzeros(dense) & ~pattern)
        np.testing.assert_allclose(ad.sparse_hessian(f)(point).toarray(), dense, rtol=1e-11,
                                   atol=1e-11 * np.abs(dense).max())


# --- colourings ---------------------------------------------------------------------------------------

def random_symmetric(rng, n: int, density: float) -> np.ndarray:
    dense = rng.random((n, n)) < density
    return dense | dense.T | np.eye(n, dtype=bool)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 40), st.floats(0.02, 0.5), st.integers(0, 2 ** 16))
def test_star_and_column_colourings_recover_every_entry(n, density, seed):
    rng = np.random.default_rng(seed)
    dense = random_symmetric(rng, n, density)
    rows, cols = np.nonzero(dense)
    star = coloring.star_coloring(rows, cols, n)
    check_star(dense, star)
    read = coloring.star_recovery(rows, cols, star)
    values = np.where(dense, rng.normal(size=(n, n)), 0.0)
    values = values + values.T
    products = values @ np.eye(star.max() + 1)[star]        # H S
    assert np.array_equal(products.ravel()[read], values[rows, cols])
    column = coloring.column_coloring(rows, cols, (n, n))
    check_columns(dense, column)
    products = values @ np.eye(column.max() + 1)[column]
    assert np.array_equal(products.ravel()[coloring.column_recovery(rows, cols, column)], values[rows, cols])


def star_violations(dense: np.ndarray, colours: np.ndarray) -> tuple[int, int]:
    """(edges whose ends share a colour, edges b-c in a two-coloured path a-b-c-d)."""
    adjacent = (dense & ~np.eye(len(dense), dtype=bool)).astype(int)
    same = (colours[:, None] == colours[None, :]).astype(int)
    like = adjacent @ same - adjacent          # [b, c]: neighbours a != c of b coloured like c
    return int(np.sum(np.triu(adjacent * same))), int(np.sum(np.triu(adjacent * (like > 0) * (like.T > 0))))


def check_star(dense: np.ndarray, colours: np.ndarray) -> None:
    assert star_violations(dense, colours) == (0, 0)
    rows, cols = np.nonzero(dense)
    coloring.star_recovery(rows, cols, colours)          # every entry readable


def check_columns(dense: np.ndarray, colours: np.ndarray) -> None:
    k = colours.max() + 1
    per_row = dense.astype(int) @ np.eye(k, dtype=int)[colours]
    assert per_row.max() <= 1                            # structurally orthogonal within a colour


def band(n: int, half: int) -> np.ndarray:
    i = np.arange(n)
    return np.abs(i[:, None] - i[None, :]) <= half


def triangular_grid(m: int) -> np.ndarray:
    """The 7-point coupling of the minimal-surface Hessian on an m x m grid."""
    r, c = np.divmod(np.arange(m * m), m)
    dr, dc = r[:, None] - r[None, :], c[:, None] - c[None, :]
    return (np.abs(dr) + np.abs(dc) <= 1) | (dr * dc == -1)


def test_the_star_colouring_of_a_p4_refuses_two_colours():
    dense = band(4, 1)                                    # the path 0-1-2-3
    assert star_violations(dense, np.array([0, 1, 0, 1])) == (0, 1)
    assert star_violations(dense, np.array([0, 0, 1, 2])) == (1, 0)
    check_star(dense, coloring.star_coloring(*np.nonzero(dense), 4))


@pytest.mark.parametrize("structure, colours", [
    (band(300, 1), 3), (band(300, 3), 7),                 # a band of half-bandwidth b: 2b + 1
    (band(300, 3) | (np.arange(300) == 299)[:, None] | (np.arange(300) == 299)[None, :], 8),
    (triangular_grid(20), 7),                              # a lattice colouring: perfect distance-2
])
def test_structured_star_colourings(monkeypatch, structure, colours):
    monkeypatch.setattr(coloring, "_BLOCK", 37)             # classes and checks in several blocks
    found = coloring.star_coloring(*np.nonzero(structure), len(structure))
    check_star(structure, found)
    assert found.max() + 1 == colours


def test_more_than_64_colours():
    dense = np.ones((70, 70), bool)
    star = coloring.star_coloring(*np.nonzero(dense), 70)
    check_star(dense, star)
    assert star.max() + 1 == 70
    block = np.zeros((80, 150), bool)
    block[:, :70] = True                                 # 70 columns share every row
    block[np.arange(80), 70 + np.arange(80)] = True
    columns = coloring.column_coloring(*np.nonzero(block), block.shape)
    check_columns(block, columns)
    assert columns.max() + 1 == 71


def spy(monkeypatch, name: str) -> list:
    calls = []
    original = getattr(coloring, name)
    monkeypatch.setattr(coloring, name, lambda *args: calls.append(name) or original(*args))
    return calls


def test_a_periodic_order_that_misses_a_conflict_is_repaired(monkeypatch):
    dense = band(60, 1)
    dense[4, 16] = dense[16, 4] = True                    # same class mod 3 and block, unsampled
    monkeypatch.setattr(coloring, "_SAMPLE", 5)
    monkeypatch.setattr(coloring, "_BLOCK", 7)
    rounds = spy(monkeypatch, "_jones_plassmann")
    found = coloring.star_coloring(*np.nonzero(dense), 60)
    check_star(dense, found)
    assert rounds == ["_jones_plassmann"]                 # the class-by-class colouring was invalid


@settings(max_examples=8, deadline=None)
@given(st.integers(100, 200), st.floats(0.01, 0.05), st.integers(0, 2 ** 16))
def test_irregular_patterns_are_coloured_in_rounds_then_recoloured(n, density, seed):
    dense = random_symmetric(np.random.default_rng(seed), n, density)
    check_star(dense, coloring.star_coloring(*np.nonzero(dense), n))
    check_columns(dense[: n // 2], coloring.column_coloring(*np.nonzero(dense[: n // 2]), (n // 2, n)))


def test_a_colouring_that_does_not_fit_is_refused():
    rows, cols = np.nonzero(np.abs(np.subtract.outer(np.arange(4), np.arange(4))) <= 1)   # a path 0-1-2-3
    with pytest.raises(ValueError, match="star colouring"):
        coloring.star_recovery(rows, cols, np.array([0, 1, 0, 1]))    # a two-coloured path of four
    coloring.star_recovery(rows, cols, np.array([0, 1, 2, 0]))
    with pytest.raises(ValueError, match="share a row"):
        coloring.column_recovery(rows, cols, np.array([0, 0, 1, 2]))


# --- index sets ---------------------------------------------------------------------------------------

def random_sets(rng, rows: int, n: int, long_row: int | None = None) -> Sets:
    """Rows of 0-4 random distinct indices (``long_row``: all n of them)."""
    found = [np.unique(rng.integers(0, n, rng.integers(0, 5))) for _ in range(rows)]
    if long_row is not None:
        found[long_row] = np.arange(n)
    return Sets(np.concatenate([[0], np.cumsum([len(r) for r in found])]),
                np.concatenate(found).astype(np.int64), n)


def as_lists(sets: Sets) -> list:
    return [sets.indices[sets.indptr[r]:sets.indptr[r + 1]].tolist() for r in range(sets.rows)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 16), st.integers(1, 4), st.booleans())
def test_index_set_operations_against_python_sets(monkeypatch, seed, chunk, long_row):
    monkeypatch.setattr(index_sets, "_CHUNK", chunk)        # merges cross chunk bounds
    monkeypatch.setattr(index_sets, "_ELL_WIDTH", 6)         # and take both merge paths
    rng = np.random.default_rng(seed)
    a, b, c = (random_sets(rng, 9, 12, 4 if long_row and k == 0 else None) for k in range(3))
    reference = [sorted(set(x) | set(y) | set(z)) for x, y, z in zip(as_lists(a), as_lists(b), as_lists(c))]
    chained = index_sets.union([index_sets.union([a, b]), c])      # a deferred union, extended
    assert chained._parts is not None and as_lists(chained) == reference
    assert index_sets.union([chained, b, a]) is chained                # already holds them: itself
    assert as_lists(index_sets.union([a, b, c, a])) == reference
    index = rng.integers(-1, 9, 7)
    assert as_lists(index_sets.gather(a, index)) == [as_lists(a)[i] if i >= 0 else [] for i in index]
    shifted = np.r_[-1, -1, np.arange(3, 8), -1]                    # a slice's scatter: a view
    assert as_lists(index_sets.gather(a, shifted)) == [as_lists(a)[i] if i >= 0 else [] for i in shifted]
    groups = rng.integers(-1, 4, 9)
    assert as_lists(index_sets.reduce(a, groups, 4)) == [
        sorted(set().union(*[as_lists(a)[r] for r in range(9) if groups[r] == g])) for g in range(4)]


@pytest.mark.parametrize("dense_row", [False, True])
def test_patterns_are_symmetrized_exactly(dense_row):
    n = 12
    pattern = np.eye(n, dtype=bool) | np.roll(np.eye(n, dtype=bool), 1, axis=1)   # a cycle: row and
    if dense_row:                                                                # column counts agree
        pattern[-1] = pattern[:, -1] = True
    rows, cols = np.nonzero(pattern)
    symmetric = coloring._symmetric(coloring._csr(rows, cols, n))
    assert as_lists(symmetric) == [np.flatnonzero(r).tolist() for r in pattern | pattern.T]
    rows, cols = np.nonzero(pattern | pattern.T)
    graph = coloring._csr(rows, cols, n)
    assert coloring._symmetric(graph) is graph


# --- caching per signature and branch ---------------------------------------------------------------

def test_the_pattern_is_found_once_per_signature_and_branch():
    def f(x):
        if x[0] > 0:                                    # the branch decides the structure
            return np.sum(x[1:] * x[:-1])
        return np.sum(x ** 3)
    hessian = ad.sparse_hessian(f)
    positive, negative = np.linspace(1, 2, 6), np.linspace(-2, -1, 6)
    for x in (positive, positive + 0.5, negative, negative - 0.5, positive):
        np.testing.assert_allclose(hessian(x).toarray(), ad.hessian(f)(x), atol=1e-12)
    (kept,) = hessian._cache.values()
    assert len(kept.compressions) == 2                            # two branches, two patterns, found once each
    assert hessian(np.linspace(1, 2, 7)).shape == (7, 7)
    assert len(hessian._cache) == 2


@pytest.mark.parametrize("f", [rosen, ad.function(rosen)], ids=["plain", "autodiff.function"])
def test_products_are_traced_once_and_replayed(f):
    hessian = ad.sparse_hessian(f)
    x = np.random.default_rng(5).normal(size=30)
    hessian(x)
    ((program,),) = [kept.programs for kept in hessian._cache.values()]
    traces = program.traces                             # the gradient and the products, once
    for point in (x, x + 1.0, 2 * x):
        np.testing.assert_allclose(hessian(point).toarray(), ad.hessian(rosen)(point), rtol=1e-12, atol=1e-9)
    assert program.traces == traces and hessian.untraced_reason is None


def test_a_function_the_tracer_refuses_runs_eagerly_and_says_why():
    def f(x):  # a sort reads float values: its trace is refused
        return np.sum(np.sort(x)[::2] * x[:5] ** 2) + np.sum(x[1:] * x[:-1] ** 2)
    hessian, jacobian = ad.sparse_hessian(f), ad.sparse_jacobian(lambda x: np.sort(x) * x ** 2)
    for seed in range(2):
        x = np.random.default_rng(seed).permutation(10) + 1.0
        dense = ad.hessian(f)(x)
        np.testing.assert_allclose(hessian(x).toarray(), dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())
        dense = ad.jacobian(lambda x: np.sort(x) * x ** 2)(x)
        np.testing.assert_allclose(jacobian(x).toarray(), dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())
    assert "sort" in hessian.untraced_reason and "sort" in jacobian.untraced_reason


@pytest.mark.parametrize("make", [ad.sparse_hessian, ad.sparse_jacobian], ids=["hessian", "jacobian"])
def test_the_cache_keeps_the_most_recent_signatures_as_autodiff_function_does(make):
    """One entry per input shape, at most cache_size of them (least recently used go first), as
    ad.function keeps its traces: a run over ever new shapes no longer grows the cache without bound."""
    f = rosen if make is ad.sparse_hessian else (lambda x: x[1:] * x[:-1])
    matrices = make(f, cache_size=4)
    patterns = {n: matrices.pattern(np.ones(n)) for n in range(2, 40)}
    for n in range(40, 200):
        matrices(np.ones(n))
    assert len(matrices._cache) == 4 and matrices.cache_size == 4
    assert matrices.pattern(np.ones(199)) is matrices.pattern(np.ones(199))   # kept: found once
    again = matrices.pattern(np.ones(39))                                       # evicted: found again
    assert again is not patterns[39] and np.array_equal(again.to_dense(), patterns[39].to_dense())
    assert make(f).cache_size == ad.function(f).cache_size == CACHE_SIZE
    with pytest.raises(ValueError, match="cache_size must be a positive int, got 0"):
        make(f, cache_size=0)


def test_a_used_sparse_hessian_pickles_without_its_cache():
    """Its patterns and replayed programs are made again where it is unpickled (as ad.function's
    traces are), so a used one pickles as a new one does."""
    hessian = ad.sparse_hessian(rosen, cache_size=3)
    x = np.random.default_rng(7).normal(size=12)
    expected = hessian(x).toarray()
    copy = pickle.loads(pickle.dumps(hessian))
    assert copy.f is rosen and copy.cache_size == 3 and len(copy._cache) == 0
    np.testing.assert_array_equal(copy(x).toarray(), expected)
    jacobian = ad.sparse_jacobian(np.sin)
    jacobian(x)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(jacobian))(x).toarray(), np.diag(np.cos(x)))


def test_pytree_inputs_are_raveled():
    def f(p):
        return np.sum(p["w"][1:] * p["w"][:-1] ** 2) + p["b"][0] ** 3 * np.sum(p["w"])
    tree = {"w": np.random.default_rng(6).normal(size=(2, 3)), "b": np.array([0.5, 2.0])}
    flat, unravel = ad.ravel(tree)
    dense = ad.hessian(lambda v: f(unravel(v)))(flat)
    hessian = ad.sparse_hessian(f)
    np.testing.assert_allclose(hessian(tree).toarray(), dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())
    assert np.array_equal(ad.hessian_sparsity(f, tree).to_dense(), nonzeros(dense))
    np.testing.assert_allclose(hessian({"w": tree["w"] + 1, "b": tree["b"]}).toarray(),
                               ad.hessian(lambda v: f(unravel(v)))(flat + np.r_[np.ones(6), 0, 0]), rtol=1e-12)
    assert len(hessian._cache) == 1                     # one structure, one pattern
    residuals = lambda p: p["w"].ravel()[1:] * p["b"][1] - p["w"].ravel()[:-1]  # noqa: E731
    dense = ad.jacobian(lambda v: residuals(unravel(v)))(flat)
    np.testing.assert_allclose(ad.sparse_jacobian(residuals)(tree).toarray(), dense, rtol=1e-12)
    assert ad.jacobian_sparsity(residuals, tree).shape == (5, 8)


# --- refusals and layering ----------------------------------------------------------------------------

def test_bad_functions_are_refused_by_name():
    with pytest.raises(TypeError, match="scalar"):
        ad.hessian_sparsity(lambda x: x ** 2, np.ones(3))
    with pytest.raises(TypeError, match="plain"):
        ad.jacobian_sparsity(lambda x: 1.0, np.ones(3))


def test_a_linear_function_has_an_empty_hessian():
    pattern = ad.hessian_sparsity(lambda x: np.sum(3 * x), np.ones(4))
    assert pattern.nnz == 0
    assert ad.sparse_hessian(lambda x: np.sum(3 * x))(np.ones(4)).nnz == 0


def test_patterns_and_colourings_load_no_scipy():
    code = ("import sys, numpy as np, autodiff as ad; "
            "p = ad.hessian_sparsity(lambda x: np.sum(x[1:] * x[:-1]), np.ones(5)); p.coloring(); "
            "ad.jacobian_sparsity(lambda x: x ** 2, np.ones(3)).coloring(); "
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_to_scipy_is_the_pattern():
    pattern = ad.hessian_sparsity(arwhead, np.ones(5))
    matrix = pattern.to_scipy()
    assert matrix.format == "csc" and matrix.dtype == bool
    assert np.array_equal(matrix.toarray(), pattern.to_dense())
    assert anp is not None
