"""hessopt.plot renders headless and its Axes hold what they should."""
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import SymLogNorm  # noqa: E402

import autodiff as ad  # noqa: E402
import autodiff.numpy as anp  # noqa: E402
import hessopt  # noqa: E402
import hessopt.plot as hplot  # noqa: E402
from hessopt import curvature, nn, problems  # noqa: E402
from hessopt.nn import losses  # noqa: E402
from hessopt.suite import run_hessopt  # noqa: E402

rng = np.random.default_rng(0)
X = rng.standard_normal((12, 3))
T = rng.standard_normal((12, 2))
PARAMS = {"W1": rng.standard_normal((3, 4)), "b1": np.zeros(4), "W2": rng.standard_normal((4, 2))}


def mlp_loss(p):
    return anp.mean((anp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] - T) ** 2)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _rendered(ax):
    """Draw the figure (Agg) so that layout and text are computed too."""
    ax.figure.canvas.draw()
    return ax


# --- hessian_heatmap and jacobian_patches --------------------------------------------------------------

def test_heatmap_image_is_the_matrix_with_symmetric_colour_limits_and_a_colorbar():
    H = np.array([[2.0, -3.0, 0.5], [-3.0, 1.0, 0.0], [0.5, 0.0, -1.0]])
    ax = _rendered(hplot.hessian_heatmap(H))
    image = ax.images[0]
    assert np.array_equal(image.get_array(), H)
    assert image.get_clim() == (-3.0, 3.0)
    assert image.colorbar is not None and image.get_cmap().name.startswith("RdBu_r")


def test_heatmap_of_a_pytree_hessian_operator_draws_named_blocks():
    op = ad.hessian_operator(mlp_loss, PARAMS)
    fig, ax = plt.subplots()
    assert hplot.hessian_heatmap(op, ax=ax) is ax
    _rendered(ax)
    assert np.allclose(ax.images[0].get_array(), op.to_dense(), atol=0)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["W1", "b1", "W2"]
    boundaries = sorted({line.get_ydata()[0] for line in ax.lines if line.get_ydata()[0] ==
                         line.get_ydata()[1]})
    assert boundaries == [11.5, 15.5]        # after W1 (12 entries) and b1 (4)
    vmin, vmax = ax.images[0].get_clim()
    assert vmin == -vmax == -np.abs(op.to_dense()).max()


