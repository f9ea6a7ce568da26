"""The shared Krylov parts: Lanczos against dense eigendecompositions and its defining identities,
CG against dense solves, the forcing term and the negative-curvature test."""
import numpy as np
import pytest

from optimizers.krylov import (
    FORCING_CAP,
    ConjugateGradient,
    Lanczos,
    clearly_negative,
    dense_leftmost_curvature,
    forcing_term,
    leftmost_curvature,
    negative_curvature,
)


def symmetric(n, seed=0, definite=False):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    return (A @ A.T + np.eye(n) if definite else A + A.T), rng.standard_normal(n)


def tridiagonal(lanczos):
    k = lanczos.size
    return (np.diag(lanczos.alpha) + np.diag(lanczos.beta, 1) + np.diag(lanczos.beta, -1)
            if k > 1 else np.diag(lanczos.alpha))


@pytest.mark.parametrize("steps", [1, 3, 7])
def test_lanczos_relations_hold(steps):
    H, v = symmetric(12)
    lanczos = Lanczos(lambda x: H @ x, v).run(steps)
    Q, T = lanczos.basis.T, tridiagonal(lanczos)
    assert lanczos.size == steps and Q.shape == (12, steps)
    np.testing.assert_allclose(Q.T @ Q, np.eye(steps), atol=1e-12)
    np.testing.assert_allclose(Q[:, 0], v / np.linalg.norm(v), atol=1e-14)
    np.testing.assert_allclose(Q.T @ H @ Q, T, atol=1e-10)
    # H Q_k - Q_k T_k = next_beta q_{k+1} e_k^T: only the last column, of norm next_beta
    residual = H @ Q - Q @ T
    np.testing.assert_allclose(residual[:, :-1], 0.0, atol=1e-10)
    assert np.linalg.norm(residual[:, -1]) == pytest.approx(lanczos.next_beta, rel=1e-10)


def test_lanczos_run_to_n_steps_gives_the_spectrum_and_is_exhausted():
    H, v = symmetric(9, seed=1)
    lanczos = Lanczos(lambda x: H @ x, v).run(50)
    assert lanczos.size == 9 and lanczos.exhausted and lanczos.next_beta == 0.0
    theta, Y = lanczos.ritz()
    np.testing.assert_allclose(theta, np.linalg.eigvalsh(H), atol=1e-10)
    U = lanczos.combine(Y)   # all Ritz vectors as columns: the eigenvectors
    np.testing.assert_allclose(H @ U, U * theta, atol=1e-10)
    with pytest.raises(RuntimeError, match="exhausted"):
        lanczos.extend()


def test_lanczos_stops_on_an_invariant_subspace():
    H = np.diag(np.arange(1.0, 9.0))
    start = np.zeros(8)
    start[[1, 4, 6]] = [1.0, 2.0, -1.0]   # in the span of three eigenvectors
    lanczos = Lanczos(lambda x: H @ x, start).run(8)
    assert lanczos.size == 3 and lanczos.exhausted
    np.testing.assert_allclose(lanczos.ritz()[0], [2.0, 5.0, 7.0], atol=1e-12)


def test_ritz_residuals_without_products():
    H, v = symmetric(15, seed=2)
    lanczos = Lanczos(lambda x: H @ x, v).run(6)
    theta, Y = lanczos.ritz()
    U = lanczos.combine(Y)
    direct = np.linalg.norm(H @ U - U * theta, axis=0)
    np.testing.assert_allclose(lanczos.residuals(Y), direct, rtol=1e-8, atol=1e-12)
    u, y = lanczos.combine(Y[:, 0]), Y[:, 0]
    assert u @ H @ u == pytest.approx(theta[0]) and np.linalg.norm(u) == pytest.approx(1.0)
    assert lanczos.residuals(y) == pytest.approx(np.linalg.norm(H @ u - theta[0] * u), rel=1e-8)


@pytest.mark.parametrize("reorthogonalize", [True, False])
def test_lanczos_is_gauss_quadrature_for_the_start_vector(reorthogonalize):
    # v^T H^j v = ||v||^2 sum_i Y[0, i]^2 theta_i^j for j <= 2k - 1 (Golub & Meurant): the rule
    # stochastic Lanczos quadrature is built on, with or without reorthogonalization.
    H, v = symmetric(40, seed=3, definite=True)
    H /= np.linalg.norm(H, 2)
    k = 5
    lanczos = Lanczos(lambda x: H @ x, v, reorthogonalize=reorthogonalize).run(k)
    theta, Y = lanczos.ritz()
    weights = (v @ v) * Y[0] ** 2
    for j in range(2 * k):
        exact = v @ np.linalg.matrix_power(H, j) @ v
        assert weights @ theta ** j == pytest.approx(exact, rel=1e-9)


