"""Two-phase execution of aggregated join trees: lineage (pilot run on keys) and greedy placement.

Jankov et al., *Distributed Numerical and Machine Learning Computations via Two-Phase Execution
of Aggregated Join Trees* (PVLDB 14(7), 2021), read with ``shared/notes/papers-errata.md``.
Pure NumPy: no Dask, no TRA nodes. Keys in, a frozen dataclass out.

**Lineage** (``lineage``). An aggregated join tree is given einsum-style: one tuple of labels per
input (``"ik"``, ``"kj"``) and the output labels (``"ij"``). Inputs join naturally on shared
labels; a *join group* is one combination of input tuples that agree on every shared label, keyed
by the union of the labels in order of first appearance (``(i, k, j)``); an *aggregation group*
is one distinct projection of the join keys onto the output labels (``(i, j)``). Only the keys
that exist take part, so a block-sparse input (a hole is a missing key) yields only the join
groups whose every tuple exists. The join is a sort-based NumPy join (``np.unique`` codes, a
stable argsort and ``np.repeat``): no nested loops, no recursion, work ``O(N_j + n log n)`` for
two inputs (``N_j`` join groups, ``n`` input tuples). With three or more inputs the inputs are
joined left to right, and an intermediate join may be larger than the final one.

**Cost model** (the paper's Sec. 5.2, Eq. 1, with the errata): for a placement of every join group
``j`` (site ``X_j``) and aggregation group ``g`` (site ``Y_g``) on ``s`` sites,

``T = max_s T_F + max_s T_π + max_s T_g + max_s T_Σ + tasks × task_overhead``

- ``T_F(s)``: bytes of input tuples site ``s`` *receives* ÷ bandwidth. A tuple is sent to ``s``
  once if some join group on ``s`` needs it and ``s`` holds no replica of it (one copy serves
  every join group there). A tuple with no site (not placed: a lazily created input) is made,
  for free, at one site (its *home*: the site of the first join group that needs it in the
  greedy's order; ``evaluate_placement`` defaults to the lowest needing site) and sent to the
  others.
- ``T_π(s)``: flops of the join groups on ``s`` plus the local pre-summing of partial aggregates
  (a site with ``c`` join groups of one aggregation group adds them into one partial: ``c - 1``
  adds) ÷ flop rate.
- ``T_g(s)``: bytes of partial aggregates ``s`` receives ÷ bandwidth: every site other than
  ``Y_g`` that computes some join group of ``g`` sends ``Y_g`` its one pre-summed partial. (The
  paper's Eq. 5 counts one transfer per join group; pre-summing is what Dask plans do.)
- ``T_Σ(s)``: flops of the final adds on ``s`` ÷ flop rate: ``g`` has ``P_g`` partials (one per
  site computing its join groups), combined at ``Y_g`` with ``P_g - 1`` adds.
- tasks: ``N_j`` join tasks + one pre-sum task per (aggregation group, site computing it) + one
  final task per aggregation group (the scheduler is one, so tasks × overhead is not per site).

The rates are ``cost.Rates`` (bandwidth bytes/s, flop rate, per-task overhead) or plain floats.

**Greedy** (``place_greedy``, the paper's Fig. 5). Aggregation groups are taken one at a time in
a fixed order (the paper leaves it open; errata): by *descending* total join flops, then
descending number of join groups, then descending input bytes, then ascending output key
(biggest first, as in longest-processing-time scheduling). For the group ``g`` taken:

- **Rule 1** ("put join groups where they are aggregated"): for every site ``s``, the plan with
  ``g`` and all its join groups on ``s``; the cheapest ``s``.
- **Rule 2** ("put join groups close to their input tuples"): each join group of ``g`` in turn
  (ascending join key) goes to its cheapest site given everything assigned so far (``T_g`` and
  ``T_Σ`` of ``g`` are not yet known and are left out, as the paper says); when none is left,
  ``g`` itself goes to its cheapest site. The paper states Rule 2 as one step; it is iterated
  here until ``g`` is placed so that the two candidates assign the same groups and their costs
  compare like for like.
- the cheaper complete plan is kept; ties go to Rule 1 (Fig. 5's ``≤``). A group with one join
  group gets the same site and cost from both rules, so Rule 2 is not run there.

Every "cheapest site" is the lowest predicted ``T`` (equal within a relative 1e-12), then the
fewest bytes moved by that step (for a join group under Rule 2, a site not yet computing any
join group of ``g`` counts one partial aggregate more: only one partial site can be ``g``'s
home), then the lowest site number. With ``objective="bytes"`` the first two keys swap: fewest
bytes first, then time (not the paper's objective; a bytes-first variant for comparison).
Costs are updated incrementally (per-site totals, and which tuples each site holds), so one
candidate site costs ``O(N̄_j)`` and
the whole greedy ``O(N_g · N_s · N̄_j)`` plus ``O(N_j log N_j)`` of set-up: the paper's bound.

``evaluate_placement`` recomputes every figure from a placement, independently of the greedy;
``brute_force`` enumerates every placement of a tiny instance; ``static_placement`` gives the
whole-relation baselines (by output key, by join key, owner computes).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union

import numpy as np

from .cost import Rates
from .symbolic import sent_from

__all__ = [
    "Lineage",
    "Placement",
    "TwoPhasePlan",
    "lineage",
    "matmul_lineage",
    "einsum_sizes",
    "layout",
    "Problem",
    "problem",
    "greedy",
    "static",
    "evaluate",
    "place_greedy",
    "evaluate_placement",
    "brute_force",
    "static_placement",
    "two_phase",
]

Labels = Union[str, Sequence[Hashable]]
SiteSpec = Union[np.ndarray, Sequence[Any]]  # a (n, s) bool layout, or per key: a site, a list of sites, or None


# --------------------------------------------------------------------------------------------
# Lineage: the pilot run on keys
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Lineage:
    """Join groups and aggregation groups of an aggregated join tree.

    ``join_keys[j]``: the key of join group ``j`` over ``join_labels`` (lexicographic order);
    ``join_tuples[j, i]``: the row of input ``i``'s key array that takes part in ``j``;
    ``agg_keys[g]``: the output key of aggregation group ``g`` over ``out_labels`` (lexicographic);
    ``join_agg[j]``: the aggregation group join group ``j`` feeds (each feeds exactly one).
    """

    input_labels: tuple
    join_labels: tuple
    out_labels: tuple
    input_sizes: tuple  # tuples per input
    join_keys: np.ndarray  # (N_j, len(join_labels)) int64
    join_tuples: np.ndarray  # (N_j, n_inputs) int64
    agg_keys: np.ndarray  # (N_g, len(out_labels)) int64
    join_agg: np.ndarray  # (N_j,) int64

    @property
    def n_join(self) -> int:
        return int(self.join_keys.shape[0])

    @property
    def n_agg(self) -> int:
        return int(self.agg_keys.shape[0])

    def groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(order, ptr): the join groups of aggregation group ``g`` are ``order[ptr[g]:ptr[g+1]]``,
        ascending by join key."""
        order = np.lexsort((np.arange(self.n_join), self.join_agg)).astype(np.int64)
        ptr = np.zeros(self.n_agg + 1, np.int64)
        np.cumsum(np.bincount(self.join_agg, minlength=self.n_agg), out=ptr[1:])
        return order, ptr