def test_heatmap_blocks_and_labels_can_be_given():
    ax = hplot.hessian_heatmap(np.eye(5), blocks=[2, 3], labels=["a", "b"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    with pytest.raises(ValueError, match="do not tile"):
        hplot.hessian_heatmap(np.eye(5), blocks=[2, 2])
    with pytest.raises(ValueError, match="2 labels for 1 blocks"):
        hplot.hessian_heatmap(np.eye(5), labels=["a", "b"], blocks=[5])


def test_heatmap_refuses_a_3d_array():
    with pytest.raises(ValueError, match=r"square 2-D matrix.*\(2, 2, 2\)"):
        hplot.hessian_heatmap(np.ones((2, 2, 2)))


def _drawn_labels(axis, renderer):
    """The tick labels an axis draws (those of ticks within its view), with their extents."""
    low, high = sorted(axis.get_view_interval())
    close = 1e-10 * (high - low)    # matplotlib draws a tick at the edge up to rounding
    return [(tick.label1, tick.label1.get_window_extent(renderer)) for tick in axis.get_major_ticks()
            if low - close <= tick.get_loc() <= high + close and tick.label1.get_visible()
            and tick.label1.get_text()]


def _inside_the_figure(ax):
    """The Axes with everything drawn around it (tick labels, axis labels, title) and the colorbar
    with its ticks and label lie inside the figure, and no two tick labels of an axis overlap (each
    label's extent as the renderer draws it)."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    colorbar = ax.images[0].colorbar.ax
    labels = [ax.xaxis.label, ax.yaxis.label, colorbar.yaxis.label]
    boxes = [ax.get_tightbbox(renderer), colorbar.get_tightbbox(renderer)] + \
        [label.get_window_extent(renderer) for label in labels]
    for axis in (ax.xaxis, ax.yaxis, colorbar.yaxis):
        drawn = _drawn_labels(axis, renderer)
        boxes += [box for _, box in drawn]
        for (first, a), (second, b) in zip(drawn, drawn[1:]):
            assert not a.overlaps(b), (first.get_text(), second.get_text(), a, b)
    for box in boxes:
        assert edge.x0 - 0.5 <= box.x0 and box.x1 <= edge.x1 + 0.5, (box, edge)
        assert edge.y0 - 0.5 <= box.y0 and box.y1 <= edge.y1 + 0.5, (box, edge)


def _named_network_operator():
    model = nn.Sequential([nn.Dense(6, "tanh", seed=0), nn.Dense(5, "tanh", seed=1), nn.Dense(3, seed=2)])
    x = rng.standard_normal((20, 8))
    model(x)
    labels = np.arange(20) % 3
    variables = model.trainable_variables
    return ad.hessian_operator(lambda: losses.softmax_cross_entropy(labels, model(x)), variables), variables


def test_heatmap_blocks_are_named_by_variables_and_long_names_stay_inside_the_figure():
    op, variables = _named_network_operator()
    for figsize in ((6.4, 4.8), (4.0, 3.0)):
        plt.rcParams["figure.figsize"] = figsize
        ax = hplot.hessian_heatmap(op)
        names = [v.name for v in variables]
        assert [t.get_text() for t in ax.get_xticklabels()] == names
        assert names[2].endswith("/kernel") and max(map(len, names)) >= len("dense_1/kernel")
        _inside_the_figure(ax)
    plt.rcParams["figure.figsize"] = matplotlib.rcParamsDefault["figure.figsize"]
    assert np.array_equal(ax.images[0].get_array(), op.to_dense())


def test_names_of_small_blocks_are_moved_apart_and_led_to_their_blocks_at_paper_size():
    """At a paper's column width the bias blocks are a few pixels high: their names move apart to
    a line's height each, and a line leads from each block's centre on the axis to its name."""
    op, variables = _named_network_operator()
    sizes = [v.numpy().size for v in variables]
    centres = np.cumsum(sizes) - np.asarray(sizes) / 2 - 0.5
    for own_figure in (True, False):     # a new figure (layout "tight"), or one constrained
        with plt.rc_context({"figure.figsize": (3.4, 3.0)}):
            ax = hplot.hessian_heatmap(op, ax=None if own_figure else
                                       plt.figure(layout="constrained").add_subplot(), norm="symlog")
        fig = ax.figure
        for dpi in (100, 300):
            fig.set_dpi(dpi)
            _inside_the_figure(ax)
            renderer = fig.canvas.get_renderer()
            for axis, along in ((ax.xaxis, 0), (ax.yaxis, 1)):
                leaders, = [c for c in ax.collections if getattr(c, "locator", None) is axis.major.locator]
                drawn = _drawn_labels(axis, renderer)
                assert [label.get_text() for label, _ in drawn] == [v.name for v in variables]
                starts = ax.transData.transform(np.column_stack([centres, centres]))[:, along]
                ticks = [tick.get_loc() for tick in axis.get_major_ticks()[:len(variables)]]
                names = ax.transData.transform(np.column_stack([ticks, ticks]))[:, along]
                for segment, start, name in zip(leaders.get_segments(), starts, names):
                    assert segment[0][along] == pytest.approx(start)       # at the block's centre
                    assert segment[-1][along] == pytest.approx(name)       # at its name
                    assert np.all(np.abs(np.subtract(segment, segment[0]))[:, 1 - along]
                                  <= (3 * 3.5 + 0.1) * dpi / 72)     # within the ticks' room
                font = drawn[0][0].get_fontsize() * dpi / 72
                assert np.abs(np.diff(names)).min() >= hplot.NAME_SPACING * font - 1e-6
                # at this size the small blocks' names had to move (else they would overlap)
                assert np.max(np.abs(names - starts)) > 0.25 * font


def test_spread_is_the_nearest_spacing_within_the_bounds():
    spread = hplot._spread(np.array([0.0, 1.0, 1.5, 10.0]), 2.0, -10.0, 20.0)
    # the crowded three 2 apart, least squares: p = (m - 2, m, m + 2) with m the mean of 0 + 2, 1, 1.5 - 2
    assert spread == pytest.approx([-7 / 6, 5 / 6, 17 / 6, 10.0])
    assert hplot._spread(np.array([0.0, 0.5]), 2.0, 0.0, 20.0) == pytest.approx([0.0, 2.0])
    no_room = hplot._spread(np.array([0.0, 0.5, 0.6]), 2.0, 0.0, 3.0)     # evenly over [0, 3]
    assert no_room == pytest.approx([0.0, 1.5, 3.0])
    assert hplot._spread(np.array([3.0, 7.0]), 2.0, 0.0, 9.0) == pytest.approx([3.0, 7.0])


def test_symlog_colorbar_ticks_zero_and_whole_decades_beyond_the_linear_part():
    H = np.diag([0.12, -3e-4, 1e-7, 0.0])
    ax = hplot.hessian_heatmap(H, norm="symlog")
    ticks = ax.images[0].colorbar.get_ticks()
    assert ticks == pytest.approx([-0.1, -0.01, -1e-3, 0.0, 1e-3, 0.01, 0.1], rel=1e-12)  # linthresh 1.2e-4
    ticks = hplot.hessian_heatmap(H, norm=SymLogNorm(1e-12)).images[0].colorbar.get_ticks()
    assert len(ticks) == 2 * hplot.SYMLOG_DECADES_TICKED + 1 and 0.1 in ticks and 0.0 in ticks
    _inside_the_figure(ax)


def test_heatmap_of_a_nested_pytree_names_the_leaves_by_key_path():
    params = {"hidden": {"W": PARAMS["W1"], "b": PARAMS["b1"]}, "out": PARAMS["W2"]}
    op = ad.hessian_operator(lambda p: mlp_loss({"W1": p["hidden"]["W"], "b1": p["hidden"]["b"],
                                                  "W2": p["out"]}), params)
    ax = hplot.hessian_heatmap(op)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["hidden/W", "hidden/b", "out"]
    assert np.allclose(curvature.Operator(op, block="hidden/b").matmat(np.eye(4)),
                       op.to_dense()[12:16, 12:16], rtol=1e-15, atol=0)
    _inside_the_figure(ax)


def test_heatmap_of_a_tensor_parameter_hessian_from_ad_hessian():
    """ad.hessian of a loss in a Dense kernel (64, 16) is (64, 16, 64, 16): drawn as 1024 x 1024."""
    layer, head = nn.Dense(16, "tanh", seed=0), nn.Dense(10, seed=1)
    x = rng.standard_normal((30, 64))
    labels = np.arange(30) % 10
    head(layer(x))
    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    H = ad.hessian(lambda k: losses.softmax_cross_entropy(labels, head(anp.tanh(x @ k + bias))))(kernel)
    assert H.shape == (64, 16, 64, 16)
    ax = hplot.hessian_heatmap(H)
    assert np.array_equal(ax.images[0].get_array(), H.reshape(1024, 1024))
    assert ax.get_xlabel() == "parameter (shape (64, 16), row-major)"
    assert ax.images[0].get_clim() == (-np.abs(H).max(), np.abs(H).max())
    _inside_the_figure(ax)
    with pytest.raises(ValueError, match=r"\(2, 3, 3, 2\)"):
        hplot.hessian_heatmap(np.ones((2, 3, 3, 2)))


def test_heatmap_vmax_and_norms_set_the_colour_scale():
    op, _ = _named_network_operator()
    H = op.to_dense()
    biggest = np.abs(H).max()
    ax = hplot.hessian_heatmap(op, vmax=0.1 * biggest)
    assert ax.images[0].get_clim() == pytest.approx((-0.1 * biggest, 0.1 * biggest))
    assert ax.images[0].colorbar.extend == "both" and np.array_equal(ax.images[0].get_array(), H)
    assert hplot.hessian_heatmap(op, vmax=2 * biggest).images[0].colorbar.extend == "neither"
    norm = hplot.hessian_heatmap(op, norm="symlog").images[0].norm
    assert isinstance(norm, SymLogNorm)
    assert (norm.vmin, norm.vmax, norm.linthresh) == pytest.approx((-biggest, biggest, 1e-3 * biggest))
    assert norm(0.0) == pytest.approx(0.5) and norm(biggest) == pytest.approx(1.0)
    given = hplot.hessian_heatmap(op, norm=SymLogNorm(1e-4)).images[0].norm
    assert (given.vmin, given.vmax) == (-biggest, biggest)     # limits filled in, symmetric
    _inside_the_figure(ax)


def test_heatmap_scales_each_block_by_its_own_largest_entry():
    op, variables = _named_network_operator()
    H = op.to_dense()
    ax = hplot.hessian_heatmap(op, scale="block")
    edges = np.cumsum([0] + [v.numpy().size for v in variables])
    image = ax.images[0].get_array()
    for r0, r1 in zip(edges[:-1], edges[1:]):
        for c0, c1 in zip(edges[:-1], edges[1:]):
            block = H[r0:r1, c0:c1]
            assert np.allclose(image[r0:r1, c0:c1], block / np.abs(block).max(), rtol=1e-15, atol=0)
    assert ax.images[0].get_clim() == (-1.0, 1.0)
    scales = [f"±{np.abs(H[r0:r1, c0:c1]).max():.2g}" for r0, r1 in zip(edges[:-1], edges[1:])
              for c0, c1 in zip(edges[:-1], edges[1:])]
    assert [t.get_text() for t in ax.texts] == scales
    _inside_the_figure(ax)
    renderer = ax.figure.canvas.get_renderer()
    fits = np.reshape([t.fits(renderer) for t in ax.texts], (6, 6))
    assert fits[np.ix_([0, 2, 4], [0, 2, 4])].all()      # the kernels' blocks hold their scale
    assert not fits[5, 5] and not fits[3, 3]             # 3 x 3 and 5 x 5 blocks of 107 do not
    boxes = [t.get_window_extent(renderer) for t in ax.texts if t.fits(renderer)]
    assert not any(a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1:])
    # a small figure has room in fewer blocks; the scales drawn never overlap one another
    small = hplot.hessian_heatmap(op, ax=plt.figure(figsize=(3.4, 3.0), layout="constrained").add_subplot(),
                                  scale="block")
    small.figure.canvas.draw()
    renderer = small.figure.canvas.get_renderer()
    drawn = [t.get_window_extent(renderer) for t in small.texts if t.fits(renderer)]
    assert 0 < len(drawn) < 9
    assert not any(a.overlaps(b) for k, a in enumerate(drawn) for b in drawn[k + 1:])


def test_heatmap_refuses_conflicting_or_unknown_colour_options():
    for options, message in [({"vmax": 1.0, "norm": "symlog"}, "vmax or norm"),
                             ({"vmax": -1.0}, "vmax must be positive"),
                             ({"norm": "log"}, "norm must be"),
                             ({"scale": "row"}, "scale must be"),
                             ({"scale": "block", "vmax": 1.0}, "scale='block'")]:
        with pytest.raises(ValueError, match=message):
            hplot.hessian_heatmap(np.eye(3), **options)


def test_jacobian_patches_shows_batch_coupling():
    x = ad.constant(rng.standard_normal((4, 3)))
    W = rng.standard_normal((3, 2))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = anp.tanh(x @ W)
        centred = y - anp.mean(y, axis=0)        # couples the batch, as BatchNorm does in training
    independent, coupled = tape.jacobian(y, x), tape.jacobian(centred, x)
    ax = hplot.jacobian_patches(independent)
    image = ax.images[0].get_array()
    assert image.shape == (8, 12)
    assert np.array_equal(image[2:4, 3:6], independent[1, :, 1, :])    # patch (1, 1)
    assert not image[2:4, 6:9].any()                                     # patch (1, 2): independent
    coupled_image = hplot.jacobian_patches(coupled).images[0].get_array()
    assert np.array_equal(coupled_image[2:4, 6:9], coupled[1, :, 2, :]) and coupled_image[2:4, 6:9].any()
    vmin, vmax = ax.images[0].get_clim()
    assert vmin == -vmax == -np.abs(independent).max()


def test_jacobian_patches_of_batch_jacobian_fills_the_diagonal_only():
    J = rng.standard_normal((3, 2, 4))
    image = hplot.jacobian_patches(J).images[0].get_array()
    assert image.shape == (6, 12)
    assert np.array_equal(image[4:6, 8:12], J[2])
    assert image.mask[0:2, 4:8].all() and not image.mask[0:2, 0:4].any()
    with pytest.raises(ValueError, match=r"\(batch, out, batch, in\).*\(3, 4\)"):
        hplot.jacobian_patches(np.ones((3, 4)))
    with pytest.raises(ValueError, match="equal batch axes"):
        hplot.jacobian_patches(np.ones((3, 2, 4, 1)))


# --- spectrum and landscape -------------------------------------------------------------------------

def test_spectrum_of_eigenvalues_draws_the_smoothed_density_on_a_log_scale_and_marks_outliers():
    eigenvalues = np.concatenate([np.linspace(-0.1, 0.1, 200), [5.0, 8.0]])
    ax = _rendered(hplot.spectrum(eigenvalues))
    assert ax.get_yscale() == "log"
    density_line = ax.lines[0]
    grid, values = density_line.get_data()
    expected = curvature.SpectralDensity.from_eigenvalues(eigenvalues).density(grid)
    shown = np.isfinite(values)
    assert np.allclose(values[shown], expected[shown], rtol=1e-12)
    marked = sorted(line.get_xdata()[0] for line in ax.lines[1:])
    assert marked == pytest.approx([5.0, 8.0])
    assert "outliers (2)" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_landscape_along_given_directions_is_f_along_them():
    f = lambda z: np.sum(z ** 2)  # noqa: E731
    x = np.array([1.0, 2.0])
    ax = hplot.landscape(f, x, directions=np.array([1.0, 0.0]), steps=5, span=2.0)
    alphas, values = ax.lines[0].get_data()
    assert np.allclose(alphas, np.linspace(-2, 2, 5))
    assert np.allclose(values, (1 + alphas) ** 2 + 4)
    ax = hplot.landscape(f, x, directions=[np.array([1.0, 0.0]), np.array([0.0, 1.0])], steps=5)
    assert len(ax.collections) >= 1 and ax.get_xlabel().startswith("α")
    with pytest.raises(ValueError, match="one or two directions of size 2"):
        hplot.landscape(f, x, directions=np.ones(3))


def test_landscape_of_an_array_follows_the_top_hessian_eigenvectors():
    A = np.diag([1.0, 5.0, 2.0])
    ax = hplot.landscape(lambda z: 0.5 * z @ A @ z, np.zeros(3), steps=5, span=1.0, seed=0)
    assert "λ = 5" in ax.get_xlabel() and "λ = 2" in ax.get_ylabel()
    levels = ax.collections[0].levels           # f over the square spanned by e2 and e3
    assert levels.min() == pytest.approx(0.0, abs=1e-12)
    assert levels.max() == pytest.approx(0.5 * (5 + 2), rel=1e-12)


def test_landscape_of_a_pytree_uses_filter_normalized_directions():
    ax = _rendered(hplot.landscape(mlp_loss, PARAMS, steps=7, seed=0))
    assert "filter-normalized" in ax.get_xlabel()
    contour_levels = ax.collections[0].levels
    assert contour_levels.min() <= mlp_loss(PARAMS) <= contour_levels.max()
    direction = hplot._filter_normalized(PARAMS, np.random.default_rng(0))
    tree = ad.ravel(PARAMS)[1](direction)
    # each filter (column of a weight matrix) has the norm of the weights it perturbs; biases stay
    assert np.allclose(np.linalg.norm(tree["W1"], axis=0), np.linalg.norm(PARAMS["W1"], axis=0))
    assert not np.any(tree["b1"])


# --- performance profile -----------------------------------------------------------------------------

def test_performance_profile_has_one_line_per_method_labelled_with_it():
    runs = [run_hessopt(problems.get(name), method) for name in ("rosenbrock", "beale")
            for method in ("trust-exact", "newton-cg")]
    ax = _rendered(hplot.performance_profile(runs))
    assert [line.get_label() for line in ax.lines] == ["trust-exact", "newton-cg"]
    fewest = {name: min(r.evaluations for r in runs if r.problem == name)
              for name in ("rosenbrock", "beale")}
    for line, method in zip(ax.lines, ("trust-exact", "newton-cg")):
        taus, fraction = line.get_data()
        ratios = [r.evaluations / fewest[r.problem] for r in runs if r.method == method]
        assert np.allclose(fraction, [np.mean([ratio <= tau for ratio in ratios]) for tau in taus])
    assert ax.get_xscale() == "log"


# --- import ---------------------------------------------------------------------------------------

def test_import_hessopt_does_not_load_matplotlib_but_plot_is_reachable():
    code = ("import sys, hessopt; assert 'matplotlib' not in sys.modules; "
            "assert callable(hessopt.plot.hessian_heatmap); assert 'matplotlib' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert hessopt.plot is hplot


# --- trajectory and convergence ------------------------------------------------------------------------

ROSENBROCK = problems.get("rosenbrock").fun


def _runs(methods=("newton", "trust-exact", "arc")):
    return [hessopt.minimize(ROSENBROCK, np.array([-1.2, 1.0]), method=m) for m in methods]


def test_trajectory_draws_each_run_with_its_iterates_as_data():
    results = _runs()
    labelled = dict(zip(("newton", "trust-exact", "arc"), results))
    ax = _rendered(hplot.trajectory(ROSENBROCK, labelled))
    assert len(ax.lines) == 3
    for line, (method, result) in zip(ax.lines, labelled.items()):
        assert np.array_equal(np.column_stack(line.get_data()), result.history["x"])
        assert line.get_label().startswith(method)
    starts = [c for c in ax.collections if c.get_label() == "start"]
    assert np.allclose(starts[0].get_offsets(), [[-1.2, 1.0]])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:3] == [f"{m} ({len(r.history) - 1} iterations)" for m, r in labelled.items()]
    assert {"start", "end"} <= set(legend)
    contours = ax.collections[0]                    # contour levels span f over the drawn box
    assert contours.levels.min() <= 0.1 and contours.levels.max() >= ROSENBROCK(np.array([-1.2, 1.0]))


def test_trajectory_refuses_results_without_iterates_or_of_more_variables():
    lean = hessopt.minimize(ROSENBROCK, np.array([-1.2, 1.0]), method="newton",
                            options={"keep_iterates": False})
    with pytest.raises(ValueError, match=r"result 'run 1' has no history\['x'\].*keep_iterates"):
        hplot.trajectory(ROSENBROCK, [lean])
    wide = hessopt.minimize(lambda z: np.sum(z ** 2), np.ones(3), method="newton")
    with pytest.raises(ValueError, match=r"two variables.*\(\d+, 3\)"):
        hplot.trajectory(lambda z: np.sum(z ** 2), {"newton": wide})


def test_convergence_has_one_line_per_run_on_a_log_scale():
    results = _runs(("newton", "trust-exact"))
    ax = hplot.convergence(results, fstar=0.0)
    assert ax.get_yscale() == "log" and len(ax.lines) == 2
    for line, result in zip(ax.lines, results):
        steps, values = line.get_data()
        assert np.array_equal(steps, result.history["nit"])
        positive = result.history["f"] > 0
        assert np.array_equal(values[positive], result.history["f"][positive])
    ax = hplot.convergence({"trust-exact": results[1]}, x="evaluations", y="gnorm")
    steps, values = ax.lines[0].get_data()
    assert np.array_equal(steps, results[1].history["nfev"])
    assert np.array_equal(values, results[1].history["gnorm"])
    assert ax.get_xlabel() == "function evaluations (cumulative)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["trust-exact"]
    with pytest.raises(ValueError, match="x must be"):
        hplot.convergence(results, x="time")