def test_lanczos_without_reorthogonalization_matches_with_it_for_a_few_steps():
    H, v = symmetric(30, seed=4)
    full = Lanczos(lambda x: H @ x, v).run(5)
    plain = Lanczos(lambda x: H @ x, v, reorthogonalize=False).run(5)
    np.testing.assert_allclose(plain.alpha, full.alpha, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(plain.beta, full.beta, rtol=1e-9)


def test_lanczos_extremal_ritz_values_converge_with_reorthogonalization():
    eigenvalues = np.concatenate([[-3.0, -2.5], np.linspace(0.0, 1.0, 200), [4.0, 6.0]])
    H = np.diag(eigenvalues)
    lanczos = Lanczos(lambda x: H @ x, np.random.default_rng(5).standard_normal(204)).run(40)
    theta = lanczos.ritz()[0]
    np.testing.assert_allclose(theta[:2], [-3.0, -2.5], atol=1e-8)
    np.testing.assert_allclose(theta[-2:], [4.0, 6.0], atol=1e-8)


@pytest.mark.parametrize("start", [np.zeros(3), np.array([1.0, np.nan, 0.0])])
def test_lanczos_refuses_a_zero_or_nonfinite_start(start):
    with pytest.raises(ValueError, match="start vector"):
        Lanczos(lambda x: x, start)


def test_dense_and_lanczos_leftmost_curvature_agree():
    H = np.diag(np.linspace(-2.0, 3.0, 8))
    theta, u, scale = dense_leftmost_curvature(H)
    assert (theta, scale) == (-2.0, 3.0) and abs(u[0]) == pytest.approx(1.0)
    theta, u, scale = leftmost_curvature(lambda v: H @ v, 8, 8)
    assert theta < 0 and u @ H @ u == pytest.approx(theta)
    assert abs(theta + 2.0) <= 0.1 * 2.0 and scale <= 3.0


# --- conjugate gradients ------------------------------------------------------------------------

@pytest.mark.parametrize("shift", [0.0, 2.5])
def test_cg_solves_a_positive_definite_system_in_n_steps(shift):
    H, g = symmetric(7, seed=6, definite=True)
    A = H + shift * np.eye(7)
    cg = ConjugateGradient(lambda v: H @ v, g, shift=shift)
    for _ in range(7):
        segment = cg.step()
        assert np.isfinite(segment.length)
        p = segment.start + segment.length * segment.direction
        np.testing.assert_allclose(p, cg.p)
        assert segment.model(segment.length) == pytest.approx(g @ p + 0.5 * p @ A @ p)
        assert segment.end_norm == pytest.approx(np.linalg.norm(p))
    np.testing.assert_allclose(cg.p, -np.linalg.solve(A, g), rtol=1e-8)
    np.testing.assert_allclose(cg.r, A @ cg.p + g, atol=1e-8)
    assert cg.value == pytest.approx(g @ cg.p + 0.5 * cg.p @ A @ cg.p)
    assert cg.pAp == pytest.approx(cg.p @ A @ cg.p)
    assert cg.iterations == 7 and not cg.negative_curvature


def test_cg_without_kept_segments_updates_in_place_with_the_same_iterates():
    H, g = symmetric(12, seed=9, definite=True)
    kept, live = (ConjugateGradient(lambda v: H @ v, g, keep_segments=keep) for keep in (True, False))
    segments = [kept.step() for _ in range(6)]
    for _ in range(6):
        live.step()
    np.testing.assert_array_equal(live.p, kept.p)    # bit for bit
    np.testing.assert_array_equal(live.d, kept.d)
    for a, b in zip(segments, segments[1:]):         # kept segments still chain up
        assert b.start is a.end
        np.testing.assert_allclose(a.start + a.length * a.direction, b.start)


def test_cg_decreases_the_model_at_every_step():
    H, g = symmetric(20, seed=7, definite=True)
    cg = ConjugateGradient(lambda v: H @ v, g)
    values = [cg.value]
    for _ in range(10):
        cg.step()
        values.append(cg.value)
    assert all(b < a for a, b in zip(values, values[1:]))


def test_cg_warm_start_is_taken_only_when_it_is_better_than_zero():
    H, g = symmetric(6, seed=8, definite=True)
    good = -0.9 * np.linalg.solve(H, g)
    cg = ConjugateGradient(lambda v: H @ v, g, p0=good)
    np.testing.assert_allclose(cg.p, good)
    np.testing.assert_allclose(cg.r, H @ good + g)
    bad = -good   # uphill: phi(bad) > 0
    assert not ConjugateGradient(lambda v: H @ v, g, p0=bad).p.any()


def test_cg_stops_on_negative_curvature_without_moving():
    H = np.diag([1.0, -2.0, 3.0])
    g = np.array([0.0, 1.0, 0.0])   # the first direction, -g, has curvature -2
    cg = ConjugateGradient(lambda v: H @ v, g)
    segment = cg.step()
    assert cg.negative_curvature and segment.length == np.inf
    assert segment.curvature == pytest.approx(-2.0) and segment.slope == pytest.approx(-1.0)
    assert not cg.p.any() and cg.iterations == 0
    with pytest.raises(RuntimeError, match="non-positive curvature"):
        cg.step()


@pytest.mark.parametrize("margin, flagged", [(0.0, False), (1e-10, True)])
def test_cg_curvature_margin_decides_about_tiny_positive_curvature(margin, flagged):
    # the second direction has curvature 1e-12 relative to the first's 1
    H = np.diag([1.0, 1e-12])
    g = np.array([1.0, 1.0])
    cg = ConjugateGradient(lambda v: H @ v, g, curvature_margin=margin)
    cg.step()
    cg.step()
    assert cg.negative_curvature == flagged


# --- forcing term and the negative-curvature test -----------------------------------------------

def test_forcing_term_is_capped_and_tends_to_zero():
    assert forcing_term(100.0) == FORCING_CAP == 0.25
    assert forcing_term(1e-6) == pytest.approx(1e-3)


@pytest.mark.parametrize("scale", [1e-12, 1.0, 1e12])
def test_saddle_test_is_scale_invariant(scale):
    assert clearly_negative(-1e-3 * scale, scale)
    assert not clearly_negative(-1e-12 * scale, scale)
    assert not clearly_negative(0.5 * scale, scale)


def test_negative_curvature_margin_sign_and_nan():
    assert negative_curvature(1e-14, 1.0, 1e-13)        # within rounding of zero counts
    assert not negative_curvature(-1e-14, 1.0, -1e-13)  # not clearly negative
    assert not negative_curvature(np.nan, 1.0, 1.0)
