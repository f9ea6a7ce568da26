"""Sparse factorizations and preconditioners for Newton on grids and meshes: which library, for what.

Measures the sparse direct solvers that install by pip (and MUMPS, where it was built by hand) on
the Hessians hessopt factors, against qdldl (today's ``optimizers.sparse.LDLFactorization``),
and the algebraic-multigrid preconditioner of ``pyamg`` against today's incomplete Cholesky
(``optimizers.preconditioning.IncompleteCholesky``) as preconditioners of conjugate gradients.

The matrices (built once and cached as ``.npz`` in ``--matrices DIR``):

- the minimal surface (MINPACK-2 DMSA with Enneper's boundary values, ``hessopt.problems``) at
  1000^2: its Hessian at MINPACK-2's start, from ``ad.sparse_hessian`` (a 7-point coupling);
- :func:`energy13`, a 2-D nonlinear energy (p-Laplacian-like, p = 3, with a quartic term), plain
  NumPy with ``np.pad`` and slices, whose Hessian is a 13-point stencil, at 300^2 and 1000^2;
- :func:`energy3d`, a 3-D energy with a 7-point Laplacian-like Hessian, at 50^3 and 100^3;
- chained Rosenbrock (tridiagonal) and ARWHEAD (diagonal plus a dense last row and column) at
  n = 10^6, at ``benchmarks/bench_sparse.py``'s starts;
- :func:`kkt`: the quasi-definite KKT matrix [[H + delta I, J^T], [J, -delta_c I]] of
  :func:`energy13` at 300^2 with one equality per horizontally adjacent pair of nodes (J the
  forward difference, one row a pair; delta = delta_c = 1e-8, as an interior-point method
  regularizes it), n + m = 179,700. Its inertia is (n, m, 0);
- :func:`kkt_schur`: the Schur complement H + delta I + J^T J / delta_c of that KKT matrix, whose
  Cholesky factorization is the same inertia test.

Every Hessian but the KKT matrix is positive definite there (checked: every pivot of qdldl's LDL^T
positive).

Table 1, per matrix and library: "first", the seconds of the first factorization of a pattern
(ordering, symbolic analysis and the numeric factorization), and "refactor", those of a later one
of the same pattern, which is what every Newton iterate and every shift of Moré-Sorensen's and
Newton's shift search pays (for libraries that cannot keep the analysis, the same as the first);
the refactor's ratio to qdldl's, measured in the same rounds; the nonzeros of the factor as the
library reports it (L's for the Cholesky and LDL^T factorizations; L + U for SuperLU), the milliseconds
of one solve with the factor, and the peak memory above the matrix itself during the first
factorization (MB: the growth of the process's peak resident set, ``VmHWM``, which is reset
before; the first round only). Times are medians of ``--repeats`` rounds (3), each round timing
every library once on that matrix in turn, so load from other processes hits them alike; each
library's round runs in a fresh process (its memory its own), ended after ``--limit`` seconds
(600), and a library whose first factorization takes over ``SLOW`` seconds (60) is timed in one
round only, its refactorization taken as its first (marked "~"). On the 3-D grid at 100^3 a
library is not run where its time at 50^3 projects over the limit (nested dissection's work grows
like n^2 there). The
positive definite matrices are factored as Cholesky where the library has one (the Newton use: a
failure signal when not positive definite), the KKT matrix as LDL^T with its inertia (the
interior-point use). Each answer is checked: the relative residual of one solve, and the inertia
on the KKT matrix.

The libraries (a missing one is skipped with a line saying so):

- ``qdldl``: LDL^T without pivoting, up-looking (column by column), AMD ordering; keeps its
  analysis (``update``); D's signs are the inertia of a quasi-definite matrix.
- ``superlu``: ``scipy.sparse.linalg.splu`` in its symmetric mode (MMD on A^T + A, diagonal
  pivots), supernodal LU; analyses every time. Skipped on ARWHEAD at 10^6: its minimum-degree
  ordering is quadratic in n on a dense row (13 s at n = 10^5).
- ``cholmod`` / ``cholmod+metis``: CHOLMOD's supernodal Cholesky (BLAS-3 on supernodes) through
  ``kvxopt`` (or ``cvxopt``: the same CHOLMOD 3.0.6 build with OpenBLAS), AMD ordering or METIS's
  nested dissection (``pymetis``) handed in as the permutation; keeps its analysis. On the KKT
  matrix, CHOLMOD's simplicial LDL^T (its only LDL^T; no pivoting), timed and solved with, but
  without an inertia: ``getfactor`` turns the factor into L L^T, which fails on an indefinite D.
- ``cholespy``: CHOLMOD's supernodal Cholesky with its own METIS, built with the reference BLAS;
  analyses every time; Cholesky only.
- ``pardiso``: Intel MKL PARDISO through ``pypardiso`` (x86-64 only; MKL is about 700 MB),
  supernodal, METIS; keeps its analysis (phases 11 and 22); Cholesky (``mtype`` 2, error -4
  when not positive definite) or Bunch-Kaufman LDL^T with the inertia (``mtype`` -2, ``iparm``
  22 and 23).
- ``mumps``: MUMPS through ``python-mumps``, multifrontal, METIS; keeps its analysis; LDL^T with
  threshold pivoting and the inertia (INFOG(12) negative pivots, INFOG(28) null pivots) for every
  symmetric matrix (the binding has no Cholesky mode). Not installable by pip alone: its Linux
  wheel (0.0.2) was built against NumPy 1, and later versions build from source against an
  installed MUMPS (Debian's ``libmumps-seq-dev``).

Table 2, the preconditioners on the grid Hessians: conjugate gradients (``scipy.sparse.linalg.cg``)
on H p = b (b standard normal, seeded) to a relative residual of 1e-6, unpreconditioned, with the
incomplete Cholesky factorization of ``optimizers.preconditioning`` and with pyamg's smoothed
aggregation V-cycle (``smoothed_aggregation_solver(H).aspreconditioner()``): the setup seconds
of the symbolic analysis, once per pattern (the incomplete Cholesky's), and of the setup, once per
Hessian (its factorization; the smoothed aggregation hierarchy), iterations, the CG seconds and
setup + CG, medians of the rounds. Unpreconditioned CG stops at ``CG_MAXITER`` iterations.

Run: python benchmarks/bench_factorizations.py [--quick] [--no-direct] [--no-preconditioners]
     [--matrices DIR] [--repeats N] [--limit SECONDS] [--only NAME ...]
(--quick: the matrices with n <= 2 x 10^5 only; --only: these matrices, in this order; BLAS,
OpenMP and MKL run one thread each unless the environment says otherwise. The whole run takes
about an hour and a half on an idle machine of 2 cores; about 4 GB of memory.)
"""
from __future__ import annotations