def _labels(spec: Labels) -> tuple:
    out = tuple(spec)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated label in {spec!r}: a diagonal is not an aggregated join tree input here")
    return out


def _keys(k: Any, rank: int, name: str) -> np.ndarray:
    a = np.asarray(k, dtype=np.int64)
    if a.size == 0:
        return np.zeros((0, rank), np.int64)
    a = a.reshape(-1, rank) if rank else a.reshape(-1, 0)
    if a.shape[1] != rank:
        raise ValueError(f"{name}: keys of arity {a.shape[1]} for {rank} labels")
    if a.shape[0] > 1 and rank and np.unique(a, axis=0).shape[0] != a.shape[0]:
        raise ValueError(f"{name}: duplicate keys (keys must identify tuples)")
    return a


def _row_codes(*tables: np.ndarray) -> list[np.ndarray]:
    """One int code per row, equal rows equal codes, across all ``tables`` (same width)."""
    width = tables[0].shape[1]
    if width == 0:
        return [np.zeros(t.shape[0], np.int64) for t in tables]
    both = np.concatenate(tables, axis=0)
    if both.shape[0] == 0:
        return [np.zeros(0, np.int64) for _ in tables]
    _, inv = np.unique(both, axis=0, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    cuts = np.cumsum([t.shape[0] for t in tables])[:-1]
    return list(np.split(inv, cuts))


def _natural_join(lk: np.ndarray, lcols: list, rk: np.ndarray, rcols: list) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs (left row, right row) that agree on the shared columns; sort-based, linear in
    the output plus a sort of the inputs."""
    shared = [c for c in rcols if c in lcols]
    lcode, rcode = _row_codes(lk[:, [lcols.index(c) for c in shared]], rk[:, [rcols.index(c) for c in shared]])
    ncode = int(max(lcode.max(initial=-1), rcode.max(initial=-1))) + 1
    order = np.argsort(rcode, kind="stable")
    count = np.bincount(rcode, minlength=ncode)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    per_left = count[lcode] if lcode.size else np.zeros(0, np.int64)
    left = np.repeat(np.arange(lk.shape[0], dtype=np.int64), per_left)
    first = np.repeat(np.cumsum(per_left) - per_left, per_left)
    offset = np.arange(left.size, dtype=np.int64) - first
    right = order[start[lcode[left]] + offset] if left.size else np.zeros(0, np.int64)
    return left, right.astype(np.int64)


def lineage(keys: Sequence[Any], labels: Sequence[Labels], out: Labels) -> Lineage:
    """The pilot run on keys: join groups and aggregation groups.

    ``keys[i]``: input ``i``'s existing keys, shape ``(n_i, len(labels[i]))`` (block indices);
    ``labels[i]``: its label per key dim; ``out``: the output labels (a subset of the inputs').
    """
    labs = [_labels(lab) for lab in labels]
    outl = _labels(out)
    if not labs:
        raise ValueError("an aggregated join tree needs at least one input")
    ks = [_keys(k, len(lab), f"input {i}") for i, (k, lab) in enumerate(zip(keys, labs))]
    if len(ks) != len(labs):
        raise ValueError("one key array per input")
    cols = list(labs[0])
    table = ks[0]
    rows = np.arange(ks[0].shape[0], dtype=np.int64)[:, None]
    for i in range(1, len(ks)):
        left, right = _natural_join(table, cols, ks[i], list(labs[i]))
        new = [c for c in labs[i] if c not in cols]
        table = np.concatenate([table[left], ks[i][right][:, [labs[i].index(c) for c in new]]], axis=1)
        rows = np.concatenate([rows[left], right[:, None]], axis=1)
        cols += new
    missing = [c for c in outl if c not in cols]
    if missing:
        raise ValueError(f"output labels {missing} are not input labels")
    if table.shape[0]:
        order = np.lexsort(table.T[::-1]) if table.shape[1] else np.arange(table.shape[0])
        table, rows = table[order], rows[order]
    proj = table[:, [cols.index(c) for c in outl]]
    if table.shape[0] == 0:
        agg_keys, join_agg = np.zeros((0, len(outl)), np.int64), np.zeros(0, np.int64)
    elif not outl:
        agg_keys, join_agg = np.zeros((1, 0), np.int64), np.zeros(table.shape[0], np.int64)
    else:
        agg_keys, inv = np.unique(proj, axis=0, return_inverse=True)
        join_agg = inv.reshape(-1).astype(np.int64)
    return Lineage(
        input_labels=tuple(labs),
        join_labels=tuple(cols),
        out_labels=outl,
        input_sizes=tuple(int(k.shape[0]) for k in ks),
        join_keys=table.astype(np.int64),
        join_tuples=rows.astype(np.int64).reshape(table.shape[0], len(ks)),
        agg_keys=agg_keys.astype(np.int64),
        join_agg=join_agg,
    )


def matmul_lineage(a_keys: Any, b_keys: Any) -> Lineage:
    """C[i, j] = Σ_k A[i, k] · B[k, j]: join groups keyed (i, k, j), aggregation groups (i, j)."""
    return lineage([a_keys, b_keys], ["ik", "kj"], "ij")


def einsum_sizes(
    lin: Lineage, extents: dict, itemsize: int = 8
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Bytes and flops from block extents: ``extents[label][b]`` is the size of block ``b`` along
    ``label``. Returns (per input: bytes of each tuple, flops of each join group (Einsum's count:
    2 × product of extents when something is summed, else 1 ×), bytes of each partial aggregate,
    flops of one add of two partials)."""
    ext = {lab: np.asarray(v, dtype=np.int64) for lab, v in extents.items()}
    contracted = any(lab not in lin.out_labels for lab in lin.join_labels)
    tb = [np.zeros(m, np.int64) for m in lin.input_sizes]  # a tuple in no join group never moves
    jf = np.full(lin.n_join, 2 if contracted else 1, np.int64)
    for d, lab in enumerate(lin.join_labels):
        jf = jf * ext[lab][lin.join_keys[:, d]]
    ob = np.full(lin.n_agg, itemsize, np.int64)
    for d, lab in enumerate(lin.out_labels):
        ob = ob * ext[lab][lin.agg_keys[:, d]]
    # input tuple sizes from the join groups they take part in
    for i, labs in enumerate(lin.input_labels):
        size = np.full(lin.n_join, itemsize, np.int64)
        for lab in labs:
            size = size * ext[lab][lin.join_keys[:, lin.join_labels.index(lab)]]
        tb[i][lin.join_tuples[:, i]] = size
    return tb, jf, ob, ob // itemsize


# --------------------------------------------------------------------------------------------
# Placement, exact costing
# --------------------------------------------------------------------------------------------


def layout(spec: SiteSpec | None, n: int, s: int) -> np.ndarray:
    """A (n, s) bool layout from a layout or from per-key sites (an int, a list of ints, or
    None/empty for a tuple not placed). None: nothing placed."""
    if spec is None:
        return np.zeros((n, s), bool)
    if isinstance(spec, np.ndarray) and spec.dtype == bool:
        if spec.shape != (n, s):
            raise ValueError(f"layout of shape {spec.shape}, want {(n, s)}")
        return spec.copy()
    out = np.zeros((n, s), bool)
    if len(spec) != n:
        raise ValueError(f"{len(spec)} site entries for {n} keys")
    for t, sites in enumerate(spec):
        if sites is None:
            continue
        for site in np.atleast_1d(np.asarray(sites, dtype=np.int64)):
            if not 0 <= site < s:
                raise ValueError(f"site {site} of key {t} out of range for {s} sites")
            out[t, site] = True
    return out


@dataclass(frozen=True)
class _Rates:
    bandwidth: float
    flop_rate: float
    task_overhead: float


def _rates(
    rates: Rates | None, bandwidth: float | None, flop_rate: float | None, task_overhead: float | None
) -> _Rates:
    r = rates if rates is not None else Rates()
    return _Rates(
        float(bandwidth if bandwidth is not None else r.bandwidth),
        float(flop_rate if flop_rate is not None else r.flop_rate),
        float(task_overhead if task_overhead is not None else r.task_overhead),
    )


@dataclass(frozen=True, eq=False)
class Problem:
    """One placement problem in arrays (``problem``): made once, it is placed and costed many
    times (``greedy``, ``static``, ``evaluate``)."""

    lin: Lineage
    s: int
    offsets: np.ndarray  # global tuple id = offsets[i] + row
    tb: np.ndarray  # (T,) int64 bytes per tuple
    held: np.ndarray  # (T, s) bool: initial replicas
    free: np.ndarray  # (T,) bool: not placed anywhere
    jt: np.ndarray  # (N_j, n) global tuple ids
    jf: np.ndarray  # (N_j,) float flops
    ob: np.ndarray  # (N_g,) int64 bytes of one partial
    af: np.ndarray  # (N_g,) float flops of one add
    rates: _Rates

    @cached_property
    def greedy_setup(self) -> tuple:
        """(aggregation groups in greedy order, join groups by aggregation group as (order, ptr),
        distinct input tuples per aggregation group as CSR (tuples, ptr)): the greedy's set-up,
        the same for either objective."""
        lin = self.lin
        order, ptr = lin.groups()
        if lin.n_join:
            pairs = np.unique((lin.join_agg[:, None] * self.tb.size + self.jt).ravel())
            ug, ut = pairs // self.tb.size, pairs % self.tb.size
        else:
            ug = ut = np.zeros(0, np.int64)
        uptr = np.zeros(lin.n_agg + 1, np.int64)
        np.cumsum(np.bincount(ug, minlength=lin.n_agg), out=uptr[1:])
        # the order (module docstring): descending flops, join groups, input bytes; then key
        gflops = np.bincount(lin.join_agg, weights=self.jf, minlength=lin.n_agg)
        gbytes = np.bincount(ug, weights=self.tb[ut], minlength=lin.n_agg)
        keys = [lin.agg_keys[:, d] for d in range(lin.agg_keys.shape[1])][::-1]
        gorder = np.lexsort((*keys, -gbytes, -np.diff(ptr), -gflops)).astype(np.int64)
        return gorder, (order, ptr), (ut, uptr)


def problem(
    lin: Lineage,
    sites: int,
    *,
    tuple_bytes: Sequence[Any],
    tuple_sites: Sequence[SiteSpec | None] | None = None,
    join_flops: Any = 0.0,
    out_bytes: Any = 0,
    add_flops: Any = 0.0,
    rates: Rates | None = None,
    bandwidth: float | None = None,
    flop_rate: float | None = None,
    task_overhead: float | None = None,
) -> Problem:
    """The placement problem of ``lin`` on ``sites``, checked. ``tuple_bytes[i]``,
    ``tuple_sites[i]``: per input, by row of its key array (``tuple_sites[i]`` a (n_i, s) bool
    layout or per key a site / list of sites / None). ``join_flops``: per join group;
    ``out_bytes``, ``add_flops``: per aggregation group (scalars broadcast). The rates: ``rates``,
    or the single floats, which override it."""
    s = int(sites)
    if s < 1:
        raise ValueError("at least one site")
    n = len(lin.input_sizes)
    if len(tuple_bytes) != n:
        raise ValueError("one tuple_bytes entry per input")
    offsets = np.concatenate([[0], np.cumsum(lin.input_sizes)]).astype(np.int64)
    tb = np.concatenate(
        [np.broadcast_to(np.asarray(b, dtype=np.int64), (m,)) for b, m in zip(tuple_bytes, lin.input_sizes)]
    ).astype(np.int64)
    specs = list(tuple_sites) if tuple_sites is not None else [None] * n
    if len(specs) != n:
        raise ValueError("one tuple_sites entry per input")
    held = np.concatenate(
        [layout(spec, m, s) for spec, m in zip(specs, lin.input_sizes)] or [np.zeros((0, s), bool)], axis=0
    )
    return Problem(
        lin=lin,
        s=s,
        offsets=offsets,
        tb=tb,
        held=held,
        free=np.asarray(~held.any(axis=1), dtype=bool),
        jt=lin.join_tuples + offsets[:-1][None, :],
        jf=np.broadcast_to(np.asarray(join_flops, dtype=np.float64), (lin.n_join,)).copy(),
        ob=np.broadcast_to(np.asarray(out_bytes, dtype=np.int64), (lin.n_agg,)).copy(),
        af=np.broadcast_to(np.asarray(add_flops, dtype=np.float64), (lin.n_agg,)).copy(),
        rates=_rates(rates, bandwidth, flop_rate, task_overhead),
    )


@dataclass(frozen=True, eq=False)
class Placement:
    """Exact figures of one placement (``evaluate_placement``)."""

    bytes_moved: int  # input copies sent to sites not holding them + partials sent to other sites
    input_bytes_moved: int
    partial_bytes_moved: int
    site_input_received: np.ndarray  # (s,) bytes of input tuples each site receives (T_F's bytes)
    site_partial_received: np.ndarray  # (s,) bytes of partial aggregates each site receives (T_g's)
    site_sent: np.ndarray  # (s,) bytes each site sends, inputs and partials (a tuple held twice: half each)
    site_join_flops: np.ndarray  # (s,) join kernels + local pre-sums (T_π's flops)
    site_agg_flops: np.ndarray  # (s,) final adds (T_Σ's flops)
    tasks: int
    homes: np.ndarray  # (T,) the site each not-placed tuple is made at (-1: placed, or unused)
    seconds: float
    breakdown: dict

    @property
    def site_received(self) -> np.ndarray:
        return self.site_input_received + self.site_partial_received

    @property
    def site_flops(self) -> np.ndarray:
        return self.site_join_flops + self.site_agg_flops

    @property
    def receive_seconds(self) -> float:
        """The paper's objective, receivers only (what the greedy's rules minimise)."""
        return self.seconds - self.breakdown["send_excess_s"]


def evaluate(p: Problem, xs: Any, ys: Any, homes: Any = None) -> Placement:
    """``evaluate_placement`` on a made ``problem``."""
    s, lin = p.s, p.lin
    xs = np.asarray(xs, dtype=np.int64)
    ys = np.asarray(ys, dtype=np.int64)
    if xs.shape != (lin.n_join,) or ys.shape != (lin.n_agg,):
        raise ValueError("one site per join group and per aggregation group")
    if xs.size and (xs.min() < 0 or xs.max() >= s) or ys.size and (ys.min() < 0 or ys.max() >= s):
        raise ValueError("site out of range")
    T = p.tb.size
    # input tuples: one copy per (tuple, site needing it)
    need = np.unique((p.jt * s + xs[:, None]).ravel())
    t, site = need // s, need % s
    h = np.full(T, -1, np.int64)
    if homes is not None:
        given = np.asarray(homes, dtype=np.int64)
        h[p.free] = given[p.free]
    unset = p.free & (h < 0)
    if t.size:  # default home: the lowest site needing it (need is sorted by tuple, then site)
        first = np.ones(t.size, bool)
        first[1:] = t[1:] != t[:-1]
        tf, sf = t[first], site[first]
        h[tf[unset[tf]]] = sf[unset[tf]]
    moved = ~p.held[t, site] & ~(p.free[t] & (h[t] == site))
    in_site = np.bincount(site[moved], weights=p.tb[t[moved]], minlength=s).astype(np.int64)
    # senders: a placed tuple's holders in equal share, a free one's home
    tm = t[moved]
    free = ~p.held[tm].any(axis=1)
    in_sent = sent_from(p.held[tm], p.tb[tm]) + np.bincount(h[tm[free]], weights=p.tb[tm[free]], minlength=s)
    # partial aggregates: one per (aggregation group, site computing some of its join groups)
    pair, cnt = np.unique(lin.join_agg * s + xs, return_counts=True)
    g, gsite = pair // s, pair % s
    away = gsite != ys[g]
    part_site = np.bincount(ys[g[away]], weights=p.ob[g[away]], minlength=s).astype(np.int64)
    part_sent = np.bincount(gsite[away], weights=p.ob[g[away]], minlength=s)
    jflops = np.bincount(xs, weights=p.jf, minlength=s) + np.bincount(gsite, weights=p.af[g] * (cnt - 1), minlength=s)
    partials = np.bincount(g, minlength=lin.n_agg)
    aflops = np.bincount(ys, weights=p.af * np.maximum(partials - 1, 0), minlength=s)
    tasks = lin.n_join + int(pair.size) + lin.n_agg
    homes_out = np.where(p.free, h, -1)
    return _placement(p, (in_site, in_sent), (part_site, part_sent), jflops, aflops, tasks, homes_out)


def _placement(
    p: Problem,
    inputs: tuple[np.ndarray, np.ndarray],
    partials: tuple[np.ndarray, np.ndarray],
    jflops: np.ndarray,
    aflops: np.ndarray,
    tasks: int,
    homes: np.ndarray,
) -> Placement:
    """``inputs``, ``partials``: (bytes each site receives, bytes each site sends)."""
    r = p.rates
    (in_site, in_sent), (part_site, part_sent) = inputs, partials
    in_recv, part_recv = float(in_site.max(initial=0)), float(part_site.max(initial=0))
    bd = {
        "input_transfer_s": in_recv / r.bandwidth,
        "join_compute_s": float(jflops.max(initial=0.0)) / r.flop_rate,
        "partial_transfer_s": part_recv / r.bandwidth,
        # a busiest sender busier than the busiest receiver (the paper counts receivers only)
        "send_excess_s": (
            max(0.0, float(in_sent.max(initial=0)) - in_recv) + max(0.0, float(part_sent.max(initial=0)) - part_recv)
        )
        / r.bandwidth,
        "agg_compute_s": float(aflops.max(initial=0.0)) / r.flop_rate,
        "scheduling_s": tasks * r.task_overhead,
    }
    seconds = sum(bd.values())
    bd["total_s"] = seconds
    return Placement(
        bytes_moved=int(in_site.sum() + part_site.sum()),
        input_bytes_moved=int(in_site.sum()),
        partial_bytes_moved=int(part_site.sum()),
        site_input_received=in_site,
        site_partial_received=part_site,
        site_sent=np.asarray(in_sent + part_sent, dtype=np.float64),
        site_join_flops=np.asarray(jflops, dtype=np.float64),
        site_agg_flops=np.asarray(aflops, dtype=np.float64),
        tasks=tasks,
        homes=homes,
        seconds=seconds,
        breakdown=bd,
    )


def evaluate_placement(
    lin: Lineage, sites: int, join_sites: Any, agg_sites: Any, *, homes: Any = None, **costs: Any
) -> Placement:
    """Exact bytes, per-site received bytes and flops, and predicted seconds of a placement,
    computed from scratch (vectorized; independent of the greedy's incremental bookkeeping).
    ``homes``: per global tuple (inputs concatenated), where a not-placed tuple is made; default
    (or -1): the lowest site that needs it. ``costs``: as ``problem``'s."""
    return evaluate(problem(lin, sites, **costs), join_sites, agg_sites, homes)


# --------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TwoPhasePlan:
    """A two-phase placement: a site for every join group and every aggregation group, and its
    exact predicted cost (``Placement``, recomputed from scratch by ``evaluate_placement``)."""

    lineage: Lineage
    sites: int
    join_sites: np.ndarray  # (N_j,) site of join group j (keys: lineage.join_keys)
    agg_sites: np.ndarray  # (N_g,) site of aggregation group g (keys: lineage.agg_keys)
    homes: np.ndarray  # (T,) where each not-placed input tuple is made (-1: placed or unused)
    cost: Placement
    rule: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))  # per agg group: 1 or 2 (0: static)
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # agg groups in greedy order
    search_seconds: float = math.nan  # the paper's objective the greedy's incremental bookkeeping reached
    strategy: str = "two-phase"

    @property
    def join_keys(self) -> np.ndarray:
        return self.lineage.join_keys

    @property
    def agg_keys(self) -> np.ndarray:
        return self.lineage.agg_keys

    @property
    def bytes_moved(self) -> int:
        return self.cost.bytes_moved

    @property
    def site_received(self) -> np.ndarray:
        return self.cost.site_received

    @property
    def site_flops(self) -> np.ndarray:
        return self.cost.site_flops

    @property
    def seconds(self) -> float:
        return self.cost.seconds

    def input_homes(self, i: int) -> np.ndarray:
        """Homes of input ``i``'s tuples (by row of its key array)."""
        lo = int(sum(self.lineage.input_sizes[:i]))
        return self.homes[lo : lo + self.lineage.input_sizes[i]]


