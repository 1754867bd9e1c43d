"""``explain()``'s HTML form: the plan's text as HTML that wraps, and a picture of which worker
holds or computes each block, drawn on ``dask.array.svg`` (dask.array's chunk grid, each
block coloured by its worker).

The optimizer, where ``Explain`` lives, imports no dask, so this module registers its renderer
with ``optimizer.explain.register_html`` when it is imported (``dask_tra`` imports it): every
``Explain``, however it was obtained, then shows the picture. Without it (the optimizer used
alone) an ``Explain`` shows its text. The picture's data (``optimizer.blocks``) is read from
the chosen plan when the HTML is asked for, for at most ``blocks.LIMIT`` blocks along an axis.
"""

from __future__ import annotations

import html
import uuid

from dask.array.svg import draw_sizes, grid_points, svg_grid, text_style

from ..optimizer.blocks import LIMIT, BlockGrid
from ..optimizer.explain import Explain, register_html
from ..runtime.collection import local_words
from ..runtime.rates import rate_sources

SIZE = 120  # pixels, the longest side of a grid (dask.array's repr uses 120 too)
LEGEND = 64  # workers named in the legend at most

# Tableau 10 (matplotlib's and bokeh's default categorical colours), then evenly spread hues
_TAB10 = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def palette(n: int) -> list:
    """One colour per worker: Tableau 10 for up to 10 workers, else ``n`` spread hues."""
    if n <= len(_TAB10):
        return list(_TAB10[:n])
    return [f"hsl({round(i * 360 / n)}, {65 if i % 2 else 50}%, {45 if i % 2 else 60}%)" for i in range(n)]


def render(report: Explain) -> str:
    """The HTML form of ``report``: its text (wrapping), a legend of workers and their colours,
    and one block grid per input, per contraction operand (where its blocks go) and per output."""
    names = report.worker_names()
    colours = palette(len(names))
    grids = report.block_grids(LIMIT)
    parts = ['<div class="dask-tra-explain" style="max-width: 100%; overflow-wrap: anywhere">', report.html_text()]
    if grids:
        parts.append(
            '<div style="margin-top: 0.6em"><b>Which worker holds each block</b>'
            " (dask.array's chunk grid, one colour per worker; a block on several workers has a stripe for each)</div>"
        )
        parts.append(legend(names, colours))
        parts.append('<div style="display: flex; flex-wrap: wrap; gap: 0.4em 1.2em; align-items: flex-start">')
        parts.extend(figure(g, names, colours) for g in grids if g.sites)
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)


def legend(names, colours) -> str:
    items = [
        '<span style="display: inline-flex; align-items: center; margin-right: 1em">'
        f'<span style="display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em;'
        f' background: {c}"></span>{html.escape(n)}</span>'
        for n, c in list(zip(names, colours))[:LEGEND]
    ]
    if len(names) > LEGEND:
        items.append(f"<span>… {len(names) - LEGEND} more workers</span>")
    return f'<div class="dask-tra-legend" style="display: flex; flex-wrap: wrap">{"".join(items)}</div>'


_ROLE = {"input": "input {}", "sent": "{}", "output": "{}: computed on"}


def figure(g: BlockGrid, names, colours) -> str:
    svg, width = grid_svg(g, names, colours)
    words = g.caption or _ROLE[g.role].format(g.label)
    blocks = "×".join(map(str, g.numblocks)) or "1"
    note = f"; {html.escape(g.note)}" if g.note else ""
    return (
        f'<figure class="dask-tra-grid" data-role="{g.role}" style="margin: 0">{svg}'
        f'<figcaption style="max-width: {max(width, 120)}px; font-size: 0.9em">'
        f"<b>{html.escape(words)}</b><br>{blocks} blocks{note}</figcaption></figure>"
    )