import os

for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402
import scipy.sparse.linalg  # noqa: E402

import autodiff as ad  # noqa: E402
from hessopt.problems import bounded  # noqa: E402
from optimizers.preconditioning import IncompleteCholesky  # noqa: E402

from common import optional  # noqa: E402

qdldl = optional("qdldl")
cholespy = optional("cholespy")
pypardiso = optional("pypardiso")
mumps = optional("mumps")
pymetis = optional("pymetis")
pyamg = optional("pyamg")
cvx = optional("kvxopt") or optional("cvxopt")
cvx_cholmod = optional(f"{cvx.__name__}.cholmod") if cvx is not None else None

NO_INERTIA = "factored; inertia not exposed"
DELTA = 1e-8          # the KKT matrix's regularizations, delta and delta_c
CG_RTOL = 1e-6
CG_MAXITER = 1000


# --- the problems --------------------------------------------------------------------------------

def energy13(x: np.ndarray) -> float:
    """A 2-D nonlinear energy on the unit square's m x m interior grid (zero boundary values, h =
    1/(m + 1)): h^2 sum [|grad_f u|^2 / 2 + (eps + |grad_c u|^2)^{3/2} / 3 + u^4 / 4 - u], grad_f
    the forward and grad_c the central differences; a p-Laplacian-like (p = 3, eps = 1e-2) term
    with a quartic one. The forward differences couple nearest neighbours, the central ones
    points two apart and diagonal neighbours: a 13-point Hessian."""
    m = int(round(np.sqrt(x.size)))
    h = 1.0 / (m + 1)
    u = np.pad(x.reshape(m, m), 1)
    forward_x = (u[1:, 1:-1] - u[:-1, 1:-1]) / h
    forward_y = (u[1:-1, 1:] - u[1:-1, :-1]) / h
    central_x = (u[2:, 1:-1] - u[:-2, 1:-1]) / (2 * h)
    central_y = (u[1:-1, 2:] - u[1:-1, :-2]) / (2 * h)
    inner = u[1:-1, 1:-1]
    return h * h * (0.5 * np.sum(forward_x ** 2) + 0.5 * np.sum(forward_y ** 2)
                    + np.sum((1e-2 + central_x ** 2 + central_y ** 2) ** 1.5) / 3
                    + 0.25 * np.sum(inner ** 4) - np.sum(inner))


