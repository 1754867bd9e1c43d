"""Closed-form costing: layouts as arrays over a relation's key grid, never over block products.

A *layout* says which sites hold each tuple of a relation: a boolean matrix of shape
``(keys below the frontier, s)``, keys in row-major order (a hole of a block-sparse relation
is a row of zero bytes and no site). Every strategy is costed from its inputs' layouts in vectorized
NumPy:

- a move costs, per tuple, its bytes times the sites that need it and do not hold it;
- a grid join (bmm/cmm/rmm and EinDecomp's ``d``) needs each input tuple at the sites of
  the grid cells it belongs to: computed per distinct cell group (at most the number of
  grid cells), then gathered to the tuples;
- an aggregation's partial results sit where the products of their group are: the layout
  that places the products, OR-reduced over the aggregated key dims;
- per-site compute is the kernel's flops over each grid cell (or each placing tuple) with
  block extents summed per cell (exact for einsum kernels, whose flops are multilinear).

Work per candidate is linear in the keys of its inputs and outputs and in the grid cells;
nothing here enumerates block products of dense relations. A block-sparse join's products
are the keys it holds (its lineage, from metadata): its partials and flops are costed per
held product. The IA plan of the chosen candidate is built
once, afterwards (``optimizer.build``), and tests check that its exact costing
(``cost.evaluate_cost``) equals the bytes predicted here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ia.partitioning import Grid, part_all, site_table
from ..tra.kernels import Einsum
from ..tra.relation import RelationType

if TYPE_CHECKING:
    from .operators.registry import Strategy

# ---------------------------------------------------------------- per-relation facts


def key_elements(t) -> np.ndarray:
    """Elements of the chunk at every key below the frontier (row-major; 0 for holes)."""
    out = t._cache.get("key_elements")
    if out is None:
        out = t.chunk_elements().ravel().astype(np.int64) if math.prod(t.frontier) else np.zeros(0, np.int64)
        if t.keys is not None:
            out = out * key_mask(t)
        out.setflags(write=False)
        t._cache["key_elements"] = out
    return out


STRUCTURAL_FACTS = (
    "elements",
    "key_elements",
    "key_bytes",
    "key_mask",
    "present_keys",
    "key_flops",
    "makes_products",
    "cell_flops",
)


def type_facts(t) -> dict:
    """What ``t._cache`` holds that follows from the node's structure alone (its type, and for a
    join its kernel): equal for the nodes of two expressions with one structure (``cache``), so
    a cached plan re-costed for a new expression hands them over instead of recomputing."""
    return {name: t._cache[name] for name in STRUCTURAL_FACTS if name in t._cache}


def key_bytes(t) -> np.ndarray:
    """Bytes of the chunk at every key below the frontier (``key_elements``, kept with them)."""
    out = t._cache.get("key_bytes")
    if out is None:
        out = t._cache["key_bytes"] = key_elements(t) * t.dtype.itemsize
        out.setflags(write=False)
    return out


def key_mask(t) -> np.ndarray:
    """True for the keys a relation holds (all keys below the frontier unless it has holes)."""
    n = math.prod(t.frontier)
    if t.keys is None:
        return np.ones(n, bool)
    m = t._cache.get("key_mask")
    if m is None:
        m = np.zeros(n, bool)
        keys = present_keys(t)
        if len(keys):
            m[np.ravel_multi_index(keys.T, t.frontier) if t.frontier else 0] = True
        m.setflags(write=False)
        t._cache["key_mask"] = m
    return m


def present_keys(t) -> np.ndarray:
    """The keys a block-sparse relation holds, sorted, as an (n, key arity) array."""
    out = t._cache.get("present_keys")
    if out is None:
        out = np.array(sorted(t.keys), np.int64).reshape(len(t.keys), t.key_arity)
        t._cache["present_keys"] = out
    return out


def held(layout, t) -> np.ndarray:
    """``layout`` with no site for the keys ``t`` lacks (a block-sparse relation's holes)."""
    return layout if t.keys is None else layout & key_mask(t)[:, None]


def col_counts(m) -> np.ndarray:
    """Per site (column), how many keys of a boolean layout it holds: summed as bytes in
    int16, 32,767 rows at a time (``count_nonzero(axis=0)`` sums in int64: ~9× slower)."""
    u = m.view(np.uint8)
    out = np.zeros(m.shape[1], np.int64)
    for a in range(0, len(u), 32767):
        out += np.add.reduce(u[a : a + 32767], axis=0, dtype=np.int16)
    return out


def row_counts(m) -> np.ndarray:
    """Per key (row), how many sites of a boolean layout hold it (as ``col_counts``)."""
    if m.ndim != 2 or m.dtype != np.bool_:
        return np.asarray(m).sum(axis=1)
    acc = np.int16 if m.shape[1] <= 32767 else np.int64
    return np.add.reduce(m.view(np.uint8), axis=1, dtype=acc).astype(np.int64)


WSUM_CLASSES = 256  # weights with more distinct values than this: a plain matmul


def wsum(w, m) -> np.ndarray:
    """``w @ m`` for per-key weights ``w`` and a boolean layout ``m`` (keys × sites): what the
    keys each site holds weigh there. Exact for integer weights, and O(keys × sites) byte
    operations where the matmul casts ``m`` to the weights' type (int64: no BLAS) first: the
    keys are grouped by weight (a dense relation's blocks have a few sizes), each group one
    count of its rows per site (~13× faster at 6400 keys × 1024 sites)."""
    w = np.asarray(w)
    if m.dtype != np.bool_ or m.ndim != 2 or w.ndim != 1 or len(w) < 64 or w.dtype.kind not in "iuf":
        return w @ m
    lo, hi = w.min(), w.max()
    if lo == hi:
        return lo * col_counts(m)
    u, inv = np.unique(w, return_inverse=True)
    if len(u) > WSUM_CLASSES:
        return w @ m
    order = np.argsort(inv, kind="stable")
    ms = m[order]
    bounds = np.searchsorted(inv[order], np.arange(len(u) + 1))
    out = np.zeros(m.shape[1], np.result_type(w.dtype, np.int64))
    for j in range(len(u)):
        a, b = bounds[j], bounds[j + 1]
        if b > a and u[j]:
            out += u[j] * col_counts(ms[a:b])
    return out


def n_keys(t) -> int:
    return math.prod(t.frontier)


# ---------------------------------------------------------------- layouts


def onehot(sites: np.ndarray, s: int) -> np.ndarray:
    m = np.zeros((len(sites), s), bool)
    m[np.arange(len(sites)), sites] = True
    return m


def grid_sites(grid: Grid, frontier, s: int) -> np.ndarray:
    """``grid.site(key)`` for every key below ``frontier`` (row-major)."""
    return site_table(grid, tuple(frontier), s).ravel()


def grid_layout(grid, frontier, s) -> np.ndarray:
    return onehot(grid_sites(grid, frontier, s), s)


def all_layout(frontier, s) -> np.ndarray:
    return np.ones((math.prod(frontier), s), bool)


def sitemap_layout(mapping: dict, frontier, s) -> np.ndarray:
    """The layout of an explicit placement ``{key: sites}`` (one NumPy call for all keys: this is
    on every replanning of persisted inputs)."""
    m = np.zeros((math.prod(frontier), s), bool)
    pairs = [(k, t) for k, sites in mapping.items() for t in sites]
    if not pairs:
        return m
    keys = np.array([k for k, _ in pairs], np.int64).reshape(len(pairs), len(frontier))
    rows = np.ravel_multi_index(tuple(keys.T), tuple(frontier)) if len(frontier) else np.zeros(len(pairs), np.int64)
    m[rows, [t for _, t in pairs]] = True
    return m


MEMO_CELLS = 1 << 20  # layouts up to this many (tuple, site) cells are memoized


def grid_need(grid: Grid, pos, side_frontier, s: int) -> np.ndarray:
    """For a relation whose dim i is dim ``pos[i]`` of the grid's key space: the sites of the
    grid cells each of its tuples belongs to, as a layout. Not to be written: a small one is
    kept for the next costing of the same grid, as every re-cost of a cached plan asks again."""
    pos, side_frontier = tuple(pos), tuple(side_frontier)
    if math.prod(side_frontier) * s > MEMO_CELLS:
        return _grid_need(grid, pos, side_frontier, s)
    return _grid_need_kept(grid, pos, side_frontier, s)


@lru_cache(maxsize=64)
def _grid_need_kept(grid: Grid, pos, side_frontier, s: int) -> np.ndarray:
    out = _grid_need(grid, pos, side_frontier, s)
    out.setflags(write=False)
    return out


def _grid_need(grid: Grid, pos, side_frontier, s: int) -> np.ndarray:
    n = math.prod(side_frontier)
    p = math.prod(grid.groups)
    if n == 0:
        return np.zeros((0, s), bool)
    if p == 0:
        return onehot(np.zeros(n, np.int64), s)
    coef, c = {}, 1
    for d, g in reversed(list(zip(grid.dims, grid.groups))):
        coef[d] = c
        c *= g
    side_of = {d: i for i, d in enumerate(pos)}
    groups = dict(zip(grid.dims, grid.groups))
    off = np.zeros(1, np.int64)
    for d in grid.dims:
        if d not in side_of:
            off = (off[:, None] + coef[d] * np.arange(groups[d])[None, :]).ravel()
    base = np.zeros((1,) * len(side_frontier), np.int64)
    for d in grid.dims:
        if d in side_of:
            i = side_of[d]
            shape = [1] * len(side_frontier)
            shape[i] = side_frontier[i]
            base = base + coef[d] * (np.arange(side_frontier[i]) * groups[d] // side_frontier[i]).reshape(shape)
    base = np.broadcast_to(base, tuple(side_frontier)).ravel()
    uniq, inv = np.unique(base, return_inverse=True)
    sites = grid.cell_sites(uniq[:, None] + off[None, :], s)
    m = np.zeros((len(uniq), s), bool)
    m[np.repeat(np.arange(len(uniq)), len(off)), sites.ravel()] = True
    return m[inv.ravel()]


def homes(need) -> np.ndarray:
    """Where to make each tuple of a free input that goes to the sites ``need`` (keys × sites):
    one of its own sites, the tuples going to one set of sites taking those sites in turn, so
    each tuple moves once fewer and the sites make, send and receive equal shares."""
    t = len(need)
    if not t:
        return np.zeros(0, np.int64)
    words = _row_words(need)
    order = np.lexsort(words[::-1])  # equal rows together
    ordered = words[:, order]
    new = np.ones(t, bool)
    new[1:] = (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)
    starts = np.flatnonzero(new)
    group = np.empty(t, np.int64)
    group[order] = np.cumsum(new) - 1
    rank = np.empty(t, np.int64)
    rank[order] = np.arange(t) - starts[group[order]]
    rows = need[order[starts]]  # one per distinct set of sites
    sites = np.argsort(~rows, axis=1, kind="stable")  # each row's sites first, in order
    return sites[group, rank % np.maximum(rows.sum(axis=1), 1)[group]]


def _row_words(layout) -> np.ndarray:
    """Each row of a boolean layout as 64-bit words (words × rows): sorting rows by them is a
    few integer sorts, where ``np.unique(axis=0)`` sorted rows as opaque records (10× slower)."""
    packed = np.packbits(layout, axis=1)
    pad = -packed.shape[1] % 8
    packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(">u8").T


def gather(layout, side_frontier, pos, out_frontier) -> np.ndarray:
    """Rows of a layout over ``out_frontier`` taken from the side tuple each out key projects to
    (side dim i is out dim ``pos[i]``)."""
    if not math.prod(out_frontier):
        return np.zeros((0, layout.shape[1]), bool)
    if not out_frontier:
        return layout[:1]
    idx = np.indices(tuple(out_frontier)).reshape(len(out_frontier), -1)
    side = tuple(idx[d] for d in pos)
    rows = np.ravel_multi_index(side, side_frontier) if side else np.zeros(idx.shape[1], np.int64)
    return layout[rows]


def reduce_to(layout, frontier, keep_dims, out_frontier, out_pos) -> np.ndarray:
    """OR of a layout over the key dims not in ``keep_dims``; the result is over ``out_frontier``
    where ``keep_dims[i]`` is out dim ``out_pos[i]`` (other out dims: broadcast)."""
    s = layout.shape[1]
    if not math.prod(frontier):
        return np.zeros((math.prod(out_frontier), s), bool)
    grid = layout.reshape(tuple(frontier) + (s,))
    drop = tuple(d for d in range(len(frontier)) if d not in keep_dims)
    red = grid.any(axis=drop) if drop else grid
    kept = [d for d in range(len(frontier)) if d in keep_dims]  # order of red's axes
    shape = [1] * len(out_frontier) + [s]
    perm = [kept.index(d) for d in keep_dims]
    red = np.transpose(red, perm + [len(perm)])
    for i, d in enumerate(keep_dims):
        shape[out_pos[i]] = frontier[d]
    red = red.reshape([frontier[d] for d in keep_dims] + [s])
    order: np.ndarray | list[int] = np.argsort(out_pos) if out_pos else []
    red = np.transpose(red, list(order) + [len(out_pos)]) if len(out_pos) else red
    return np.broadcast_to(red.reshape(shape), tuple(out_frontier) + (s,)).reshape(-1, s)


def single(layout) -> bool:
    return bool((row_counts(layout) <= 1).all())


# ---------------------------------------------------------------- inputs and candidates


@dataclass
class View:
    """A planned relation as a consumer sees it: its type, where it canonically is (``layout``),
    where copies of it already sit (``present``, a superset: moves by other consumers), whether
    it is a free input (a strategy may lay it out at no cost) and whether it is an input already
    placed on the cluster (persisted: its placement is whatever earlier work left)."""

    type: RelationType
    layout: np.ndarray
    present: np.ndarray
    free: bool = False
    placed: bool = False
    home: tuple[int, int] | None = None  # a free input's ``Input.home``


Step = tuple[str, int | None, int]  # (what, which input (None: the partial results), bytes moved)


@dataclass
class Detail:
    """What ``explain()`` says of a candidate beyond its totals: its moves, step by step
    (``steps``), how its aggregation ended (``aggregate``: "local" or "two-phase"), the input a
    ``bmm`` broadcasts (``bside``), a two-phase plan's placement rule (``placement``) and its
    compute balance (``balance``: busiest site over the mean)."""

    steps: list[Step] = field(default_factory=list)
    aggregate: str | None = None
    bside: str | None = None
    placement: str | None = None
    balance: float | None = None

    def facts(self) -> dict[str, Any]:
        """The report's facts of one operator: the broadcast side, placement and balance given."""
        named = {"bside": self.bside, "placement": self.placement, "balance": self.balance}
        return {k: v for k, v in named.items() if v is not None}


@dataclass
class Cand:
    """One strategy's cost for one operator: what it moves and computes, where its result sits."""

    layout: np.ndarray
    moved: int = 0
    paper: int = 0
    peak: np.ndarray | None = None
    flops: np.ndarray | None = None
    tasks: int = 0
    present: list = field(default_factory=list)  # per input: present after this operator's moves
    detail: Detail = field(default_factory=Detail)  # explain()'s facts
    site_moved: np.ndarray | None = None  # bytes each site receives (None: not known per site)
    site_sent: np.ndarray | None = None  # bytes each site sends (None: not known per site)
    terms: dict = field(default_factory=dict)  # registered CostTerms (``cost.TERMS``): name -> value
    # the strategy costed, every parameter costing chose filled in (``operators.registry``): what
    # the final costing and the plan builder take back; ``detail`` only informs ``explain()``
    strategy: Strategy | None = None


class Moves:
    """Accumulates one candidate's moves of its inputs (mirrors ``layout.place``/``broadcast`` and
    the grid join's replication, byte for byte)."""

    def __init__(self, views, s):
        self.views, self.s = views, s
        # one relation read twice (x @ x) is one set of copies, unless it is a free input
        # (each read places its own)
        self._slot = [
            next(j for j, w in enumerate(views) if w is v and not v.free) if not v.free else i
            for i, v in enumerate(views)
        ]
        self._present = {j: views[j].present for j in set(self._slot)}
        self.moved = self.paper = 0
        self.site_in = np.zeros(s, np.int64)
        self.site_moved = np.zeros(s, np.int64)  # bytes each site receives
        self.site_sent = np.zeros(s)  # bytes each site sends (a copy held by several: shared evenly)
        self.steps = []

    @property
    def present(self) -> list:
        """Per input: where copies of it sit after this candidate's moves."""
        return [self._present[j] for j in self._slot]

    def _get(self, i):
        return self._present[self._slot[i]]

    def _set(self, i, layout):
        self._present[self._slot[i]] = layout

    def _base(self, i, need=None):
        """A free input is first made at no cost: by PART(all dims), or where ``homes(need)`` says."""
        v = self.views[i]
        if v.free:
            f = v.type.frontier
            at = grid_sites(part_all(f, v.home), f, self.s) if need is None else homes(need)
            self._set(i, held(onehot(at, self.s), v.type))
        return self._get(i)

    def _send(self, i, need, what, paper_copies):
        v = self.views[i]
        need = held(need, v.type)
        nb = key_bytes(v.type)
        have = self._get(i)
        new = need & ~have
        per_site = wsum(nb, new)
        moved = int(per_site.sum())
        self.moved += moved
        self.site_moved += per_site
        self.site_sent += sent_from(have, nb * row_counts(new))
        self.paper += int(key_elements(v.type).sum()) * paper_copies
        self._set(i, self._get(i) | need)
        self.site_in += wsum(nb, need)
        self.steps.append((what, i, moved))
        return need

    def place(self, i, need, what):
        """Input i laid out as ``need`` (one site per tuple): made there if free, kept if it is
        already exactly so, else shuffled."""
        v = self.views[i]
        nb = key_bytes(v.type)
        need = held(need, v.type)
        if v.free:
            self._set(i, need)
        if v.free or np.array_equal(need, v.layout):
            self.site_in += wsum(nb, need)
            return need
        return self._send(i, need, what, 1)

    def broadcast(self, i, partners=None):
        """Input i to every site; with ``partners = (layout, type, their join dims, ours)``
        of the join's other side, only to the sites holding a tuple it joins with (site 0 if
        none), as ``layout.broadcast`` builds it."""
        self._base(i)
        t = self.views[i].type
        if partners is None or len(set(self._slot)) < len(self._slot):
            # one relation on both sides (x @ x.T): its copies serve both, so it goes everywhere
            need = all_layout(t.frontier, self.s)
        else:
            layout, ptype, their, ours = partners
            need = reduce_to(held(layout, ptype), ptype.frontier, list(their), t.frontier, list(ours)).copy()
            need[~need.any(axis=1), 0] = True
        return self._send(i, need, "broadcast", self.s)

    def replicate(self, i, grid, pos, out_frontier):
        """Input i copied to every cell of ``grid`` (over the join's key space) it belongs to."""
        v = self.views[i]
        need = held(grid_need(grid, pos, v.type.frontier, self.s), v.type)
        self._base(i, need)
        copies = math.prod(f for d, f in enumerate(out_frontier) if d not in pos)
        return self._send(i, need, f"replicate to {grid}", copies)


# ---------------------------------------------------------------- per-site compute


def _extent_means(t, pos_of_dim, cell_dims, cell_groups, frontier):
    """Per chunk axis of relation ``t`` (key dim d is cell-space dim ``pos_of_dim[d]``): the mean
    extent within each cell, as an array broadcastable over the cell grid (cell_dims order)."""
    out = []
    ncell = len(cell_dims)
    for ax in t.axes:
        dims = [pos_of_dim[d] for d in ax.key_dims]
        if len(dims) == 1 and dims[0] in cell_dims:
            d = dims[0]
            j = cell_dims.index(d)
            n, f = cell_groups[j], frontier[d]
            gid = np.arange(f) * n // f
            sums = np.bincount(gid, weights=ax.sizes.astype(np.float64), minlength=n)
            cnt = np.bincount(gid, minlength=n).clip(min=1)
            shape = [1] * ncell
            shape[j] = n
            out.append((sums / cnt).reshape(shape))
        else:
            out.append(np.full((1,) * ncell, float(ax.sizes.mean()) if ax.sizes.size else 0.0))
    return out


def cell_flops(join, cell_dims, cell_groups) -> np.ndarray:
    """Flops of the join's kernel over every cell (row-major over ``cell_groups``): a cell holds,
    along join-output dim ``cell_dims[j]``, one of ``cell_groups[j]`` contiguous block groups,
    and every block along the other dims. Kept on the join's type per cell grid (read-only)."""
    memo = join.type._cache.setdefault("cell_flops", {})
    at = (tuple(cell_dims), tuple(cell_groups))
    out = memo.get(at)
    if out is None:
        out = memo[at] = _cell_flops(join, *at)
        out.setflags(write=False)
    return out


def _cell_flops(join, cell_dims, cell_groups) -> np.ndarray:
    frontier = join.type.frontier
    cell_dims, cell_groups = list(cell_dims), list(cell_groups)
    if not cell_dims:
        cell_dims, cell_groups = [], []
    left = _extent_means(join.left.type, list(range(join.left.type.key_arity)), cell_dims, cell_groups, frontier)
    right = _extent_means(
        join.right.type, [join.right_out[d] for d in range(join.right.type.key_arity)], cell_dims, cell_groups, frontier
    )
    count = np.ones((1,) * len(cell_dims))
    for d, f in enumerate(frontier):
        if d in cell_dims:
            j = cell_dims.index(d)
            n = cell_groups[j]
            cnt = np.bincount(np.arange(f) * n // f, minlength=n).astype(float)
            shape = [1] * len(cell_dims)
            shape[j] = n
            count = count * cnt.reshape(shape)
        else:
            count = count * f
    k = join.kernel
    if isinstance(k, Einsum):
        per = k.flops(left, right)
    else:
        per = np.maximum(math.prod(left) if left else 1.0, math.prod(right) if right else 1.0)
    full = np.broadcast_to(per * count, tuple(cell_groups))
    return full.ravel()


def grid_key_sites(grid: Grid, frontier, keys: np.ndarray, s: int) -> np.ndarray:
    """``grid.site(key)`` for each row of ``keys`` (as ``Grid.table``, without the whole grid)."""
    p = math.prod(grid.groups)
    if p == 0:
        return np.zeros(len(keys), np.int64)
    g = np.zeros(len(keys), np.int64)
    for d, n in zip(grid.dims, grid.groups):
        g = g * n + keys[:, d] * n // frontier[d]
    return grid.cell_sites(g, s)


def makes_products(join) -> bool:
    """``Kernel.makes_products`` of a join's inputs (cached: the search asks per candidate)."""
    out = join.type._cache.get("makes_products")
    if out is None:
        out = join.type._cache["makes_products"] = join.kernel.makes_products(join.left.type, join.right.type)
    return out


def key_flops(join) -> np.ndarray:
    """Flops of the join's kernel at each key a block-sparse join holds (``present_keys`` order)."""
    out = join.type._cache.get("key_flops")
    if out is None:
        lt, rt = join.left.type, join.right.type
        kl = lt.key_arity
        rpos = [join.right_out[d] for d in range(rt.key_arity)]
        out = np.array(
            [
                float(join.kernel.flops(lt.chunk_shape(k[:kl]), rt.chunk_shape(tuple(k[d] for d in rpos))))
                for k in present_keys(join.type).tolist()
            ],
            np.float64,
        )
        join.type._cache["key_flops"] = out
    return out


def sparse_products(join, group_by, out_frontier, sites, s):
    """(where each group has a partial result, as a layout over ``out_frontier``; per-site flops)
    when the products a block-sparse join holds are computed at ``sites`` (one per present key,
    ``present_keys`` order): only the pairs that meet make products."""
    keys = present_keys(join.type)
    partial = np.zeros((math.prod(out_frontier), s), bool)
    if len(keys):
        rows = np.ravel_multi_index(keys[:, list(group_by)].T, out_frontier) if group_by else np.zeros(len(keys), int)
        partial[rows, sites] = True
    return partial, site_sum(key_flops(join), sites, s)


def side_rows(join_keys: np.ndarray, pos, frontier) -> np.ndarray:
    """Row (in ``frontier``'s row-major order) of the side tuple of each join key (side dim i is
    join dim ``pos[i]``)."""
    if not pos:
        return np.zeros(len(join_keys), np.int64)
    return np.ravel_multi_index(join_keys[:, list(pos)].T, tuple(frontier))


def site_sum(values, sites, s) -> np.ndarray:
    return np.bincount(sites, weights=values, minlength=s)[:s]


def first_site(layout) -> tuple[int, int] | None:
    """``Grid.home`` starting a grid on the lowest site of the first tuple ``layout`` places
    (None: site 0, or no tuple)."""
    rows = np.flatnonzero(layout.any(axis=1))
    site = int(layout[rows[0]].argmax()) if len(rows) else 0
    return (site, layout.shape[1]) if site else None


def start(v: View) -> tuple[int, int] | None:
    """``Grid.home`` where grouping ``v`` starts: a free input's own, a placed relation's first
    tuple's site (``layout.start``)."""
    return v.home if v.free else first_site(v.layout)


def placing_sites(layout) -> np.ndarray:
    """The (first) site of every row of a single-site layout (rows without a site: -1)."""
    has = layout.any(axis=1)
    return np.where(has, layout.argmax(axis=1), -1)


# ---------------------------------------------------------------- aggregations


def finish(cand_moves, partial, out_type, s, products=True, home=None):
    """ΣL after products/tuples sit per ``partial`` (a layout over the output keys: where each
    group has a partial result; ``products``: the partials are block products, not maps), the
    partials summed by PART(all dims) turned by ``home`` (``Grid.home``).
    Returns (out layout, moved, paper, tasks, how)."""
    nb = key_bytes(out_type)
    counts = row_counts(partial)
    tasks = int(counts.sum())
    if (counts <= 1).all():
        return partial, 0, 0, tasks, "local"
    f = out_type.frontier
    home = grid_layout(part_all(f, home), f, s)
    moved = int(nb @ row_counts(partial & ~home))  # into each key's home: see ``partials_in``
    paper = int(key_elements(out_type) @ counts)
    # one final task per group made of several partials. It waits for partials from other
    # sites, so emission fuses the partial at the home into it only when that partial is no
    # block product (``emit._Tasks.fused``) and fetches no moved chunk (then it stays a task,
    # one this count misses)
    multi = counts > 1
    tasks += int(multi.sum()) - (0 if products else int((multi & (partial & home).any(axis=1)).sum()))
    return home, moved, paper, tasks, "two-phase"


def partials_in(partial, home, out_type) -> np.ndarray:
    """Bytes each site receives when ``finish`` brings the partial results to their homes."""
    return wsum(key_bytes(out_type) * row_counts(partial & ~home), home)


def partials_out(partial, home, out_type) -> np.ndarray:
    """Bytes each site sends when ``finish`` brings the partial results to their homes."""
    return wsum(key_bytes(out_type), partial & ~home)


def sent_from(have, nbytes) -> np.ndarray:
    """Bytes each site sends when ``nbytes[k]`` of copies of key k leave the sites holding it
    (``have``, keys × sites); a key held by several sites is sent by each in equal share (Dask
    picks one holder per transfer)."""
    holders = row_counts(have)
    share = np.zeros(len(holders))
    np.divide(nbytes, holders, out=share, where=holders > 0)
    return wsum(share, have)


__all__ = [
    "held",
    "present_keys",
    "grid_key_sites",
    "sparse_products",
    "side_rows",
    "partials_in",
    "partials_out",
    "sent_from",
    "wsum",
    "View",
    "Detail",
    "Cand",
    "Moves",
    "key_bytes",
    "key_elements",
    "grid_layout",
    "grid_need",
    "gather",
    "reduce_to",
    "all_layout",
    "sitemap_layout",
    "cell_flops",
    "finish",
    "single",
    "site_sum",
    "placing_sites",
    "onehot",
    "grid_sites",
]