def grid_svg(g: BlockGrid, names, colours, size: int = SIZE) -> tuple[str, int]:
    """dask.array's chunk grid of ``g``'s shown blocks, each a ``<rect class="block">`` filled
    with its worker's colour (a block on several workers: one stripe per worker). Returns the
    SVG and its width in pixels."""
    chunks = tuple(c if sum(c) else (1,) * len(c) for c in g.chunks)
    while len(chunks) < 2:  # a 1-d grid is one row of blocks, as dask.array draws it
        chunks = ((1,),) + chunks
    shape = tuple(sum(c) for c in chunks)
    y, x = grid_points(chunks, draw_sizes(shape, size=size))
    rects, patterns = [], {}  # a block on several workers: filled by a pattern of stripes, one per worker
    ncols = len(chunks[1])
    for index, sites in enumerate(g.sites):
        if not sites:
            continue  # a block-sparse relation's hole: no block
        if len(sites) == 1:
            fill = colours[sites[0]]
        else:
            if sites not in patterns:
                patterns[sites] = f"dask-tra-{uuid.uuid4().hex[:12]}"
            fill = f"url(#{patterns[sites]})"
        i, j = divmod(index, ncols)
        key = ", ".join(map(str, _key(g, i, j)))
        tip = f"block ({key}): " + ", ".join(names[t] for t in sites)
        rects.append(
            f'  <rect class="block" data-workers="{",".join(map(str, sites))}" x="{x[j]:.1f}" y="{y[i]:.1f}"'
            f' width="{x[j + 1] - x[j]:.1f}" height="{y[i + 1] - y[i]:.1f}" style="fill:{fill};stroke-width:0">'
            f"<title>{html.escape(tip)}</title></rect>"
        )
    defs = [_stripes(pid, sites, colours) for sites, pid in patterns.items()]
    if defs:
        rects.insert(0, "  <defs>" + "".join(defs) + "</defs>")
    lines, (_, max_x, _, max_y) = svg_grid(x, y, size=size)
    lines = [ln for ln in lines if "<polygon" not in ln and "Colored Rectangle" not in ln]  # the cells are coloured
    text = []  # the extents, where dask.array writes them: columns below, rows to the right
    if g.shape:
        text.append(f'  <text x="{max_x / 2}" y="{max_y + 20}" {text_style} >{g.shape[-1]}</text>')
    if g.shape is not None and len(g.shape) > 1:
        rows, rotate = g.shape[-2], -90 if g.shape[-2] >= 100 else 0
        text.append(
            f'  <text x="{max_x + 20}" y="{max_y / 2}" {text_style}'
            f' transform="rotate({rotate},{max_x + 20},{max_y / 2})">{rows}</text>'
        )
    width = int(max_x + 50)
    svg = (
        f'<svg width="{width}" height="{int(max_y + 30)}" style="stroke:rgb(0,0,0);stroke-width:1" >\n'
        + "\n".join(rects + lines + text)
        + "\n</svg>"
    )
    return svg, width


def _stripes(pid: str, sites: tuple, colours) -> str:
    """A pattern filling a block with one vertical stripe per worker holding it."""
    k = len(sites)
    bars = "".join(
        f'<rect x="{n / k:.4f}" y="0" width="{1 / k:.4f}" height="1" style="fill:{colours[t]};stroke-width:0"/>'
        for n, t in enumerate(sites)
    )
    return f'<pattern id="{pid}" width="1" height="1" patternContentUnits="objectBoundingBox">{bars}</pattern>'


def _key(g: BlockGrid, i: int, j: int) -> tuple:
    """The block key of shown cell (row i, column j)."""
    nd = len(g.numblocks)
    if nd == 0:
        return ()
    if nd == 1:
        return (j,)
    return (0,) * (nd - 2) + (i, j)


def explain_of(collection, sites=None, detail=None, full=None) -> Explain:
    """``collection.explain()``: the report of its plan (the last one computed, when ``sites`` is
    not given), its sites named by the workers they are (dask addresses on a Client)."""
    report, where = None, None
    if sites is None and collection._last_explain is not None:
        report = collection._last_explain
        where = next(
            (e.where for e in collection._plans.values() if report is e.explain or report is e.plan.explain), None
        )
    else:
        plan, where = collection.planned(sites)
        report = plan.explain
    workers = getattr(where, "workers", None)
    if workers and len(workers) == report.sites and not report.workers:
        report.workers = tuple(workers)  # a fact of this plan: it was made for these workers
    if where is not None:
        report.rates_from = rates_in_words(rate_sources(where))
        local_words(report, where)
    return report.view(detail, full)


RATE_SOURCES = {
    "config": "dask_tra.config",
    "calibrated": "this cluster's calibration",
    "scheduler": "the scheduler's bandwidth estimate",
    "default": "default rates",
}


def rates_in_words(sources: dict) -> str:
    """``rates.rate_sources``' answer in words: where the time estimate's rates came from."""
    used = list(dict.fromkeys(RATE_SOURCES[s] for s in sources.values()))
    words = " and ".join(used)
    return words + " (dt.calibrate(client) measures them)" if "default" in sources.values() else words


register_html(render)

__all__ = ["render", "palette", "grid_svg", "explain_of", "SIZE"]
