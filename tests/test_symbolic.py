"""Closed-form costing equals the expanded plan's exact costing and the reference IA executor.

The search prices candidates from layouts (``optimizer.symbolic``); the chosen plan is then
expanded into IA nodes. On random programs, chunkings, site counts, forced strategies and
input placements (with replicas), the predicted bytes must equal both the expanded plan's
``evaluate_cost`` and what the simulating executor moves, and the result must be NumPy's.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dask_tra as dt
from dask_tra.ia import execute, project
from dask_tra.ia.partitioning import Grid
from dask_tra.optimizer import evaluate_cost, kind_of, plan
from dask_tra.optimizer.operators.registry import STRATEGIES, variants
from dask_tra.optimizer.rewrite import simplify
from dask_tra.optimizer.search import chosen
from dask_tra.optimizer.symbolic import grid_key_sites, grid_need, grid_sites, homes, reduce_to
from dask_tra.tra import Input, TRAError, assemble
from dask_tra.tra.dag import walk_many


class Stored:
    """An array-like read lazily (a stored array): slicing it makes inputs of their own, each
    with a ``home`` (where it starts in the whole array)."""

    def __init__(self, a):
        self.a, self.shape, self.dtype, self.ndim = a, a.shape, a.dtype, a.ndim

    def __getitem__(self, box):
        return self.a[box]


def _program(draw, rng):
    shapes = {"a": (draw(st.integers(2, 9)), draw(st.integers(2, 9)))}
    shapes["b"] = (shapes["a"][1], draw(st.integers(2, 9)))
    arrays = {n: rng.standard_normal(s) for n, s in shapes.items()}
    chunks = {n: tuple(draw(st.integers(1, d)) for d in s) for n, s in shapes.items()}
    x = {n: dt.from_array(arrays[n], chunks=chunks[n]) for n in arrays}
    a, b = arrays["a"], arrays["b"]
    op = draw(st.sampled_from(["matmul", "chain", "transpose-add", "sum", "slice", "concat", "einsum", "stored"]))
    if op == "stored":  # reductions and maps of slices of a stored array, joined
        z = dt.from_array(Stored(a), chunks=chunks["a"])
        i, j = draw(st.integers(0, a.shape[0] - 1)), draw(st.integers(0, a.shape[0] - 1))
        return z[i:].sum(axis=0) + (z[j:] * 2.0).sum(axis=0), a[i:].sum(axis=0) + (a[j:] * 2.0).sum(axis=0)
    if op == "matmul":
        return x["a"] @ x["b"], a @ b
    if op == "chain":
        return (x["a"] @ x["b"]).T @ x["a"], (a @ b).T @ a
    if op == "transpose-add":
        return x["a"] + x["a"].T[: a.shape[0], : a.shape[1]] if a.shape[0] == a.shape[1] else x["a"] * 2.0, \
            (a + a.T if a.shape[0] == a.shape[1] else a * 2.0)
    if op == "sum":
        return (x["a"] * x["a"]).sum(axis=0), (a * a).sum(axis=0)
    if op == "slice":
        return x["a"][::2] @ x["b"], a[::2] @ b
    if op == "concat":
        return dt.array.concatenate([x["a"], x["a"] + 1.0], axis=0), np.concatenate([a, a + 1.0], axis=0)
    return dt.array.einsum("ij,jk->ik", x["a"], x["b"]).sum(axis=1), np.einsum("ij,jk->ik", a, b).sum(axis=1)


def _placements(inputs, s, rng):
    """Inputs already on the cluster, some blocks with a replica."""
    return {name: {k: tuple(sorted({int(rng.integers(s)) for _ in range(int(rng.integers(1, 3)))})) for k in blocks}
            for name, blocks in inputs.items()}


def _registry_forces(z, s):
    """``force={kind: strategy}`` for every registered strategy, every parameter included, that
    could plan an operator of ``z``'s simplified expression on ``s`` sites (``registry.variants``)."""
    exprs = simplify((z.expr,))
    return [{kind_of(node): st} for node in walk_many(exprs) if not isinstance(node, Input)
            for st in variants(node, s)]