def energy3d(x: np.ndarray) -> float:
    """h^3 sum [|grad_f u|^2 / 2 + u^4 / 4 - u] on the m^3 interior grid of the unit cube (zero
    boundary values): a 7-point Laplacian plus a diagonal."""
    m = int(round(x.size ** (1 / 3)))
    h = 1.0 / (m + 1)
    u = np.pad(x.reshape(m, m, m), 1)
    gradient = sum(np.sum((u[tuple(slice(1, None) if a == axis else slice(1, -1) for a in range(3))]
                           - u[tuple(slice(None, -1) if a == axis else slice(1, -1) for a in range(3))]) ** 2)
                   for axis in range(3)) / (h * h)
    inner = u[1:-1, 1:-1, 1:-1]
    return h ** 3 * (0.5 * gradient + 0.25 * np.sum(inner ** 4) - np.sum(inner))


def rosenbrock(x: np.ndarray) -> float:
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def arwhead(x: np.ndarray) -> float:
    return np.sum(-4 * x[:-1] + 3) + np.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2)


def hessian_at(f: Callable, x: np.ndarray) -> scipy.sparse.csc_matrix:
    return ad.sparse_hessian(f)(x)


def minimal_surface(side: int) -> scipy.sparse.csc_matrix:
    problem = bounded("minimal_surface", side * side)
    return hessian_at(problem.fun, np.array(problem.x0))