def _key(cost: float, moved: float, bytes_first: bool) -> tuple[float, float]:
    return (moved, cost) if bytes_first else (cost, moved)


def _before(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """``a`` ≤ ``b`` lexicographically, the first entries equal within a relative 1e-12."""
    tol = 1e-12 * max(abs(a[0]), abs(b[0]), 1e-300)
    return a[0] < b[0] - tol or (a[0] <= b[0] + tol and a[1] <= b[1])


def _argmin(cost: list, moved: list, bytes_first: bool) -> int:
    """Lowest cost (relative 1e-12), then fewest bytes, then lowest site; ``bytes_first``: fewest
    bytes, then lowest cost (relative 1e-12), then lowest site."""
    first, second = (moved, cost) if bytes_first else (cost, moved)
    best = min(first)
    tol = 1e-12 * max(abs(best), 1e-300)
    tie = [i for i, v in enumerate(first) if v <= best + tol]
    if len(tie) > 1:
        low = min(second[i] for i in tie)
        tol = 1e-12 * max(abs(low), 1e-300)
        tie = [i for i in tie if second[i] <= low + tol]
    return tie[0]


class _State:
    """The greedy's incremental bookkeeping on Python scalars and lists (with a handful of
    sites, NumPy calls per group cost more than the arithmetic): per-site totals, which tuples
    each site holds, and where each not-placed tuple is made."""

    def __init__(self, p: Problem) -> None:
        s = p.s
        self.p, self.sites = p, range(s)
        self.recv_f, self.flops_j = [0] * s, [0.0] * s
        self.recv_g, self.flops_a = [0] * s, [0.0] * s
        self.tasks = p.lin.n_join + p.lin.n_agg
        self.log: list[tuple[int, int, bool]] = []  # (tuple, site, set home) for undo
        self.present: list[list[bool]] = p.held.tolist()
        self.home: list[int] = [-1] * p.tb.size
        self.tb: list[int] = p.tb.tolist()
        self.free: list[bool] = p.free.tolist()
        self.jt: list[list[int]] = p.jt.tolist()
        self.jf: list[float] = p.jf.tolist()

    def snapshot(self) -> tuple:
        return (self.recv_f[:], self.flops_j[:], self.recv_g[:], self.flops_a[:], self.tasks)

    def restore(self, snap: tuple) -> None:
        self.recv_f, self.flops_j, self.recv_g, self.flops_a = (x[:] for x in snap[:4])
        self.tasks = snap[4]
        for t, site, homed in reversed(self.log):
            self.present[t][site] = False
            if homed:
                self.home[t] = -1
        self.log.clear()

    def seconds(self) -> float:
        r = self.p.rates
        return (
            (max(self.recv_f) + max(self.recv_g)) / r.bandwidth
            + (max(self.flops_j) + max(self.flops_a)) / r.flop_rate
            + self.tasks * r.task_overhead
        )

    def moved(self, tuples) -> list[int]:
        """Bytes each site would receive to hold every one of ``tuples`` (a tuple listed twice
        counts twice; a not-placed tuple not made yet costs nothing: it is made there)."""
        moved = [0] * self.p.s
        free, home, present, tb = self.free, self.home, self.present, self.tb
        for t in tuples:
            if free[t] and home[t] < 0:
                continue
            row, nb = present[t], tb[t]
            for site in self.sites:
                if not row[site]:
                    moved[site] += nb
        return moved

    def copy_to(self, tuples, site: int) -> int:
        """Distinct ``tuples`` present at ``site`` (a free one homed there); the bytes sent. The
        caller counts them into ``recv_f``."""
        moved = 0
        present, home = self.present, self.home
        for t in tuples:
            if present[t][site]:
                continue
            homed = self.free[t] and home[t] < 0
            if homed:
                home[t] = site
            else:
                moved += self.tb[t]
            present[t][site] = True
            self.log.append((t, site, homed))
        return moved


def _rule2_joins(st: _State, js: list, af: float, ob: int, bytes_first: bool) -> tuple:
    """Rule 2 for one aggregation group: each join group to the site where it costs least, in
    order, updating ``st``. Returns (join groups per site, bytes moved, site per join group)."""
    r, sites = st.p.rates, st.sites
    bw, fr, ov = r.bandwidth, r.flop_rate, r.task_overhead
    recv_f, flops_j = st.recv_f, st.flops_j
    rg_max, fa_max = max(st.recv_g), max(st.flops_a)
    cnt, b2, xj = [0] * st.p.s, 0, []
    for j in js:
        tup = st.jt[j]
        moved = st.moved(tup)
        rf_max, fj_max, fj = max(recv_f), max(flops_j), st.jf[j]
        cost = [
            (max(rf_max, recv_f[i] + moved[i]) + rg_max) / bw
            + (max(fj_max, flops_j[i] + fj + (af if cnt[i] else 0.0)) + fa_max) / fr
            + (st.tasks + (cnt[i] == 0)) * ov
            for i in sites
        ]
        if any(cnt):  # a new partial site of g: one more partial will move (tie-break)
            moved = [moved[i] + (ob if cnt[i] == 0 else 0) for i in sites]
        site = _argmin(cost, moved, bytes_first)
        got = st.copy_to(sorted(set(tup)), site)
        recv_f[site] += got
        b2 += got
        flops_j[site] += fj + (af if cnt[site] else 0.0)
        st.tasks += int(cnt[site] == 0)
        cnt[site] += 1
        xj.append(site)
    return cnt, b2, xj


def place_greedy(
    lin: Lineage,
    sites: int,
    *,
    rules: tuple[int, ...] = (1, 2),
    objective: str = "seconds",
    trace: list | None = None,
    **costs: Any,
) -> TwoPhasePlan:
    """The paper's greedy (Fig. 5, Rules 1 and 2; see the module docstring for the order, the
    tie-breaking and the cost model). ``costs``: as ``problem``'s (bytes and sites per input
    tuple, flops per group, the rates). ``rules=(1,)`` or ``(2,)`` runs one rule alone (the paper's Tables 2-3).
    ``objective="bytes"``: every choice by fewest bytes moved first, predicted time second (the
    default, ``"seconds"``, is the paper's: time first, bytes second). ``trace``: a list that gets,
    per aggregation group in greedy order, a dict of both rules' candidates and the choice."""
    return greedy(problem(lin, sites, **costs), rules=rules, objective=objective, trace=trace)


def greedy(
    p: Problem, *, rules: tuple[int, ...] = (1, 2), objective: str = "seconds", trace: list | None = None
) -> TwoPhasePlan:
    """``place_greedy`` on a made ``problem``."""
    if not set(rules) <= {1, 2} or not rules:
        raise ValueError("rules: a non-empty subset of (1, 2)")
    if objective not in ("seconds", "bytes"):
        raise ValueError(f"objective {objective!r}: 'seconds' or 'bytes'")
    bytes_first = objective == "bytes"
    lin, s, r = p.lin, p.s, p.rates
    gorder, (order, ptr), (ut, uptr) = p.greedy_setup
    st = _State(p)
    bw, fr, ov = r.bandwidth, r.flop_rate, r.task_overhead
    order_l, ptr_l, ut_l, uptr_l = order.tolist(), ptr.tolist(), ut.tolist(), uptr.tolist()
    af_l, ob_l = p.af.tolist(), p.ob.tolist()
    xs_l, ys_l, chosen_l = [-1] * lin.n_join, [-1] * lin.n_agg, [0] * lin.n_agg
    for g in gorder.tolist():
        js = order_l[ptr_l[g] : ptr_l[g + 1]]
        af, ob = af_l[g], ob_l[g]
        base = st.snapshot()
        tup = ut_l[uptr_l[g] : uptr_l[g + 1]]
        gf = sum(st.jf[j] for j in js) + af * (len(js) - 1)  # g's join flops and pre-sum, on one site
        c1 = b1 = s1 = None
        if 1 in rules:
            moved = st.moved(tup)  # bytes each site would receive
            rf_max, fj_max, rg_max, fa_max = max(st.recv_f), max(st.flops_j), max(st.recv_g), max(st.flops_a)
            cost = [
                (max(rf_max, st.recv_f[i] + moved[i]) + rg_max) / bw
                + (max(fj_max, st.flops_j[i] + gf) + fa_max) / fr
                + (st.tasks + 1) * ov
                for i in st.sites
            ]
            s1 = _argmin(cost, moved, bytes_first)
            c1, b1 = cost[s1], moved[s1]
        # one join group: Rule 2 puts it and g where Rule 1 does, at the same cost (a tie, which
        # Rule 1 wins), so it is not run (the trace shows both rules' candidates)
        if 2 in rules and (len(js) > 1 or c1 is None or trace is not None):
            cnt, b2, xj = _rule2_joins(st, js, af, ob, bytes_first)
            nparts = sum(c > 0 for c in cnt)
            recv = [ob * (nparts - (c > 0)) for c in cnt]
            adds = af * max(nparts - 1, 0)
            rg_max, fa_max, rf_max, fj_max = max(st.recv_g), max(st.flops_a), max(st.recv_f), max(st.flops_j)
            gcost = [
                (max(rg_max, st.recv_g[i] + recv[i]) + rf_max) / bw
                + (max(fa_max, st.flops_a[i] + adds) + fj_max) / fr
                + st.tasks * ov
                for i in st.sites
            ]
            y2 = _argmin(gcost, recv, bytes_first)
            c2 = gcost[y2]
            b2 += recv[y2]
            one = c1 is not None and b1 is not None and _before(_key(c1, b1, bytes_first), _key(c2, b2, bytes_first))
            if trace is not None:
                trace.append({"group": g, "rule1": (s1, c1, b1), "rule2": (xj, y2, c2, b2), "chosen": 1 if one else 2})
            if one:
                st.restore(base)
            else:
                st.recv_g[y2] += recv[y2]
                st.flops_a[y2] += adds
                st.log.clear()
                for j, x in zip(js, xj):
                    xs_l[j] = x
                ys_l[g], chosen_l[g] = y2, 2
                continue
        assert s1 is not None
        if trace is not None and 2 not in rules:
            trace.append({"group": g, "rule1": (s1, c1, b1), "rule2": None, "chosen": 1})
        st.recv_f[s1] += st.copy_to(tup, s1)
        st.flops_j[s1] += gf
        st.tasks += 1
        st.log.clear()
        for j in js:
            xs_l[j] = s1
        ys_l[g], chosen_l[g] = s1, 1
    xs, ys = np.array(xs_l, np.int64), np.array(ys_l, np.int64)
    chosen = np.array(chosen_l, np.int8)
    search = st.seconds() if lin.n_agg else evaluate(p, xs, ys, None).receive_seconds
    homes = np.array(st.home, np.int64)  # set for not-placed tuples only (``copy_to``)
    return TwoPhasePlan(
        lineage=lin,
        sites=s,
        join_sites=xs,
        agg_sites=ys,
        homes=homes,
        cost=evaluate(p, xs, ys, homes),
        rule=chosen,
        order=gorder,
        search_seconds=search,
    )


# --------------------------------------------------------------------------------------------
# Baselines: brute force and static rules
# --------------------------------------------------------------------------------------------


def brute_force(
    lin: Lineage,
    sites: int,
    *,
    objective: str = "seconds",
    limit: int = 2_000_000,
    **costs: Any,
) -> TwoPhasePlan:
    """The optimum over every placement of every join group and aggregation group (``s^(N_j+N_g)``
    of them; refused above ``limit``), by ``objective``: ``"seconds"``, then bytes; ``"bytes"``,
    then seconds; or ``"receive-seconds"``, the paper's objective the greedy's rules minimise.
    Not-placed tuples are made at the lowest site needing them. ``costs``: as ``problem``'s."""
    p = problem(lin, sites, **costs)
    s, nj, ng = p.s, lin.n_join, lin.n_agg
    if s ** (nj + ng) > limit:
        raise ValueError(f"{s}^{nj + ng} placements: too many for brute force")
    best: tuple | None = None
    for combo in itertools.product(range(s), repeat=nj + ng):
        a = np.asarray(combo, dtype=np.int64)
        c = evaluate(p, a[:nj], a[nj:], None)
        key = {
            "seconds": (c.seconds, c.bytes_moved),
            "bytes": (c.bytes_moved, c.seconds),
            "receive-seconds": (c.receive_seconds, c.bytes_moved),
        }[objective]
        if best is None or key < best[0]:
            best = (key, a, c)
    assert best is not None
    _, a, c = best
    return TwoPhasePlan(lin, s, a[:nj], a[nj:], c.homes, c, strategy=f"brute-force-{objective}")


def static_placement(lin: Lineage, sites: int, rule: str, **costs: Any) -> TwoPhasePlan:
    """A whole-relation baseline, costed like the greedy:

    - ``"output"``: join group and aggregation group at the site of the output key (row-major
      rank of the aggregation group, contiguous blocks: rank · s // N_g), as a grid by output dims;
    - ``"join"``: join groups by their summed-out key (rank among distinct summed-out keys, same
      blocking), aggregation groups by output key (co-partitioning on the join key, cmm-like);
    - ``"owner"``: join group at the lowest site of its first input's tuple (by output key if
      that tuple is not placed), aggregation group at the site computing most of its join groups
      (lowest site on ties): owner computes, for data already in place.
    """
    return static(problem(lin, sites, **costs), rule)


def static(p: Problem, rule: str) -> TwoPhasePlan:
    """``static_placement`` on a made ``problem``."""
    lin, s, ng = p.lin, p.s, p.lin.n_agg
    ys = np.arange(ng, dtype=np.int64) * s // max(ng, 1)
    if rule == "output":
        xs = ys[lin.join_agg]
    elif rule == "join":
        summed = [d for d, lab in enumerate(lin.join_labels) if lab not in lin.out_labels]
        code = _row_codes(lin.join_keys[:, summed])[0]
        nk = int(code.max(initial=-1)) + 1
        xs = code * s // max(nk, 1)
    elif rule == "owner":
        first = p.jt[:, 0] if lin.n_join else np.zeros(0, np.int64)
        has = p.held[first].any(axis=1) if lin.n_join else np.zeros(0, bool)
        xs = np.where(has, np.argmax(p.held[first], axis=1), ys[lin.join_agg]).astype(np.int64)
        votes = np.zeros((ng, s), np.int64)
        np.add.at(votes, (lin.join_agg, xs), 1)
        ys = np.argmax(votes, axis=1).astype(np.int64) if ng else ys
    else:
        raise ValueError(f"unknown static rule {rule!r}")
    c = evaluate(p, xs, ys, None)
    return TwoPhasePlan(lin, s, xs, ys, c.homes, c, strategy=f"static-{rule}")


def two_phase(
    keys: Sequence[Any],
    labels: Sequence[Labels],
    out: Labels,
    sites: int,
    *,
    extents: dict | None = None,
    itemsize: int = 8,
    tuple_sites: Sequence[SiteSpec | None] | None = None,
    rates: Rates | None = None,
    **costs: Any,
) -> TwoPhasePlan:
    """Lineage and greedy in one call. With ``extents`` (label → block extents) the bytes and
    flops come from ``einsum_sizes``; otherwise pass ``tuple_bytes``, ``join_flops``,
    ``out_bytes``, ``add_flops`` as to ``place_greedy``."""
    lin = lineage(keys, labels, out)
    if extents is not None:
        tb, jf, ob, af = einsum_sizes(lin, extents, itemsize)
        costs = {"tuple_bytes": tb, "join_flops": jf, "out_bytes": ob, "add_flops": af, **costs}
    return place_greedy(lin, sites, tuple_sites=tuple_sites, rates=rates, **costs)
