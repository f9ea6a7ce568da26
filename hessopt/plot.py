"""Pictures of curvature and of optimization runs (matplotlib).

``import hessopt.plot`` loads matplotlib; ``import hessopt`` alone does not (``hessopt.plot`` is
imported on first use). Every function draws into ``ax`` (a new figure when ``ax`` is None) and
returns the Axes; none calls ``show()``, so the caller decides where the figure goes. Signed
matrices use a diverging colormap with colour limits symmetric about zero, so white is zero.

References
----------
- B. Ghorbani, S. Krishnan and Y. Xiao, An investigation into neural net optimization via Hessian
  eigenvalue density, ICML 2019 (spectra).
- H. Li, Z. Xu, G. Taylor, C. Studer and T. Goldstein, Visualizing the loss landscape of neural
  nets, NeurIPS 2018 (filter-normalized directions).
- E. D. Dolan and J. J. Moré, Benchmarking optimization software with performance profiles,
  Math. Program. 91 (2002).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize, SymLogNorm
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, Locator
from matplotlib.transforms import IdentityTransform
from scipy.optimize import OptimizeResult, isotonic_regression

import autodiff as ad

from . import curvature

_MARKERS = {"start": "o", "end": "*"}
_MARKERS_SIZE = {"start": 50, "end": 90}   # scatter sizes, points^2


def _axes(ax: Axes | None, layout: str | None = None) -> Axes:
    return plt.figure(layout=layout).add_subplot() if ax is None else ax


# --- matrices ------------------------------------------------------------------------------------

# With norm="symlog", the colour scale is linear within this fraction of the largest |entry| and
# logarithmic beyond: three decades on each side of zero.
SYMLOG_LINEAR_FRACTION = 1e-3
# Block names are at least this many times their font size apart along an axis (a line's height).
NAME_SPACING = 1.25
# A colorbar of a symmetric-log norm has at most this many decades ticked on each side of zero.
SYMLOG_DECADES_TICKED = 4


def _dense(H: Any) -> np.ndarray:
    """H as a square matrix: an operator densified, or an array (n, n) or (d1..dk, d1..dk), as
    ``ad.hessian`` gives for a parameter of shape (d1..dk), reshaped to (d1*...*dk,) a side."""
    if callable(getattr(H, "to_dense", None)):
        return np.asarray(H.to_dense(), dtype=float)
    if hasattr(H, "matvec") and hasattr(H, "shape"):
        A = curvature.Operator(H)
        return A.matmat(np.eye(A.n))
    H = np.asarray(H.numpy() if isinstance(H, ad.Tensor) else H, dtype=float)
    k = H.ndim // 2
    if H.ndim == 0 or H.ndim % 2 or H.shape[:k] != H.shape[k:]:
        raise ValueError(f"hessian_heatmap needs a square 2-D matrix, a (d1, ..., dk, d1, ..., dk) "
                         f"Hessian of a tensor parameter, or an operator; got an array of shape {H.shape}")
    side = int(np.prod(H.shape[:k]))
    return H.reshape(side, side)


def _blocks_of(H: Any, blocks: Any, n: int) -> tuple[list[int], list[str]]:
    """Block sizes and names: from ``blocks`` (sizes, or a pytree of parameters) or from the pytree
    the operator was built at (Variables named by their names)."""
    if blocks is None:
        unravel = getattr(H, "unravel", None)
        tree = None if unravel is None else unravel(np.zeros(n))
        if not isinstance(tree, (dict, list, tuple)):
            return [n], []
        blocks = getattr(H, "x", tree)
    if isinstance(blocks, (list, tuple)) and all(isinstance(b, (int, np.integer)) for b in blocks):
        sizes, names = [int(b) for b in blocks], []
    else:
        parts = curvature._labelled_parts(blocks)
        sizes, names = [ad.ravel(part)[0].size for _, part in parts], [str(label) for label, _ in parts]
    if sum(sizes) != n:
        raise ValueError(f"blocks of sizes {sizes} (total {sum(sizes)}) do not tile a matrix of size {n}")
    return sizes, names


def _spread(positions: np.ndarray, gap: float, low: float, high: float) -> np.ndarray:
    """The positions nearest to the increasing ``positions`` (least squares) that are at least
    ``gap`` apart and within [low, high]: an isotonic regression of ``positions - k gap``
    (k = 0, 1, ...) clipped to the bounds, which solves the bounded problem. Where they do not fit
    at that gap, evenly spread over [low, high] (names then overlap: the figure is too small for
    them; they stay within the Axes' side, so that a layout engine does not shrink it further)."""
    gap = min(gap, (high - low) / max(len(positions) - 1, 1))
    shift = gap * np.arange(len(positions))
    return np.clip(isotonic_regression(positions - shift).x, low, high - shift[-1]) + shift


class _NameLocator(Locator):
    """Ticks for block names: at the blocks' centres, moved apart along the axis where small
    blocks would make the names overlap. Positions are found at every draw from the Axes' size
    then, so they hold after a layout engine or ``savefig(dpi=...)`` resized the figure."""

    def __init__(self, centres: np.ndarray):
        self.centres = np.asarray(centres, dtype=float)

    def _gap(self) -> float:
        """A line of the tick labels' font, in display units."""
        size = self.axis.get_tick_params(which="major").get(
            "labelsize", plt.rcParams[f"{self.axis.axis_name}tick.labelsize"])
        return NAME_SPACING * FontProperties(size=size).get_size_in_points() * self.axis.axes.figure.dpi / 72

    def _along(self, transform: Any, values: np.ndarray) -> np.ndarray:
        """``values`` on this axis mapped by ``transform`` (data to display or back)."""
        along = 0 if self.axis.axis_name == "x" else 1
        points = np.zeros((len(values), 2))
        points[:, along] = values
        return transform.transform(points)[:, along]

    def placed(self) -> tuple[np.ndarray, np.ndarray]:
        """The blocks' centres and their names' positions along the axis, in display units."""
        centres = self._along(self.axis.axes.transData, self.centres)
        ends = self._along(self.axis.axes.transData, np.asarray(self.axis.get_view_interval(), dtype=float))
        sign = 1.0 if centres[-1] >= centres[0] else -1.0     # an image's rows run downwards
        low, high = np.sort(sign * ends)
        return centres, sign * _spread(sign * centres, self._gap(), low, high)

    def crowded(self) -> bool:
        """Whether some name is moved off its block's centre at the Axes' present size."""
        centres, names = self.placed()
        return bool(np.max(np.abs(names - centres)) > 0.5)

    def __call__(self) -> np.ndarray:
        return self._along(self.axis.axes.transData.inverted(), self.placed()[1])


class _Leaders(LineCollection):
    """A line from each block's centre on the axis to its name, through a short tick out of the
    axis: where a name did not move, a plain tick mark."""

    def __init__(self, locator: _NameLocator, length: float):
        name = locator.axis.axis_name
        super().__init__([], colors=plt.rcParams[f"{name}tick.color"], transform=IdentityTransform(),
                         linewidths=plt.rcParams[f"{name}tick.major.width"], clip_on=False)
        self.locator, self.length = locator, length
        self.set_in_layout(False)

    def draw(self, renderer) -> None:
        centres, names = self.locator.placed()
        box, length = self.locator.axis.axes.bbox, renderer.points_to_pixels(self.length)
        if self.locator.axis.axis_name == "x":     # names below the Axes
            self.set_segments([[(c, box.y0), (c, box.y0 - 0.4 * length), (s, box.y0 - length)]
                               for c, s in zip(centres, names)])
        else:                                       # names left of the Axes
            self.set_segments([[(box.x0, c), (box.x0 - 0.4 * length, c), (box.x0 - length, s)]
                               for c, s in zip(centres, names)])
        super().draw(renderer)


def _name_blocks(ax: Axes, sizes: Sequence[int], names: Sequence[str]) -> None:
    """Name the blocks on both axes, legibly however small a block is (see ``_NameLocator``)."""
    centres = np.cumsum(sizes) - np.asarray(sizes) / 2 - 0.5
    for axis in (ax.xaxis, ax.yaxis):
        locator = _NameLocator(centres)
        axis.set_major_locator(locator)
        axis.set_major_formatter(FuncFormatter(lambda _, k, names=tuple(names): names[k]))
        axis.set_minor_locator(plt.NullLocator())
        tick = plt.rcParams[f"{axis.axis_name}tick.major.size"]
        # room for a bent leader where names had to move; the tick marks are the leaders
        length = 3 * tick if locator.crowded() else tick
        ax.tick_params(axis=axis.axis_name, which="major", length=length, color="none")
        ax.add_collection(_Leaders(locator, length), autolim=False)
    if max(map(len, names)) > 3:
        ax.tick_params(axis="x", labelrotation=90)


def _block_lines(ax: Axes, row_sizes: Sequence[int], col_sizes: Sequence[int]) -> None:
    for edge in np.cumsum(row_sizes)[:-1]:
        ax.axhline(edge - 0.5, color="black", linewidth=0.8)
    for edge in np.cumsum(col_sizes)[:-1]:
        ax.axvline(edge - 0.5, color="black", linewidth=0.8)


def _colour_norm(image: np.ndarray, vmax: float | None, norm: Any) -> Normalize:
    """Colour limits symmetric about zero: ±vmax, else ±max|image|; ``norm`` a Normalize (its
    missing limits filled in that way) or "symlog"."""
    if vmax is not None and norm is not None:
        raise ValueError("give vmax or norm, not both (a norm carries its own limits)")
    if vmax is not None and not (np.isfinite(vmax) and vmax > 0):
        raise ValueError(f"vmax must be positive and finite, got {vmax!r}")
    limit = float(vmax) if vmax is not None else float(np.nanmax(np.abs(image), initial=0.0)) or 1.0
    if norm is None:
        return Normalize(-limit, limit)
    if isinstance(norm, str) and norm == "symlog":
        return SymLogNorm(SYMLOG_LINEAR_FRACTION * limit, vmin=-limit, vmax=limit)
    if not isinstance(norm, Normalize):
        raise ValueError(f"norm must be a matplotlib.colors.Normalize or 'symlog', got {norm!r}")
    if norm.vmin is None and norm.vmax is None:
        norm.vmin, norm.vmax = -limit, limit
    return norm


def _signed_image(ax: Axes, image: np.ndarray, cmap: str, label: str, norm: Normalize):
    colormap = plt.get_cmap(cmap).with_extremes(bad="0.85")
    shown = np.ma.masked_invalid(image)
    beyond = (shown.min() < norm.vmin, shown.max() > norm.vmax) if shown.count() else (False, False)
    extend = {(False, False): "neither", (True, False): "min", (False, True): "max"}.get(beyond, "both")
    # one image pixel per matrix entry or more: nearest; fewer (a large matrix): average colours
    # rather than values, so that fine structure stays visible and no entry is skipped
    im = ax.imshow(shown, cmap=colormap, norm=norm, interpolation="auto", interpolation_stage="rgba")
    colorbar = ax.figure.colorbar(im, ax=ax, label=label, extend=extend)
    if isinstance(norm, SymLogNorm):
        colorbar.set_ticks(_symlog_ticks(norm))
    return im


def _symlog_ticks(norm: SymLogNorm) -> np.ndarray:
    """0 and ±10^k from the linear part's threshold to the limits (at most a few decades a side,
    the largest kept): matplotlib's default also ticks ±10^k inside the linear part, where the
    labels sit on top of 0's."""
    largest = max(abs(norm.vmin), abs(norm.vmax))
    exponents = np.arange(np.floor(np.log10(largest)), np.ceil(np.log10(norm.linthresh)) - 1, -1)
    decades = 10.0 ** exponents[::-(-len(exponents) // SYMLOG_DECADES_TICKED)]
    ticks = np.concatenate([-decades, [0.0], decades[::-1]])
    return np.sort(ticks[(ticks >= norm.vmin) & (ticks <= norm.vmax)])


class _BlockScale(Text):
    """A block's scale written in its top-left corner, drawn only if the block holds it at the
    size the figure is drawn at (small blocks, or a small figure, leave no room for the text)."""

    def __init__(self, rows: tuple[int, int], cols: tuple[int, int], text: str):
        super().__init__(cols[0] - 0.5, rows[0] - 0.5, text, ha="left", va="top", fontsize=7,
                         bbox={"boxstyle": "square,pad=0.15", "facecolor": "white", "alpha": 0.8,
                               "linewidth": 0})
        self.corners = [(cols[0] - 0.5, rows[0] - 0.5), (cols[1] - 0.5, rows[1] - 0.5)]

    def fits(self, renderer) -> bool:
        width, height = np.abs(np.diff(self.axes.transData.transform(self.corners), axis=0))[0]
        box = self.get_window_extent(renderer)
        return box.width <= width and box.height <= height

    def draw(self, renderer) -> None:
        if self.fits(renderer):
            super().draw(renderer)


def _block_scaled(ax: Axes, matrix: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Each block divided by its own max|entry| (a zero block stays zero), its scale (±max)
    written in its corner where the block holds the text (``_BlockScale``)."""
    edges = np.concatenate([[0], np.cumsum(sizes)])
    scaled = matrix.copy()
    for rows in zip(edges[:-1], edges[1:]):
        for cols in zip(edges[:-1], edges[1:]):
            block = (slice(*rows), slice(*cols))
            scale = float(np.nanmax(np.abs(matrix[block]), initial=0.0))
            if scale > 0:
                scaled[block] /= scale
            ax.add_artist(_BlockScale(rows, cols, f"±{scale:.2g}"))
    return scaled


def hessian_heatmap(H: Any, ax: Axes | None = None, blocks: Any = None,
                    labels: Sequence[str] | None = None, cmap: str = "RdBu_r",
                    vmax: float | None = None, norm: Any = None, scale: str = "global") -> Axes:
    """The matrix ``H`` (or an operator, densified) as an image, zero white, colour limits ±max|H|.

    ``blocks`` (block sizes, or the pytree of parameters) draws block boundaries and names them;
    for a ``HessianOperator`` built at a pytree they come from the operator itself (a Variable is
    named by its name). A Hessian of one tensor parameter, (d1, ..., dk, d1, ..., dk) as
    ``ad.hessian`` gives it, is drawn as the (d1...dk)-square matrix of the row-major flattened
    parameter. One large block can leave the others nearly white: ``vmax`` saturates the colours
    beyond it, ``norm="symlog"`` (or any matplotlib norm) spreads many magnitudes, and
    ``scale="block"`` scales each block by its own max|entry| (written into each block large
    enough to hold it). Names of blocks too small for them are moved apart, a line leading from
    each block to its name. A new figure is laid out at every draw (``layout="constrained"``,
    which places a colorbar's labels more exactly than "tight"), so that long block names and
    the colorbar stay inside it; on your own Axes, give its figure a layout
    (``layout="constrained"``) or call ``tight_layout()``.

    Parameters
    ----------
    H : array_like, Tensor, HessianOperator, or operator with matvec and shape
        A square matrix, or a Hessian of shape (d1, ..., dk, d1, ..., dk).
    ax : Axes, optional
        Where to draw (default: a new figure).
    blocks : sequence of int or pytree, optional
        Block sizes, or the parameters whose blocks to mark.
    labels : sequence of str, optional
        Names of the blocks (default: the pytree's keys, or the Variables' names).
    cmap : str, default "RdBu_r"
        A diverging colormap.
    vmax : float, optional
        Colour limits ±vmax (default: ±max|H|); larger entries saturate.
    norm : matplotlib.colors.Normalize or "symlog", optional
        The colour normalization. "symlog" is linear within 1e-3 max|H| (or vmax) of zero and
        logarithmic beyond; a norm given without limits gets ±max|H|.
    scale : {"global", "block"}, default "global"
        "block": each block divided by its own max|entry|, colours from -1 to 1.

    Returns
    -------
    Axes

    Raises
    ------
    ValueError
        For a matrix that is not square, as many labels as blocks, both vmax and norm, a vmax
        that is not positive, or an unknown norm or scale.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from hessopt import plot
    >>> f = lambda p: np.sum(p["w"] ** 4) + p["b"] ** 2
    >>> H = ad.hessian_operator(f, {"w": np.array([1.0, 2.0]), "b": 1.0})
    >>> ax = plot.hessian_heatmap(H)
    >>> ax.images[0].get_clim(), [label.get_text() for label in ax.get_xticklabels()]
    ((-48.0, 48.0), ['w', 'b'])
    >>> ax = plot.hessian_heatmap(H, scale="block")        # each block scaled to ±1
    >>> ax.images[0].get_array().data
    array([[0.25, 0.  , 0.  ],
           [0.  , 1.  , 0.  ],
           [0.  , 0.  , 1.  ]])
    >>> kernel_hessian = ad.hessian(lambda w: np.sum(np.tanh(w) ** 2))(np.ones((3, 2)))
    >>> plot.hessian_heatmap(kernel_hessian, norm="symlog").images[0].get_array().shape
    (6, 6)
    """
    if scale not in ("global", "block"):
        raise ValueError(f"scale must be 'global' or 'block', got {scale!r}")
    if scale == "block" and (vmax is not None or norm is not None):
        raise ValueError("scale='block' fixes the colour limits at ±1: give no vmax or norm with it")
    shape = getattr(H, "shape", ())
    ax = _axes(ax, layout="constrained")
    matrix = _dense(H)
    sizes, names = _blocks_of(H, blocks, matrix.shape[0])
    if labels is not None:
        if len(labels) != len(sizes):
            raise ValueError(f"{len(labels)} labels for {len(sizes)} blocks")
        names = [str(label) for label in labels]
    if scale == "block":
        matrix = _block_scaled(ax, matrix, sizes)
    label = "entry / max |entry|\nof its block" if scale == "block" else "Hessian entry"
    _signed_image(ax, matrix, cmap, label, _colour_norm(matrix, vmax, norm))
    _block_lines(ax, sizes, sizes)
    if names:
        _name_blocks(ax, sizes, names)
    tensor = len(shape) > 2 and not names
    ax.set_xlabel(f"parameter (shape {tuple(shape[:len(shape) // 2])}, row-major)" if tensor else "parameter")
    ax.set_ylabel("parameter")
    return ax


def jacobian_patches(J: Any, ax: Axes | None = None, cmap: str = "RdBu_r") -> Axes:
    """A batch Jacobian as a batch x batch grid of (out x in) patches: patch (i, j) is
    d y_i / d x_j. Independent examples give a block-diagonal picture; a layer that couples the
    batch (BatchNorm in training mode) fills the off-diagonal patches.

    ``J`` is (batch, out, batch, in) from ``tape.jacobian``, or (batch, out, in) from
    ``batch_jacobian``, which holds only the diagonal patches (the others are drawn grey: not computed).

    Parameters
    ----------
    J : array_like or Tensor
        The Jacobian, (batch, out, batch, in) or (batch, out, in).
    ax : Axes, optional
        Where to draw (default: a new figure).
    cmap : str, default "RdBu_r"

    Returns
    -------
    Axes

    Raises
    ------
    ValueError
        For another number of axes, or unequal batch axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from hessopt import plot
    >>> J = ad.jacobian(np.tanh)(np.array([[1.0, 2.0], [3.0, 4.0]]))   # 2 examples, 2 features
    >>> ax = plot.jacobian_patches(J)
    >>> ax.images[0].get_array().shape, ax.get_xlabel()
    ((4, 4), 'input example j (2 features each)')
    """
    ax = _axes(ax, layout="tight")
    J = np.asarray(J.numpy() if isinstance(J, ad.Tensor) else J, dtype=float)
    if J.ndim == 4:
        if J.shape[0] != J.shape[2]:
            raise ValueError(f"a batch Jacobian (batch, out, batch, in) needs equal batch axes, got "
                             f"shape {J.shape}")
        batch, out, _, inputs = J.shape
        image = J.reshape(batch * out, batch * inputs)
    elif J.ndim == 3:
        batch, out, inputs = J.shape
        image = np.full((batch * out, batch * inputs), np.nan)
        for i in range(batch):
            image[i * out:(i + 1) * out, i * inputs:(i + 1) * inputs] = J[i]
    else:
        raise ValueError(f"jacobian_patches needs a (batch, out, batch, in) or (batch, out, in) "
                         f"array, got shape {J.shape}")
    _signed_image(ax, image, cmap, "∂ output / ∂ input", _colour_norm(image, None, None))
    _block_lines(ax, [out] * batch, [inputs] * batch)
    if batch <= 20:
        ax.set_xticks(np.arange(batch) * inputs + inputs / 2 - 0.5, range(batch))
        ax.set_yticks(np.arange(batch) * out + out / 2 - 0.5, range(batch))
    ax.set_xlabel(f"input example j ({inputs} features each)")
    ax.set_ylabel(f"output example i ({out} outputs each)")
    return ax


# --- spectra and landscapes -----------------------------------------------------------------------

def spectrum(density_or_eigenvalues: Any, ax: Axes | None = None, sigma: float | None = None,
             points: int = 2000) -> Axes:
    """A spectral density (from ``curvature.spectral_density``, or exact eigenvalues, smoothed the
    same way) on a log scale, with the outliers (eigenvalues detached from the bulk) marked.

    Parameters
    ----------
    density_or_eigenvalues : SpectralDensity or array_like
        From ``hessopt.curvature.spectral_density``, or eigenvalues.
    ax : Axes, optional
        Where to draw (default: a new figure).
    sigma : float, optional
        Width of the Gaussian smoothing each node (default: 1% of the spread).
    points : int, default 2000
        Grid points of the curve.

    Returns
    -------
    Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from hessopt import plot
    >>> ax = plot.spectrum([1.0, 2.0, 3.0, 10.0], sigma=0.1)
    >>> ax.get_yscale(), ax.get_legend().get_texts()[0].get_text()
    ('log', 'density (Gaussian σ = 0.1)')
    """
    ax = _axes(ax)
    density = density_or_eigenvalues if isinstance(density_or_eigenvalues, curvature.SpectralDensity) \
        else curvature.SpectralDensity.from_eigenvalues(density_or_eigenvalues)
    sigma = density.default_sigma() if sigma is None else sigma
    low, high = density.nodes.min() - 4 * sigma, density.nodes.max() + 4 * sigma
    grid = np.linspace(low, high, points)
    values = density.density(grid, sigma)
    floor = values.max() * 1e-8
    ax.semilogy(grid, np.where(values > floor, values, np.nan), color="C0",
                label=f"density (Gaussian σ = {sigma:.2g})")
    ax.set_ylim(floor, values.max() * 3)
    outliers = density.outliers()
    for k, value in enumerate(outliers):
        ax.axvline(value, color="C3", linestyle=":", linewidth=1,
                   label=f"outliers ({len(outliers)})" if k == 0 else None)
    ax.set_xlim(low, high)
    ax.set_xlabel("eigenvalue")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    return ax


def _filter_normalized(x: Any, rng: np.random.Generator) -> np.ndarray:
    """A random direction with each filter scaled to the norm of its weights (Li et al. 2018): a
    filter is one output unit, the last axis of a weight array; vectors (biases) are left at zero."""
    leaves, treedef = ad.tree.flatten(x)
    parts = []
    for leaf in leaves:
        w = np.asarray(leaf, dtype=float)
        d = np.zeros_like(w)
        if w.ndim >= 2:
            d = rng.standard_normal(w.shape)
            axes = tuple(range(w.ndim - 1))
            d *= np.linalg.norm(w, axis=axes) / np.linalg.norm(d, axis=axes)
        parts.append(d)
    direction = ad.ravel(treedef(parts))[0]
    if not np.any(direction):
        raise ValueError("no weight matrices to filter-normalize in x (all leaves are vectors or "
                         "zero); pass directions")
    return direction


def _directions(f: Callable, x: Any, directions: Any, flat: np.ndarray,
                seed: int | None) -> tuple[np.ndarray, list[str]]:
    """One or two directions as rows, and their names for the axis labels."""
    if directions is not None:
        rows = [ad.ravel(d)[0] for d in (directions if isinstance(directions, (list, tuple))
                                         else np.atleast_2d(directions))]
        if not 1 <= len(rows) <= 2 or any(row.size != flat.size for row in rows):
            raise ValueError(f"landscape takes one or two directions of size {flat.size}, got "
                             f"{[row.size for row in rows]}")
        return np.array(rows), [f"direction {k + 1}" for k in range(len(rows))]
    if isinstance(x, (dict, list, tuple)):
        rng = np.random.default_rng(seed)
        return (np.array([_filter_normalized(x, rng) for _ in range(2)]),
                ["filter-normalized direction 1", "filter-normalized direction 2"])
    values, vectors = curvature.top_eigenvalues(ad.hessian_operator(f, x), k=min(2, flat.size),
                                                seed=seed)
    return vectors.T, [f"Hessian eigenvector {k + 1} (λ = {v:.3g})" for k, v in enumerate(values)]


def _levels(Z: np.ndarray, count: int = 25) -> np.ndarray:
    """Contour levels at quantiles of the values, so that steep walls do not take every level."""
    levels = np.unique(np.quantile(Z[np.isfinite(Z)], np.linspace(0, 1, count)))
    return levels if levels.size > 1 else np.array([levels[0] - 1, levels[0] + 1])


def _value(f: Callable, x: Any) -> float:
    value = f(x)
    return float(value.numpy() if isinstance(value, ad.Tensor) else np.asarray(value))


def landscape(f: Callable, x: Any, directions: Any = None, ax: Axes | None = None, steps: int = 41,
              span: float = 1.0, seed: int | None = None) -> Axes:
    """f(x + a d1) along one direction (a line), or f(x + a d1 + b d2) over two (contours), for
    a, b in [-span, span].

    ``directions`` default to the two top Hessian eigenvectors at x (unit length), or, for a pytree
    of parameters, to random directions filter-normalized per layer (Li et al. 2018).

    Parameters
    ----------
    f : callable
        The function, of x.
    x : array_like or pytree
        The centre.
    directions : array_like or list of one or two, optional
        Directions (flat, or in x's structure).
    ax : Axes, optional
        Where to draw (default: a new figure).
    steps : int, default 41
        Grid points per direction.
    span : float, default 1.0
        The grid covers [-span, span].
    seed : int, optional
        Seed of random directions or of the Lanczos start.

    Returns
    -------
    Axes

    Raises
    ------
    ValueError
        For wrong directions, or a pytree with no weight matrices to filter-normalize.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from hessopt import plot
    >>> f = lambda x: np.sum(x ** 2)
    >>> ax = plot.landscape(f, np.array([1.0, 2.0]), directions=[np.array([1.0, 0.0])], steps=5)
    >>> ax.lines[0].get_ydata()                # f(x + a d) for a = -1, -0.5, 0, 0.5, 1
    array([4.  , 4.25, 5.  , 6.25, 8.  ])
    """
    ax = _axes(ax)
    flat, unravel = ad.ravel(x)
    D, names = _directions(f, x, directions, flat, seed)
    alphas = np.linspace(-span, span, steps)
    if len(D) == 1:
        values = [_value(f, unravel(flat + a * D[0])) for a in alphas]
        ax.plot(alphas, values, color="C0")
        ax.axvline(0, color="0.5", linestyle=":", linewidth=1)
        ax.set_xlabel(f"α along {names[0]}")
        ax.set_ylabel("f(x + α d)")
        return ax
    Z = np.array([[_value(f, unravel(flat + a * D[0] + b * D[1])) for a in alphas] for b in alphas])
    contours = ax.contourf(alphas, alphas, Z, levels=_levels(Z), cmap="viridis")
    ax.contour(alphas, alphas, Z, levels=contours.levels, colors="white", linewidths=0.3)
    ax.figure.colorbar(contours, ax=ax, label="f", format="%.3g")
    ax.plot([0], [0], "x", color="red", markersize=8, label="the point x")
    ax.set_xlabel(f"α along {names[0]}")
    ax.set_ylabel(f"β along {names[1]}")
    ax.legend(fontsize=8)
    return ax


# --- optimization runs ---------------------------------------------------------------------------

def _labelled(results: Any) -> list[tuple[str, Any]]:
    """(label, result) pairs from one result, a list of them, or a dict label -> result."""
    if isinstance(results, OptimizeResult):
        results = [results]
    if isinstance(results, dict):
        return [(str(k), r) for k, r in results.items()]
    return [(str(r.get("method") or f"run {i + 1}"), r) for i, r in enumerate(results)]


def _column(label: str, result: Any, name: str) -> np.ndarray:
    try:
        column = result.history[name]
    except (AttributeError, KeyError, TypeError, IndexError):
        column = None
    if column is None or np.size(column) == 0:
        hint = " (run with options={'keep_iterates': True}, the default)" if name == "x" else ""
        raise ValueError(f"result {label!r} has no history[{name!r}]{hint}")
    return np.asarray(column, dtype=float)


def trajectory(f: Callable, results: Any, ax: Axes | None = None,
               bounds: Sequence[Sequence[float]] | None = None, grid: int = 120) -> Axes:
    """Contours of a function of two variables with the path of each run over them: the line's data
    are ``result.history["x"]``; start (o) and end (*) marked, one legend entry per method.

    ``results`` is a result, a list of them (labelled by ``result.method``) or a dict label -> result;
    ``bounds`` ((x_min, x_max), (y_min, y_max)) default to the paths plus a margin.

    Parameters
    ----------
    f : callable
        The objective, of a vector of 2.
    results : OptimizeResult, list or dict of them
        Runs with ``history["x"]`` (kept by default).
    ax : Axes, optional
        Where to draw (default: a new figure).
    bounds : ((float, float), (float, float)), optional
    grid : int, default 120
        Contour grid points per axis.

    Returns
    -------
    Axes

    Raises
    ------
    ValueError
        For a run without iterates, or iterates that are not 2-vectors.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import hessopt
    >>> from hessopt import plot
    >>> rosenbrock = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    >>> runs = {m: hessopt.minimize(rosenbrock, np.array([-1.2, 1.0]), method=m) for m in ("newton", "arc")}
    >>> ax = plot.trajectory(rosenbrock, runs, grid=20)
    >>> [text.get_text() for text in ax.get_legend().get_texts()]
    ['newton (... iterations)', 'arc (... iterations)', 'start', 'end']
    """
    ax = _axes(ax)
    runs = [(label, _column(label, r, "x")) for label, r in _labelled(results)]
    for label, path in runs:
        if path.ndim != 2 or path.shape[1] != 2:
            raise ValueError(f"trajectory draws functions of two variables; the iterates of "
                             f"{label!r} have shape {path.shape}")
    if bounds is None:
        points = np.concatenate([path for _, path in runs])
        low, high = points.min(axis=0), points.max(axis=0)
        margin = np.maximum(0.15 * (high - low), 0.1 * max(np.max(high - low), 1e-3))
        bounds = np.stack([low - margin, high + margin], axis=1)
    (x_low, x_high), (y_low, y_high) = bounds
    xs, ys = np.linspace(x_low, x_high, grid), np.linspace(y_low, y_high, grid)
    Z = np.array([[_value(f, np.array([a, b])) for a in xs] for b in ys])
    contours = ax.contourf(xs, ys, Z, levels=_levels(Z), cmap="Greys", alpha=0.45)
    ax.contour(xs, ys, Z, levels=contours.levels, colors="0.55", linewidths=0.4)
    ax.figure.colorbar(contours, ax=ax, label="f", format="%.3g")
    lines = []
    for k, (label, path) in enumerate(runs):
        line, = ax.plot(path[:, 0], path[:, 1], "-", marker=".", markersize=4, linewidth=1.2,
                        color=f"C{k}", label=f"{label} ({len(path) - 1} iterations)")
        lines.append(line)
        for end, row in (("start", path[0]), ("end", path[-1])):
            ax.scatter(*row, marker=_MARKERS[end], s=_MARKERS_SIZE[end], zorder=3,
                       color=line.get_color(), edgecolors="black", linewidths=0.6, label=end)
    ends = [Line2D([], [], linestyle="", marker=_MARKERS[end], markersize=np.sqrt(_MARKERS_SIZE[end]),
                   color="white", markeredgecolor="black", label=end) for end in _MARKERS]
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(y_low, y_high)
    ax.set_xlabel("x[0]")
    ax.set_ylabel("x[1]")
    ax.legend(handles=lines + ends, fontsize=8)
    return ax


_Y_LABELS = {"f": "f(x_k)", "gnorm": "‖∇f(x_k)‖∞"}


def convergence(results: Any, ax: Axes | None = None, fstar: float | None = None,
                x: str = "iterations", y: str = "f") -> Axes:
    """One line per run: f(x_k) - fstar (or f, or the gradient norm) against iterations or
    cumulative function evaluations, on a log scale. Points where f - fstar <= 0 are not drawn.

    Parameters
    ----------
    results : OptimizeResult, list or dict of them
        Runs with a ``history``.
    ax : Axes, optional
        Where to draw (default: a new figure).
    fstar : float, optional
        The optimal value to subtract.
    x : {"iterations", "evaluations"}, default "iterations"
    y : {"f", "gnorm"}, default "f"

    Returns
    -------
    Axes

    Raises
    ------
    ValueError
        For an unknown x or y, or a run without that history column.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import hessopt
    >>> from hessopt import plot
    >>> result = hessopt.minimize(lambda x: np.sum(x ** 4), np.array([1.0, -2.0]), method="newton")
    >>> ax = plot.convergence({"newton": result}, fstar=0.0)
    >>> ax.get_yscale(), ax.get_ylabel()
    ('log', 'f(x_k) − f*')
    """
    if x not in ("iterations", "evaluations"):
        raise ValueError(f"x must be 'iterations' or 'evaluations', got {x!r}")
    if y not in _Y_LABELS:
        raise ValueError(f"y must be 'f' or 'gnorm', got {y!r}")
    ax = _axes(ax)
    positive = True
    for label, result in _labelled(results):
        values = _column(label, result, y)
        if y == "f" and fstar is not None:
            values = np.where(values - fstar > 0, values - fstar, np.nan)
        positive &= bool(np.all(values[np.isfinite(values)] > 0))
        steps = _column(label, result, "nfev" if x == "evaluations" else "nit")
        ax.plot(steps, values, marker=".", markersize=3, label=label)
    ax.set_yscale("log" if positive else "symlog")
    ax.set_xlabel("iteration" if x == "iterations" else "function evaluations (cumulative)")
    ax.set_ylabel(f"{_Y_LABELS[y]} − f*" if y == "f" and fstar is not None else _Y_LABELS[y])
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def performance_profile(runs: Iterable, ax: Axes | None = None) -> Axes:
    """Dolan & Moré (2002) performance profile: for each method, the fraction of problems it solves
    within a factor tau of the fewest evaluations (nfev + njev + nhev) any method needed.

    ``runs`` are the suite's records (``hessopt.suite.Run``: problem, n, method, solved, nfev, njev,
    nhev), as ``hessopt.suite.run_hessopt`` and ``run_suite`` return them.

    Parameters
    ----------
    runs : iterable of hessopt.suite.Run
    ax : Axes, optional
        Where to draw (default: a new figure).

    Returns
    -------
    Axes

    Examples
    --------
    Newton is cheapest on problem a, ARC on b, each within a factor 2 of the other:

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from hessopt import plot
    >>> from hessopt.suite import Run
    >>> costs = [("a", "newton", 10), ("a", "arc", 20), ("b", "newton", 30), ("b", "arc", 15)]
    >>> runs = [Run(p, 2, m, True, True, 0.0, 0.0, 5, nfev, 0, 0, 0.1, "") for p, m, nfev in costs]
    >>> ax = plot.performance_profile(runs)
    >>> [(line.get_label(), *line.get_ydata()[[0, -1]].tolist()) for line in ax.lines]
    [('newton', 0.5, 1.0), ('arc', 0.5, 1.0)]
    """
    ax = _axes(ax)
    runs = list(runs)
    methods = list(dict.fromkeys(r.method for r in runs))
    instances = sorted({(r.problem, r.n) for r in runs})
    cost = np.full((len(instances), len(methods)), np.inf)
    for r in runs:
        if r.solved:
            cost[instances.index((r.problem, r.n)), methods.index(r.method)] = \
                max(r.nfev + r.njev + r.nhev, 1)
    best = np.min(cost, axis=1, keepdims=True)
    ratios = cost[np.isfinite(best[:, 0])] / best[np.isfinite(best[:, 0])]
    worst = max(np.max(ratios[np.isfinite(ratios)], initial=2.0), 2.0)
    taus = np.logspace(0, np.log10(worst * 1.1), 200)  # past the worst ratio, so every curve tops out
    for k, method in enumerate(methods):
        fraction = [(ratios[:, k] <= tau).sum() / len(instances) for tau in taus]
        ax.step(taus, fraction, where="post", label=method)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda tau, _: f"{tau:g}"))
    ax.set_xlim(1, taus[-1])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("τ: within a factor τ of the fewest evaluations (nfev + njev + nhev)")
    ax.set_ylabel(f"fraction of the {len(instances)} problems solved")
    ax.set_title("Performance profile (Dolan & Moré 2002)")
    ax.legend(fontsize=8)
    return ax


__all__ = ["hessian_heatmap", "jacobian_patches", "spectrum", "landscape", "trajectory",
           "convergence", "performance_profile"]