def _check(z, want, s, placements, force):
    """The plan's predicted bytes equal its expanded IA plan's and the executor's; NumPy's result."""
    inputs = {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in z.sources.items()}
    p = plan(z.expr, s, placements=placements, force=force)
    res = execute(p.root, inputs)
    np.testing.assert_allclose(assemble(z.expr.type, project(p.root, res)), want, rtol=1e-9, atol=1e-9)
    assert res.bytes_moved == evaluate_cost(p.root).bytes_moved == p.cost.bytes_moved
    assert p.explain.predicted_bytes == p.cost.bytes_moved
    for alt in chosen(p.alts):  # the forced strategy, with its parameters, is the one costed and built
        if isinstance(force, dict) and kind_of(alt.node) in force:
            assert force[kind_of(alt.node)].admits(p.cands[id(alt)].strategy)
    return p


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 5), st.booleans(), st.integers(0, 2**31))
def test_predicted_bytes_equal_expanded_plan_and_executor(data, s, placed, seed):
    """Unforced, or one registered strategy with its parameters forced on an operator kind."""
    rng = np.random.default_rng(seed)
    z, want = _program(data.draw, rng)
    inputs = {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in z.sources.items()}
    placements = _placements(inputs, s, rng) if placed else None
    force = data.draw(st.sampled_from([None, *_registry_forces(z, s)]))
    try:
        _check(z, want, s, placements, force)
    except TRAError as e:  # a registered strategy that does not apply to this operator here
        assert force is not None and "is not applicable" in str(e)


def test_every_registered_strategy_costs_what_its_plan_moves():
    """Every strategy of the registry (``STRATEGIES``), with every parameter (both sides, every
    EinDecomp vector, ...), forced on the operators of programs where it applies (free and placed
    inputs, 1 to 4 sites): its closed-form costing equals its expanded plan's and the executor's
    bytes. Each class dask_tra registers applies somewhere."""
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((7, 6)), rng.standard_normal((6, 5))
    x, y = dt.from_array(a, chunks=(3, 4)), dt.from_array(b, chunks=(4, 2))
    z = dt.from_array(Stored(a), chunks=(2, 4))
    programs = [
        (x @ y, a @ b),
        (x[:6] + x[:6].T, a[:6] + a[:6].T),
        (x + dt.from_array(a + 1, chunks=(3, 4)), a + (a + 1)),
        (x.sum(axis=0), a.sum(axis=0)),
        (dt.array.concatenate([x, x + 1.0], axis=0), np.concatenate([a, a + 1.0], axis=0)),
        (dt.array.einsum("ij,jk->ik", x, y).sum(axis=1), (a @ b).sum(axis=1)),
        (z[4:].sum(axis=0) + z[3:].sum(axis=0), a[4:].sum(axis=0) + a[3:].sum(axis=0)),  # homed inputs
        (dt.array.concatenate([z[5:], z[3:5]], axis=0), np.concatenate([a[5:], a[3:5]], axis=0)),
        (z[3:5] + z[5:7], a[3:5] + a[5:7]),
        (z[1:] @ y, a[1:] @ b),
    ]
    used = set()
    for z, want in programs:
        inputs = {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in z.sources.items()}
        for s in (1, 2, 4):
            for placements in (None, _placements(inputs, s, rng)):
                for force in _registry_forces(z, s):
                    try:
                        _check(z, want, s, placements, force)
                    except TRAError as e:
                        assert "is not applicable" in str(e)
                        continue
                    used.update(type(st) for st in force.values())
    registered = {cls for cls in STRATEGIES if cls.__module__.startswith("dask_tra.")}  # not a test's own
    assert used == registered, registered - used


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=3), st.integers(1, 6), st.data())
def test_grid_layouts_match_grid_site(frontier, s, data):
    frontier = tuple(frontier)
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(frontier) - 1)))))
    groups = tuple(data.draw(st.integers(1, frontier[d])) for d in dims)
    out_of = data.draw(st.integers(1, 50))
    grid = Grid(dims, groups, (data.draw(st.integers(0, out_of - 1)), out_of))
    keys = list(np.ndindex(*frontier))
    sites = [grid.site(k, frontier, s) for k in keys]
    assert list(grid_sites(grid, frontier, s)) == sites
    assert list(grid_key_sites(grid, frontier, np.array(keys, np.int64), s)) == sites
    # a home turns the grid: group 0 on the home's site, the others after it in order
    turn = grid.home[0] * s // grid.home[1]
    plain = Grid(dims, groups)
    assert sites == [(plain.site(k, frontier, s) + turn) % s for k in keys]
    # a relation holding some of the grid's dims needs each tuple at the sites of its cells
    pos = [d for d in range(len(frontier)) if data.draw(st.booleans())]
    side = tuple(frontier[d] for d in pos)
    need = grid_need(grid, pos, side, s)
    for r, sk in enumerate(np.ndindex(*side)):
        cells = {grid.site(k, frontier, s) for k in keys if all(k[d] == v for d, v in zip(pos, sk))}
        assert set(np.flatnonzero(need[r])) == cells


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.integers(0, 2**31))
def test_homes_are_needing_sites_in_turn(n, s, seed):
    need = np.random.default_rng(seed).random((n, s)) < 0.5
    need[~need.any(axis=1), 0] = True
    at = homes(need)
    assert need[np.arange(n), at].all()  # each tuple is made at a site that needs it
    _, group = np.unique(need, axis=0, return_inverse=True)
    for g in np.unique(group):
        rows = np.flatnonzero(group.ravel() == g)
        made = np.bincount(at[rows], minlength=s)[need[rows[0]]]
        assert made.max() - made.min() <= 1  # and the tuples with one set of sites share them out