def grid_point(n: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(0.0, 1.0, n)


def _kkt_blocks(side: int) -> tuple[scipy.sparse.csc_matrix, scipy.sparse.csr_matrix]:
    """:func:`energy13`'s Hessian H on side^2 nodes and J, one row u[i + 1, j] - u[i, j] a pair of
    horizontally adjacent nodes."""
    h = hessian_at(energy13, grid_point(side * side))
    difference = scipy.sparse.diags([-np.ones(side - 1), np.ones(side - 1)], [0, 1], shape=(side - 1, side))
    return h, scipy.sparse.kron(difference, scipy.sparse.eye(side), format="csr")


def kkt(side: int) -> scipy.sparse.csc_matrix:
    """[[H + delta I, J^T], [J, -delta_c I]] (:func:`_kkt_blocks`)."""
    h, j = _kkt_blocks(side)
    n, m = h.shape[0], j.shape[0]
    return scipy.sparse.bmat([[h + DELTA * scipy.sparse.eye(n), j.T], [j, -DELTA * scipy.sparse.eye(m)]],
                             format="csc")


def kkt_schur(side: int) -> scipy.sparse.csc_matrix:
    """H + delta I + J^T J / delta_c, the Schur complement of -delta_c I in :func:`kkt`: the KKT
    matrix has inertia (n, m, 0) exactly when this is positive definite (Haynsworth), so a
    Cholesky factorization of it is an inertia test."""
    h, j = _kkt_blocks(side)
    return (h + DELTA * scipy.sparse.eye(h.shape[0]) + (j.T @ j) / DELTA).tocsc()


# name: (builder, n)
MATRICES = {
    "13-point energy 300^2": (lambda: hessian_at(energy13, grid_point(300 ** 2)), 300 ** 2),
    "KKT 13-point 300^2": (lambda: kkt(300), 300 ** 2 + 300 * 299),
    "KKT Schur 13-point 300^2": (lambda: kkt_schur(300), 300 ** 2),
    "3-D 7-point 50^3": (lambda: hessian_at(energy3d, grid_point(50 ** 3)), 50 ** 3),
    "chained Rosenbrock 10^6": (lambda: hessian_at(rosenbrock, np.full(10 ** 6, 1.2)), 10 ** 6),
    "ARWHEAD 10^6": (lambda: hessian_at(arwhead, np.ones(10 ** 6)), 10 ** 6),
    "minimal surface 1000^2": (lambda: minimal_surface(1000), 10 ** 6),
    "13-point energy 1000^2": (lambda: hessian_at(energy13, grid_point(1000 ** 2)), 10 ** 6),
    "3-D 7-point 100^3": (lambda: hessian_at(energy3d, grid_point(100 ** 3)), 10 ** 6),
}
KKT = {"KKT 13-point 300^2"}
GRIDS = ("minimal surface 1000^2", "13-point energy 300^2", "13-point energy 1000^2", "3-D 7-point 50^3",
         "3-D 7-point 100^3")
# A library is not run on a matrix where its refactorization time on a smaller one of the family
# projects over LIMIT seconds: (the smaller matrix, the growth of the time). On 3-D grids nested
# dissection's work grows like n^2 (George 1973; Lipton, Rose & Tarjan 1979), 64 times from 50^3
# to 100^3, and minimum degree's no slower.
PROJECTED_FROM = {"3-D 7-point 100^3": ("3-D 7-point 50^3", 64.0)}
LIMIT = 600.0
# A library whose first factorization of a matrix takes more than this many seconds is timed once
# there (one round, its refactorization taken as the first: marked "~"), to keep the run within an hour.
SLOW = 60.0


def load(name: str, directory: Path) -> scipy.sparse.csc_matrix:
    """The matrix ``name``, from ``directory`` where it was saved, else built and saved there."""
    path = directory / (name.replace(" ", "_").replace("^", "e").replace("-", "") + ".npz")
    if path.exists():
        return scipy.sparse.load_npz(path).tocsc()
    matrix = scipy.sparse.csc_matrix(MATRICES[name][0]())
    matrix.sort_indices()
    scipy.sparse.save_npz(path, matrix)
    return matrix


# --- the libraries ---------------------------------------------------------------------------------
# Each factorizes a symmetric CSC matrix: ``analyse(a)`` the first time (ordering, symbolic and
# numeric factorization), ``refactor(a)`` for a matrix of the same pattern; both return whether it
# is positive definite (Cholesky) or its inertia (LDL^T); ``solve(b)``; ``factor_nonzeros()``.


class Qdldl:
    name, indefinite = "qdldl", True

    def analyse(self, a, inertia):
        self.solver = qdldl.Solver(scipy.sparse.triu(a, format="csc"), upper=True)
        return self._result(inertia)

    def refactor(self, a, inertia):
        self.solver.update(scipy.sparse.triu(a, format="csc"), upper=True)
        return self._result(inertia)

    def _result(self, inertia):
        pivots = self.solver.factors()[1]
        return _signs(pivots) if inertia else bool(np.all(pivots > 0))

    def solve(self, b):
        return self.solver.solve(b)

    def factor_nonzeros(self):
        return self.solver.factors()[0].nnz


class SuperLU:
    name, indefinite = "superlu", True

    def analyse(self, a, inertia):
        self.lu = scipy.sparse.linalg.splu(a, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                           options={"SymmetricMode": True})
        pivots = self.lu.U.diagonal()
        return _signs(pivots) if inertia else bool(np.all(pivots > 0))

    refactor = analyse

    def solve(self, b):
        return self.lu.solve(b)

    def factor_nonzeros(self):
        return self.lu.L.nnz + self.lu.U.nnz


class Cholmod:
    """CHOLMOD through kvxopt/cvxopt: supernodal Cholesky, or simplicial LDL^T for the KKT matrix."""
    name, indefinite = "cholmod", True
    ordering = None   # CHOLMOD's AMD

    def _matrix(self, a):
        lower = scipy.sparse.tril(a, format="csc")
        return cvx.spmatrix(cvx.matrix(lower.data), cvx.matrix(lower.indices.astype(int)),
                            cvx.matrix(np.repeat(np.arange(a.shape[0]), np.diff(lower.indptr))), a.shape)

    def analyse(self, a, inertia):
        cvx_cholmod.options["supernodal"] = 0 if inertia else 2
        matrix = self._matrix(a)
        if self.ordering is None:
            self.factor = cvx_cholmod.symbolic(matrix, uplo="L")
        else:
            self.factor = cvx_cholmod.symbolic(matrix, p=cvx.matrix(self.ordering(a).astype(int)), uplo="L")
        return self._numeric(matrix, inertia)

    def refactor(self, a, inertia):
        return self._numeric(self._matrix(a), inertia)

    def _numeric(self, matrix, inertia):
        cvx_cholmod.options["supernodal"] = 0 if inertia else 2
        self.inertia = inertia
        try:
            cvx_cholmod.numeric(matrix, self.factor)
        except ArithmeticError:   # a pivot not positive (Cholesky), zero (LDL^T)
            return None if inertia else False
        # getfactor turns an LDL^T factor into L L^T, which fails on an indefinite D: no inertia
        return NO_INERTIA if inertia else True

    def solve(self, b):
        x = cvx.matrix(np.array(b, dtype=float))
        cvx_cholmod.solve(self.factor, x)
        return np.array(x).ravel()

    def factor_nonzeros(self):
        if self.inertia or not hasattr(cvx_cholmod, "getfactor"):
            return None
        factor = cvx_cholmod.getfactor(self.factor)
        return (factor.V.size[0] + factor.size[0]) // 2   # the lower triangle, with the diagonal


class CholmodMetis(Cholmod):
    name = "cholmod+metis"

    @staticmethod
    def ordering(a):
        upper_and_lower = scipy.sparse.csr_matrix(a)
        upper_and_lower.setdiag(0)
        upper_and_lower.eliminate_zeros()
        graph = pymetis.CSRAdjacency(adj_starts=upper_and_lower.indptr, adjacent=upper_and_lower.indices)
        permutation, _ = pymetis.nested_dissection(graph)   # row k of P A P^T is row permutation[k] of A
        return np.asarray(permutation)


class Cholespy:
    name, indefinite = "cholespy", False

    def analyse(self, a, inertia):
        self.n = a.shape[0]
        try:
            self.solver = cholespy.CholeskySolverD(self.n, a.indptr.astype(np.int32), a.indices.astype(np.int32),
                                                   a.data, cholespy.MatrixType.CSC)
        except ValueError:   # "Matrix is not positive definite!"
            return False
        return True

    refactor = analyse

    def solve(self, b):
        x = np.zeros_like(b)
        self.solver.solve(np.ascontiguousarray(b, dtype=float), x)
        return x

    def factor_nonzeros(self):
        return None


class Pardiso:
    """MKL PARDISO through pypardiso's solver object, its phases called one by one (pypardiso's
    ``factorize`` runs analysis and factorization together and keeps a copy of the matrix)."""
    name, indefinite = "pardiso", True

    def analyse(self, a, inertia):
        self.solver = pypardiso.PyPardisoSolver(mtype=-2 if inertia else 2)
        self.upper = scipy.sparse.triu(a, format="csr")
        self.upper.sort_indices()
        self._phase(11, self.upper)
        return self.refactor(a, inertia)

    def refactor(self, a, inertia):
        self.upper = scipy.sparse.triu(a, format="csr")
        self.upper.sort_indices()
        try:
            self._phase(22, self.upper)
        except pypardiso.pardiso_wrapper.PyPardisoError:   # -4: a pivot not positive (mtype 2)
            return None if inertia else False
        if not inertia:
            return True
        positive, negative = int(self.solver.get_iparm(22)), int(self.solver.get_iparm(23))
        return positive, negative, a.shape[0] - positive - negative

    def _phase(self, phase, matrix, b=None):
        self.solver.set_phase(phase)
        return self.solver._call_pardiso(matrix, np.zeros((matrix.shape[0], 1)) if b is None else b)

    def solve(self, b):
        return self._phase(33, self.upper, np.asfortranarray(b.reshape(-1, 1))).ravel()

    def factor_nonzeros(self):
        return int(self.solver.get_iparm(18))

    def close(self):
        self.solver.free_memory(everything=True)


class Mumps:
    name, indefinite = "mumps", True

    def analyse(self, a, inertia):
        self.context = mumps.Context()
        self.context.set_matrix(a, symmetric=True)
        self.context.mumps_instance.icntl[24] = 1     # detect null pivots: INFOG(28)
        self.context.analyze(ordering="metis")
        return self._factor(inertia)

    def refactor(self, a, inertia):
        self.context.set_matrix(a, symmetric=True)
        return self._factor(inertia)

    def _factor(self, inertia):
        self.context.factor(reuse_analysis=True)
        info = self.context.mumps_instance.infog
        negative, null = int(info[12]), int(info[28])
        if inertia:
            return self.context.n - negative - null, negative, null
        return negative == 0 and null == 0

    def solve(self, b):
        return np.real(self.context.solve(b))

    def factor_nonzeros(self):
        info = self.context.mumps_instance.infog
        return int(info[29]) if info[29] >= 0 else -int(info[29]) * 10 ** 6

    def close(self):
        self.context.__exit__(None, None, None)


def _signs(pivots: np.ndarray) -> tuple[int, int, int]:
    return int(np.sum(pivots > 0)), int(np.sum(pivots < 0)), int(np.sum(pivots == 0))


LIBRARIES = [(Qdldl, qdldl), (SuperLU, scipy), (Cholmod, cvx), (CholmodMetis, cvx and pymetis),
             (Cholespy, cholespy), (Pardiso, pypardiso), (Mumps, mumps)]
# Where a library is not run, and why.
SKIPPED = {("superlu", "ARWHEAD 10^6"): "MMD on A^T + A is quadratic in n on a dense row (13 s at 10^5)"}


def installed_libraries() -> list:
    found = []
    for library, module in LIBRARIES:
        if module is None:
            print(f"  {library.name}: not installed, skipped")
        else:
            found.append(library)
    return found


# --- table 1 ---------------------------------------------------------------------------------------

def peak_megabytes(step: Callable) -> tuple[object, float]:
    """``step()`` and the growth of the process's peak resident set during it (Linux: VmHWM is
    reset through /proc/self/clear_refs; NaN elsewhere)."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
        before = _status_kilobytes("VmRSS")
    except OSError:
        return step(), float("nan")
    answer = step()
    return answer, (_status_kilobytes("VmHWM") - before) / 1024


def _status_kilobytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def timed(step: Callable) -> tuple[object, float]:
    start = time.perf_counter()
    answer = step()
    return answer, time.perf_counter() - start


def one_round(library, a, inertia: bool, b: np.ndarray, first_round: bool) -> dict:
    """One library's first factorization, refactorization and solve on a."""
    solver = library()
    if first_round:
        (answer, first), memory = peak_megabytes(lambda: timed(lambda: solver.analyse(a, inertia)))
    else:
        (answer, first), memory = timed(lambda: solver.analyse(a, inertia)), float("nan")
    if library.refactor is library.analyse or first > SLOW:
        refactor = first    # a slow one's numeric factorization is most of its first one: not run again
    else:
        answer, refactor = timed(lambda: solver.refactor(a, inertia))
    x, solve = timed(lambda: solver.solve(b)) if answer not in (False, None) else (None, float("nan"))
    row = {"first": first, "refactor": refactor, "solve": solve, "memory": memory, "answer": answer,
           "residual": float(np.linalg.norm(a @ x - b) / np.linalg.norm(b)) if x is not None else float("nan")}
    if first_round:
        row["nonzeros"] = solver.factor_nonzeros()
    if hasattr(solver, "close"):
        solver.close()
    return row


def child_round(library_name: str, name: str, directory: Path, first_round: bool) -> dict | str:
    """:func:`one_round` in a fresh process (its peak memory its own; a factorization that does not
    finish within :data:`LIMIT` seconds is ended there): the row, or why there is none."""
    command = [sys.executable, __file__, "--child", library_name, "--matrices", str(directory), "--only", name]
    try:
        done = subprocess.run(command + (["--first"] if first_round else []), capture_output=True, text=True,
                              timeout=LIMIT, check=True)
    except subprocess.TimeoutExpired:
        return f"not finished in {LIMIT:g} s"
    except subprocess.CalledProcessError as error:
        return f"failed: {error.stderr.strip().splitlines()[-1][:120]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def child(library_name: str, name: str, directory: Path, first_round: bool) -> None:
    """The child's side of :func:`child_round`: one round, printed as a JSON line."""
    library = next(lib for lib, _ in LIBRARIES if lib.name == library_name)
    a = load(name, directory)
    b = np.random.default_rng(1).standard_normal(a.shape[0])
    row = one_round(library, a, name in KKT, b, first_round)
    print(json.dumps(dict(row, answer=str(row["answer"]))))


def direct_table(names: list, directory: Path, repeats: int) -> None:
    libraries = installed_libraries()
    measured: dict = {}
    print(f"\n{'matrix':<24}{'n':>10}{'nnz':>12}  {'library':<14}{'first s':>9}{'refactor s':>11}{'/ qdldl':>8}"
          f"{'nnz(L)':>13}{'solve ms':>10}{'peak MB':>9}{'residual':>10}  answer")
    for name in names:
        a = load(name, directory)
        inertia = name in KKT
        skipped = {lib.name: _skip_reason(lib, name, inertia, measured) for lib in libraries}
        rounds: dict = {lib.name: [] for lib in libraries if skipped[lib.name] is None}
        for index in range(repeats):
            for library, rows in rounds.items():
                if skipped[library] is None and (index == 0 or rows[0]["first"] <= SLOW):
                    row = child_round(library, name, directory, index == 0)
                    if isinstance(row, str):
                        skipped[library] = row
                    else:
                        rows.append(row)
        for library, rows in rounds.items():   # one not finished counts as infinitely slow
            measured[library, name] = statistics.median(row["refactor"] for row in rows) if rows else math.inf
        _print_rows(name, a, {library: rows for library, rows in rounds.items() if rows})
        for library, reason in skipped.items():
            if reason is not None:
                print(f"{'':<46}{library:<14}skipped: {reason}")


def _skip_reason(library, name: str, inertia: bool, measured: dict) -> str | None:
    """Why ``library`` is not run on matrix ``name`` (None: it is), ``measured`` the refactorization
    seconds of the matrices before."""
    if (library.name, name) in SKIPPED:
        return SKIPPED[library.name, name]
    if inertia and not library.indefinite:
        return "no LDL^T of an indefinite matrix"
    smaller, growth = PROJECTED_FROM.get(name, (None, 0.0))
    if (library.name, smaller) in measured and measured[library.name, smaller] * growth > LIMIT:
        if math.isinf(measured[library.name, smaller]):
            return f"not finished in {LIMIT:g} s on {smaller}"
        return (f"projected {measured[library.name, smaller] * growth:,.0f} s a factorization "
                f"({growth:g} x {smaller}'s)")
    return None


def _print_rows(name: str, a, rounds: dict) -> None:
    base = rounds.get("qdldl")
    for index, (library, rows) in enumerate(rounds.items()):
        median = {key: statistics.median(row[key] for row in rows) for key in ("first", "refactor", "solve")}
        ratio = (statistics.median(r["refactor"] / q["refactor"] for r, q in zip(rows, base))
                 if base is not None else float("nan"))
        nonzeros = rows[0]["nonzeros"]
        lead = f"{name:<24}{a.shape[0]:>10,}{a.nnz:>12,}" if index == 0 else " " * 46
        once = "~" if rows[0]["first"] > SLOW else " "
        print(f"{lead}  {library:<14}{median['first']:>9.2f}{median['refactor']:>10.2f}{once}{ratio:>8.2f}"
              f"{'-' if nonzeros is None else format(nonzeros, ','):>13}{1e3 * median['solve']:>10.1f}"
              f"{rows[0]['memory']:>9.0f}{rows[0]['residual']:>10.1e}  {rows[0]['answer']}", flush=True)
    print(f"{'':<46}(rounds: " + ", ".join(f"{library} {len(rows)}" for library, rows in rounds.items()) + ")")


# --- table 2 ---------------------------------------------------------------------------------------

class IncompleteCholeskyPreconditioner:
    """Today's preconditioner: its symbolic analysis once per pattern, a factorization an iterate."""
    label = "incomplete Cholesky"

    def analyse(self, a):
        self.factorization = IncompleteCholesky()
        self.factorization.analyse(a)

    def setup(self, a):
        return scipy.sparse.linalg.LinearOperator(a.shape, self.factorization.factor(a).solve)


class SmoothedAggregation:
    """pyamg's smoothed aggregation hierarchy (built anew for each matrix), one V-cycle a solve."""
    label = "pyamg SA"

    def analyse(self, a):
        pass

    def setup(self, a):
        return pyamg.smoothed_aggregation_solver(a.tocsr()).aspreconditioner(cycle="V")


class Unpreconditioned:
    label = "none"

    def analyse(self, a):
        pass

    def setup(self, a):
        return None


def cg_round(a, b: np.ndarray, preconditioner) -> dict:
    """One preconditioner's analysis, setup and CG solve."""
    _, analysis = timed(lambda: preconditioner.analyse(a))
    operator, setup = timed(lambda: preconditioner.setup(a))
    iterations = [0]

    def count(_):
        iterations[0] += 1
    (x, info), seconds = timed(lambda: scipy.sparse.linalg.cg(a, b, rtol=CG_RTOL, M=operator, maxiter=CG_MAXITER,
                                                              callback=count))
    return {"analysis": analysis, "setup": setup, "cg": seconds, "iterations": iterations[0], "converged": info == 0,
            "residual": float(np.linalg.norm(a @ x - b) / np.linalg.norm(b))}


def preconditioner_table(names: list, directory: Path, repeats: int) -> None:
    kinds = [Unpreconditioned, IncompleteCholeskyPreconditioner]
    if pyamg is None:
        print("  pyamg: not installed, skipped")
    else:
        kinds.append(SmoothedAggregation)
    print(f"\n{'matrix':<24}{'n':>10}  {'preconditioner':<20}{'analysis s':>11}{'setup s':>9}{'iterations':>11}"
          f"{'CG s':>8}{'setup + CG':>11}{'residual':>10}")
    for name in names:
        a = load(name, directory)
        b = np.random.default_rng(2).standard_normal(a.shape[0])
        rounds = {kind.label: [] for kind in kinds}
        for index in range(repeats):
            for kind in kinds:
                first = rounds[kind.label][0] if index else None
                if first is None or first["analysis"] + first["setup"] + first["cg"] <= SLOW:
                    rounds[kind.label].append(cg_round(a, b, kind()))
        for index, (label, rows) in enumerate(rounds.items()):
            analysis, setup, cg = (statistics.median(row[key] for row in rows) for key in ("analysis", "setup", "cg"))
            lead = f"{name:<24}{a.shape[0]:>10,}" if index == 0 else " " * 34
            iterations = f"{rows[0]['iterations']}{'' if rows[0]['converged'] else '+'}"
            print(f"{lead}  {label:<20}{analysis:>11.2f}{setup:>9.2f}{iterations:>11}{cg:>8.2f}{setup + cg:>11.2f}"
                  f"{rows[0]['residual']:>10.1e}", flush=True)
    print(f"(+: not converged to {CG_RTOL:g} in {CG_MAXITER} iterations)")


def main() -> None:
    global LIMIT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the matrices with n <= 10^5")
    parser.add_argument("--no-direct", action="store_true", help="skip table 1")
    parser.add_argument("--no-preconditioners", action="store_true", help="skip table 2")
    parser.add_argument("--matrices", type=Path, default=Path(tempfile.gettempdir()) / "hessopt_matrices",
                        help="where the matrices are cached (.npz)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=float, default=LIMIT, help="seconds a library may take on a matrix")
    parser.add_argument("--only", nargs="*", help="these matrices (names as printed)")
    parser.add_argument("--child", help=argparse.SUPPRESS)    # one round of this library in this process
    parser.add_argument("--first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    LIMIT = args.limit
    args.matrices.mkdir(parents=True, exist_ok=True)
    if args.child:
        return child(args.child, args.only[0], args.matrices, args.first)
    names = args.only or [name for name, (_, n) in MATRICES.items() if not args.quick or n <= 2 * 10 ** 5]
    print("threads: " + ", ".join(f"{v}={os.environ[v]}" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                                    "MKL_NUM_THREADS")))
    if not args.no_direct:
        direct_table(names, args.matrices, args.repeats)
    if not args.no_preconditioners:
        preconditioner_table([name for name in names if name in GRIDS], args.matrices, args.repeats)


if __name__ == "__main__":
    sys.exit(main())