def test_free_inputs_replicated_on_a_grid_are_made_where_the_grid_needs_them():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((16, 3)), rng.standard_normal((3, 13))
    x, y = dt.from_array(a, chunks=(2, 3)), dt.from_array(b, chunks=(3, 2))  # 8 row, 7 column blocks
    z = x @ y
    inputs = {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in z.sources.items()}
    p = plan(z.expr, 4, force="d=[2, 1, 2]")
    res = execute(p.root, inputs)
    np.testing.assert_allclose(assemble(z.expr.type, project(p.root, res)), a @ b, rtol=1e-12)
    # every block goes to the two cells of its row (column) group: made at one, moved once to the other
    assert res.bytes_moved == p.cost.bytes_moved == a.nbytes + b.nbytes
    got = np.asarray(p.cost.site_moved)
    assert got.max() - got.min() <= 2 * 3 * 8  # the sites receive equal shares, to a block


def test_reduce_to_ors_over_dropped_dims():
    rng = np.random.default_rng(0)
    lay = rng.random((3 * 4 * 2, 5)) < 0.3
    out = reduce_to(lay, (3, 4, 2), [2, 0], (4, 2, 3), [1, 2])  # keep dims 2 and 0 as out dims 1 and 2
    grid = lay.reshape(3, 4, 2, 5)
    for i, j, k in np.ndindex(4, 2, 3):
        assert (out.reshape(4, 2, 3, 5)[i, j, k] == grid[k, :, j].any(axis=0)).all()


def test_planning_enumerates_no_block_products(monkeypatch):
    """A 40x40-block matmul is planned and explained without building any IA tuple."""
    from dask_tra.ia import nodes
    monkeypatch.setattr(nodes.IANode, "copies", property(lambda self: pytest.fail("planning expanded tuples")))
    A = dt.random.random((40_000, 40_000), chunks=1000, seed=1)
    e = (A @ A.T).explain(sites=16)
    assert e.predicted_bytes > 0 and "matmul" in [op.kind for op in e.operators]


def test_a_move_of_a_relabelled_input_serves_a_later_reader_of_the_input():
    """``(a @ b).T @ a`` with ``a`` placed: the first product reads ``a`` rekeyed (a pure
    relabelling: the same chunks), the second reads ``a`` itself; a block the first moved to a
    site is already there for the second (found by hypothesis: 112 predicted, 104 moved)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    x, y = dt.from_array(a, chunks=(1, 1)), dt.from_array(b, chunks=(3, 1))
    z = (x @ y).T @ x
    placements = {x.expr.name: {(0, 0): (0,), (0, 1): (0, 1), (0, 2): (0,), (1, 0): (0,), (1, 1): (0,), (1, 2): (0,)},
                  y.expr.name: {(0, 0): (1,), (0, 1): (0, 1), (0, 2): (0, 1)}}
    p = plan(z.expr, 2, placements=placements)
    inputs = {name: {k: src.chunk(k) for k in src.type.iter_keys()} for name, src in z.sources.items()}
    res = execute(p.root, inputs)
    np.testing.assert_allclose(assemble(z.expr.type, project(p.root, res)), (a @ b).T @ a, rtol=1e-9, atol=1e-9)
    assert res.bytes_moved == p.cost.bytes_moved == 104


def test_grid_need_keeps_small_layouts_read_only_and_recomputes_large_ones(monkeypatch):
    from dask_tra.optimizer import symbolic

    g = Grid((0, 2), (2, 2))
    kept = grid_need(g, [0, 1], [6, 5], 4)
    assert grid_need(g, (0, 1), (6, 5), 4) is kept and not kept.flags.writeable
    fresh = symbolic._grid_need(g, (0, 1), (6, 5), 4)
    np.testing.assert_array_equal(kept, fresh)
    assert fresh.sum() == 6 * 5 * 2  # grid dim 2 is not the side's: each tuple goes to both its groups
    monkeypatch.setattr(symbolic, "MEMO_CELLS", 6 * 5 * 4 - 1)
    large = grid_need(g, (0, 1), (6, 5), 4)
    assert large is not kept and large.flags.writeable
    np.testing.assert_array_equal(large, kept)
