"""Two-phase placement of aggregated join trees (``optimizer.twophase``): lineage, greedy, costs.

- the lineage equals a nested-loop enumeration of the join and the aggregation;
- the bytes, per-site figures and seconds a plan reports equal a tuple-by-tuple simulation of
  its moves (written here, independently of ``evaluate_placement``), and the greedy's
  incremental bookkeeping reaches the same objective;
- the paper's pilot run (Sec. 4.3) and costing example (Sec. 5.2, with the errata);
- determinism; brute force on tiny instances; whole-relation static rules on seeded cases.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dask_tra.optimizer.cost import Rates
from dask_tra.optimizer import twophase as tp

PATTERNS = [
    (["ik", "kj"], "ij"),  # matmul
    (["ik", "k"], "i"),  # matrix-vector
    (["ij", "ij"], ""),  # double dot product: one aggregation group
    (["ik", "jk"], "ij"),  # A @ B.T
    (["ij", "jk", "kl"], "il"),  # chain of three
    (["ij", "ij", "jk"], "ik"),  # the paper's FFNN update: W, dW joined on both keys, then X
    (["ik", "kj"], "ikj"),  # no aggregation: every join group its own group
    (["i", "j"], "ij"),  # outer product: a cross join
]


def _random_keys(draw, labels, n_blocks):
    keys = []
    for lab in labels:
        full = list(itertools.product(*[range(n_blocks[c]) for c in lab]))
        keep = draw(st.lists(st.booleans(), min_size=len(full), max_size=len(full)))
        rows = [k for k, b in zip(full, keep) if b]
        perm = draw(st.permutations(rows))  # input order must not matter
        keys.append(np.array(perm, dtype=np.int64).reshape(-1, len(lab)))
    return keys


def _naive_lineage(keys, labels, out):
    """Nested loops over every combination of input tuples."""
    join_labels = []
    for lab in labels:
        join_labels += [c for c in lab if c not in join_labels]
    groups = {}
    for rows in itertools.product(*[range(len(k)) for k in keys]):
        val = {}
        ok = True
        for i, r in enumerate(rows):
            for c, v in zip(labels[i], keys[i][r]):
                if val.setdefault(c, int(v)) != int(v):
                    ok = False
        if ok:
            groups[tuple(val[c] for c in join_labels)] = rows
    aggs = {}
    for jk in groups:
        aggs.setdefault(tuple(jk[join_labels.index(c)] for c in out), set()).add(jk)
    return tuple(join_labels), groups, aggs


@settings(max_examples=80, deadline=None)
@given(st.data(), st.sampled_from(PATTERNS))
def test_lineage_equals_nested_loops(data, pattern):
    labels, out = pattern
    alphabet = sorted({c for lab in labels for c in lab})
    n_blocks = {c: data.draw(st.integers(1, 3), label=f"blocks {c}") for c in alphabet}
    keys = _random_keys(data.draw, labels, n_blocks)
    lin = tp.lineage(keys, labels, out)
    join_labels, groups, aggs = _naive_lineage(keys, labels, out)
    assert lin.join_labels == join_labels
    got = {tuple(k): tuple(r) for k, r in zip(lin.join_keys.tolist(), lin.join_tuples.tolist())}
    assert got == groups
    assert lin.join_keys.tolist() == sorted(lin.join_keys.tolist())  # join groups in key order
    got_aggs = {}
    for jk, g in zip(lin.join_keys.tolist(), lin.join_agg.tolist()):
        got_aggs.setdefault(tuple(lin.agg_keys[g].tolist()), set()).add(tuple(jk))
    assert got_aggs == aggs
    assert lin.agg_keys.tolist() == sorted(lin.agg_keys.tolist())
    order, ptr = lin.groups()
    for g in range(lin.n_agg):  # CSR of each aggregation group's join groups, ascending
        js = order[ptr[g] : ptr[g + 1]]
        assert (lin.join_agg[js] == g).all() and (np.diff(js) > 0).all()


def test_lineage_block_sparse_and_empty():
    a = np.array([[0, 0], [2, 1]])  # A blocks (i, k): (0,0), (2,1)
    b = np.array([[1, 3], [0, 0], [0, 2]])  # B blocks (k, j)
    lin = tp.matmul_lineage(a, b)
    assert lin.join_keys.tolist() == [[0, 0, 0], [0, 0, 2], [2, 1, 3]]
    assert lin.join_tuples.tolist() == [[0, 1], [0, 2], [1, 0]]
    assert lin.agg_keys.tolist() == [[0, 0], [0, 2], [2, 3]]
    empty = tp.matmul_lineage(np.zeros((0, 2)), b)
    assert empty.n_join == 0 and empty.n_agg == 0
    plan = tp.place_greedy(empty, 3, tuple_bytes=[0, 8])
    assert plan.bytes_moved == 0 and plan.join_sites.size == 0
    with pytest.raises(ValueError, match="duplicate"):
        tp.matmul_lineage(np.array([[0, 0], [0, 0]]), b)


# ---------------------------------------------------------------------------------------------
# An independent simulation of the moves
# ---------------------------------------------------------------------------------------------


def _simulate(lin, s, xs, ys, tb, sites, jf, ob, af, rates, homes=None):
    """Tuple by tuple, with Python sets: what each site receives, sends and computes (a tuple
    held by several sites is sent by each in equal share)."""
    sizes = lin.input_sizes
    held = {}  # (input, row) -> set of sites holding it
    for i in range(len(sizes)):
        for r in range(sizes[i]):
            held[(i, r)] = set(sites[i][r]) if sites[i] is not None and sites[i][r] is not None else set()
    need = {}
    for j in range(lin.n_join):
        for i in range(len(sizes)):
            need.setdefault((i, int(lin.join_tuples[j, i])), set()).add(int(xs[j]))
    offs = np.concatenate([[0], np.cumsum(sizes)])
    recv_in, sent_in = [0] * s, [0.0] * s
    moves = 0
    for (i, r), where in need.items():
        have = set(held[(i, r)])
        if not have:  # not placed: made at its home for free
            h = int(homes[offs[i] + r]) if homes is not None and homes[offs[i] + r] >= 0 else min(where)
            have = {h}
        for site in sorted(where - have):
            recv_in[site] += int(tb[i][r])
            for sender in have:
                sent_in[sender] += int(tb[i][r]) / len(have)
            moves += 1
    recv_part, sent_part = [0] * s, [0] * s
    jflops = [0.0] * s
    aflops = [0.0] * s
    partial_sites = {}
    for j in range(lin.n_join):
        g = int(lin.join_agg[j])
        site = int(xs[j])
        jflops[site] += float(jf[j])
        c = partial_sites.setdefault(g, {})
        if site in c:
            jflops[site] += float(af[g])  # pre-summed locally into the site's partial
        c[site] = c.get(site, 0) + 1
    for g, c in partial_sites.items():
        for site in c:
            if site != ys[g]:
                recv_part[int(ys[g])] += int(ob[g])
                sent_part[site] += int(ob[g])
        aflops[int(ys[g])] += float(af[g]) * (len(c) - 1)
    tasks = lin.n_join + sum(len(c) for c in partial_sites.values()) + lin.n_agg
    seconds = (
        max(max(recv_in), max(sent_in)) / rates.bandwidth
        + max(jflops) / rates.flop_rate
        + max(max(recv_part), max(sent_part)) / rates.bandwidth
        + max(aflops) / rates.flop_rate
        + tasks * rates.task_overhead
    )
    sent = [a + b for a, b in zip(sent_in, sent_part)]
    return dict(recv_in=recv_in, recv_part=recv_part, sent=sent, jflops=jflops, aflops=aflops, tasks=tasks,
                seconds=seconds)


def _instance(draw, s, pattern=(["ik", "kj"], "ij"), placed="mixed"):
    labels, out = pattern
    alphabet = sorted({c for lab in labels for c in lab})
    n_blocks = {c: draw(st.integers(1, 4)) for c in alphabet}
    keys = _random_keys(draw, labels, n_blocks)
    lin = tp.lineage(keys, labels, out)
    extents = {c: draw(st.lists(st.integers(1, 5), min_size=n, max_size=n)) for c, n in n_blocks.items()}
    tb, jf, ob, af = tp.einsum_sizes(lin, extents)
    sites = []
    for k in keys:
        per = []
        for _ in range(len(k)):
            mode = placed if placed != "mixed" else draw(st.sampled_from(["placed", "free"]))
            if mode == "free":
                per.append(None)
            else:
                per.append(sorted(set(draw(st.lists(st.integers(0, s - 1), min_size=1, max_size=2)))))
        sites.append(per)
    return lin, dict(tuple_bytes=tb, tuple_sites=sites, join_flops=jf, out_bytes=ob, add_flops=af)


RATES = st.sampled_from(
    [Rates(), Rates(bandwidth=3.1e7), Rates(bandwidth=1e3, flop_rate=1e3, task_overhead=0.0), Rates(flop_rate=1e3)]
)


def _check_against_simulation(plan, lin, s, c, rates, homes):
    sim = _simulate(
        lin, s, plan.join_sites, plan.agg_sites, c["tuple_bytes"], c["tuple_sites"], c["join_flops"],
        c["out_bytes"], c["add_flops"], rates, homes,
    )
    cost = plan.cost
    assert cost.site_input_received.tolist() == sim["recv_in"]
    assert cost.site_partial_received.tolist() == sim["recv_part"]
    assert cost.bytes_moved == sum(sim["recv_in"]) + sum(sim["recv_part"])
    assert cost.input_bytes_moved == sum(sim["recv_in"])
    np.testing.assert_allclose(cost.site_join_flops, sim["jflops"], rtol=1e-12)
    np.testing.assert_allclose(cost.site_agg_flops, sim["aflops"], rtol=1e-12)
    assert cost.tasks == sim["tasks"]
    assert math.isclose(cost.seconds, sim["seconds"], rel_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 4), RATES, st.sampled_from(["seconds", "bytes"]))
def test_greedy_plan_bytes_equal_simulated_moves(data, s, rates, objective):
    lin, c = _instance(data.draw, s, data.draw(st.sampled_from(PATTERNS[:6])))
    plan = tp.place_greedy(lin, s, rates=rates, objective=objective, **c)
    assert plan.join_sites.shape == (lin.n_join,) and plan.agg_sites.shape == (lin.n_agg,)
    for a in (plan.join_sites, plan.agg_sites):
        assert ((a >= 0) & (a < s)).all()
    _check_against_simulation(plan, lin, s, c, rates, plan.homes)
    # the greedy's incremental bookkeeping reached the objective recomputed from scratch
    assert math.isclose(plan.search_seconds, plan.cost.receive_seconds, rel_tol=1e-9, abs_tol=1e-15)
    # a tuple is made (for free) only where some join group needs it
    for t in np.flatnonzero(plan.homes >= 0):
        i = int(np.searchsorted(np.cumsum(lin.input_sizes), t, side="right"))
        row = t - int(sum(lin.input_sizes[:i]))
        assert plan.homes[t] in set(plan.join_sites[lin.join_tuples[:, i] == row].tolist())


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 5), RATES, st.sampled_from(["seconds", "bytes"]))
def test_skipping_rule_2_on_one_join_group_changes_nothing(data, s, rates, objective):
    """A trace makes the greedy run Rule 2 on every group; without one it skips Rule 2 where a
    group has one join group (the same choice, a tie Rule 1 wins). Both give one placement, and
    the traced run chose Rule 1 on every one-join-group group."""
    lin, c = _instance(data.draw, s, data.draw(st.sampled_from(PATTERNS[:6])))
    q = tp.problem(lin, s, rates=rates, **c)
    trace = []
    full = tp.greedy(q, objective=objective, trace=trace)
    fast = tp.greedy(q, objective=objective)
    assert full.join_sites.tolist() == fast.join_sites.tolist()
    assert full.agg_sites.tolist() == fast.agg_sites.tolist()
    assert full.homes.tolist() == fast.homes.tolist() and full.rule.tolist() == fast.rule.tolist()
    single = np.bincount(lin.join_agg, minlength=lin.n_agg) == 1
    assert all(t["chosen"] == 1 for t in trace if single[t["group"]])


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 4), RATES)
def test_evaluate_placement_equals_simulated_moves(data, s, rates):
    lin, c = _instance(data.draw, s, data.draw(st.sampled_from(PATTERNS)))
    xs = np.array(data.draw(st.lists(st.integers(0, s - 1), min_size=lin.n_join, max_size=lin.n_join)), dtype=int)
    ys = np.array(data.draw(st.lists(st.integers(0, s - 1), min_size=lin.n_agg, max_size=lin.n_agg)), dtype=int)
    cost = tp.evaluate_placement(lin, s, xs, ys, rates=rates, **c)
    plan = tp.TwoPhasePlan(lin, s, xs, ys, cost.homes, cost)
    _check_against_simulation(plan, lin, s, c, rates, None)


def test_replica_already_on_site_moves_nothing():
    # A[0,0] on sites {0, 1}, B[0,0] on site 1: the join group on site 1 moves nothing
    lin = tp.matmul_lineage([[0, 0]], [[0, 0]])
    c = dict(tuple_bytes=[100, 100], tuple_sites=[[[0, 1]], [[1]]], out_bytes=100)
    plan = tp.place_greedy(lin, 2, **c)
    assert plan.join_sites.tolist() == [1] and plan.agg_sites.tolist() == [1] and plan.bytes_moved == 0
    assert tp.evaluate_placement(lin, 2, [0], [0], **c).bytes_moved == 100  # B to site 0
    assert tp.evaluate_placement(lin, 2, [0], [1], **c).bytes_moved == 200  # B to 0, the partial back to 1


# ---------------------------------------------------------------------------------------------
# The paper's examples (Sec. 4.3 and Sec. 5.2, with the errata)
# ---------------------------------------------------------------------------------------------

# Fig. 4 / Sec. 4.3, keys 0-based, sites s1, s2, s3 -> 0, 1, 2
PAPER_X = {(0, 0): 0, (0, 1): 1, (1, 0): 2, (1, 1): 0}
PAPER_Y = {(0, 0): 2, (0, 1): 0, (1, 0): 1, (1, 1): 0}


def test_paper_pilot_run():
    xk, yk = list(PAPER_X), list(PAPER_Y)
    lin = tp.matmul_lineage(xk, yk)
    # the paper's aggregated lineage (1-based in the paper): per (XrowID, YcolID), its join groups
    want = {
        (0, 0): {((0, 0), (0, 0)), ((0, 1), (1, 0))},
        (0, 1): {((0, 0), (0, 1)), ((0, 1), (1, 1))},
        (1, 0): {((1, 1), (1, 0)), ((1, 0), (0, 0))},
        (1, 1): {((1, 1), (1, 1)), ((1, 0), (0, 1))},
    }
    got = {}
    for j in range(lin.n_join):
        x, y = lin.join_tuples[j]
        got.setdefault(tuple(lin.agg_keys[lin.join_agg[j]].tolist()), set()).add((xk[x], yk[y]))
    assert got == want and lin.n_join == 8 and lin.n_agg == 4


def test_paper_costing_example_with_errata():
    """Sec. 5.2: the first four join groups and two aggregation groups. Join groups
    {X11,Y11}, {X11,Y12} on site 1, {X12,Y21} on site 2, {X12,Y22} on site 3; aggregation group
    (1,1) on site 2, (1,2) on site 3. The paper's total: 2t_π + t_Σ + 2t_F + t_g, where (errata)
    site 1 receives one tuple (t_F) and the maximum 2t_F comes from site 3."""
    xk = [(0, 0), (0, 1)]
    yk = list(PAPER_Y)
    lin = tp.matmul_lineage(xk, yk)
    assert lin.join_keys.tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]]
    t_f, t_pi, t_g, t_sigma = 3.0, 5.0, 7.0, 11.0  # seconds, with bandwidth = flop rate = 1
    c = dict(
        tuple_bytes=[t_f, t_f],
        tuple_sites=[[PAPER_X[k] for k in xk], [PAPER_Y[k] for k in yk]],
        join_flops=t_pi,
        out_bytes=t_g,
        add_flops=t_sigma,
        rates=Rates(bandwidth=1.0, flop_rate=1.0, task_overhead=0.0),
    )
    cost = tp.evaluate_placement(lin, 3, [0, 0, 1, 2], [1, 2], **c)
    assert cost.site_input_received.tolist() == [t_f, 0, 2 * t_f]  # errata: site 1 is t_F, site 3 2t_F
    assert cost.site_join_flops.tolist() == [2 * t_pi, t_pi, t_pi]
    assert cost.site_partial_received.tolist() == [0, t_g, t_g]
    assert cost.site_agg_flops.tolist() == [0, t_sigma, t_sigma]
    assert cost.receive_seconds == 2 * t_pi + t_sigma + 2 * t_f + t_g
    # site 1 sends two partials (2t_g), more than any site receives (t_g): the full-duplex model adds t_g
    assert cost.site_sent.tolist() == [t_f + 2 * t_g, t_f, t_f]  # site 1 sends Y22 to site 3 and two partials
    assert cost.seconds == cost.receive_seconds + t_g
    assert cost.bytes_moved == 3 * t_f + 2 * t_g
    plan = tp.place_greedy(lin, 3, **c)
    assert plan.seconds <= cost.seconds  # the greedy does better than the paper's illustration
    best = tp.brute_force(lin, 3, **c)
    assert best.seconds <= plan.seconds


def test_paper_example_greedy_placement():
    """The full Sec. 4.3 example with 2×2 float64 blocks (32 B, 16 flops per product, 4 per add);
    the numbers quoted in docs/optimizer.md ("Two-phase placement")."""
    lin = tp.matmul_lineage(list(PAPER_X), list(PAPER_Y))
    c = dict(
        tuple_bytes=[32, 32],
        tuple_sites=[list(PAPER_X.values()), list(PAPER_Y.values())],
        join_flops=16,
        out_bytes=32,
        add_flops=4,
        rates=Rates(bandwidth=1e3, flop_rate=1e3, task_overhead=0.0),
    )
    trace = []
    plan = tp.place_greedy(lin, 3, trace=trace, **c)
    assert plan.order.tolist() == [0, 1, 2, 3]  # equal work: by output key
    # (i,k,j): 000 001 010 011 100 101 110 111
    assert plan.join_sites.tolist() == [0, 0, 1, 1, 2, 0, 2, 0]
    assert plan.agg_sites.tolist() == [0, 1, 2, 0]
    assert plan.rule.tolist() == [2, 2, 1, 1]
    # group (0,0): Rule 1 at site 1 costs 0.1 s, Rule 2 (join groups to 0 and 1, aggregate at 0) 0.084 s
    assert trace[0]["rule1"][:2] == (1, pytest.approx(0.1))
    assert trace[0]["rule2"][:3] == ([0, 1], 0, pytest.approx(0.084)) and trace[0]["chosen"] == 2
    # group (1,0): a tie at 0.136 s and 64 B: Rule 1 (Fig. 5's ≤)
    assert trace[2]["rule1"][1] == pytest.approx(trace[2]["rule2"][2]) and trace[2]["chosen"] == 1
    assert plan.bytes_moved == 224 and plan.cost.input_bytes_moved == 160
    assert plan.cost.site_input_received.tolist() == [64, 32, 64]
    assert plan.cost.site_partial_received.tolist() == [32, 32, 0]
    assert plan.site_flops.tolist() == [72, 36, 36]
    assert plan.seconds == pytest.approx(0.064 + 0.068 + 0.032 + 0.004)
    static = {r: tp.static_placement(lin, 3, r, **c) for r in ("output", "join", "owner")}
    assert {r: p.bytes_moved for r, p in static.items()} == {"output": 288, "join": 288, "owner": 256}
    assert {r: round(p.cost.receive_seconds, 6) for r, p in static.items()} == {"output": 0.168, "join": 0.2, "owner": 0.272}
    # brute force over all 3^12 placements (about a minute; run once, see docs/optimizer.md) found
    # the optimum 0.136 s with 192 B, and 128 B as the fewest bytes; here, that placement's cost:
    best = tp.evaluate_placement(lin, 3, [1, 0, 1, 0, 2, 0, 2, 0], [1, 0, 2, 0], **c)
    assert best.seconds == pytest.approx(0.136) and best.bytes_moved == 192 and best.seconds < plan.seconds


# ---------------------------------------------------------------------------------------------
# Determinism, rules
# ---------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.data(), st.integers(1, 4))
def test_deterministic_and_independent_of_input_order(data, s):
    lin, c = _instance(data.draw, s)
    a = tp.place_greedy(lin, s, **c)
    b = tp.place_greedy(lin, s, **c)
    for f in ("join_sites", "agg_sites", "homes", "rule", "order"):
        assert getattr(a, f).tolist() == getattr(b, f).tolist()
    assert a.seconds == b.seconds and a.bytes_moved == b.bytes_moved
    # the same problem with every input's rows reversed: the same placement, by key
    rev_keys, rev_c = [], dict(c)
    rev_c["tuple_bytes"], rev_c["tuple_sites"] = [], []
    for i, labs in enumerate(lin.input_labels):
        n = lin.input_sizes[i]
        rows = np.full((n, len(labs)), -1)
        rows[lin.join_tuples[:, i]] = lin.join_keys[:, [lin.join_labels.index(l) for l in labs]]
        used = (rows >= 0).all(axis=1)
        rev_keys.append(rows[used][::-1])
        rev_c["tuple_bytes"].append(np.asarray(c["tuple_bytes"][i])[used][::-1])
        rev_c["tuple_sites"].append([c["tuple_sites"][i][r] for r in np.flatnonzero(used)[::-1]])
    lin2 = tp.lineage(rev_keys, list(lin.input_labels), lin.out_labels)
    d = tp.place_greedy(lin2, s, **rev_c)
    assert lin2.join_keys.tolist() == lin.join_keys.tolist()
    assert d.join_sites.tolist() == a.join_sites.tolist() and d.agg_sites.tolist() == a.agg_sites.tolist()
    assert d.bytes_moved == a.bytes_moved


def test_rule_1_alone_puts_join_groups_where_they_are_aggregated():
    rng = np.random.default_rng(3)
    for _ in range(10):
        s = int(rng.integers(2, 5))
        lin, c = _seeded(rng, s, 4, 4, 4, 0.6, placed=True)
        p1 = tp.place_greedy(lin, s, rules=(1,), **c)
        assert (p1.join_sites == p1.agg_sites[lin.join_agg]).all() and (p1.rule == 1).all()
        assert p1.cost.partial_bytes_moved == 0
        p2 = tp.place_greedy(lin, s, rules=(2,), **c)
        assert (p2.rule == 2).all()


# ---------------------------------------------------------------------------------------------
# Brute force and static rules: what the greedy achieves (measured, then asserted)
# ---------------------------------------------------------------------------------------------


def _seeded(rng, s, I, K, J, density, placed=True, ext=1000, replicas=2):
    a = np.array([(i, k) for i in range(I) for k in range(K) if rng.random() < density]).reshape(-1, 2)
    b = np.array([(k, j) for k in range(K) for j in range(J) if rng.random() < density]).reshape(-1, 2)
    lin = tp.matmul_lineage(a, b)
    tb, jf, ob, af = tp.einsum_sizes(lin, {c: np.full(n, ext) for c, n in zip("ikj", (I, K, J))})

    def where(n):
        if not placed:
            return None
        sizes = rng.integers(1, replicas + 1, size=n)
        return [sorted(rng.choice(s, size=int(k), replace=False).tolist()) for k in sizes]

    sites = [where(len(a)), where(len(b))]
    return lin, dict(tuple_bytes=tb, tuple_sites=sites, join_flops=jf, out_bytes=ob, add_flops=af)


def _tiny_cases(rates):
    rng = np.random.default_rng(11)
    out = []
    while len(out) < 25:
        s = int(rng.integers(2, 4))
        lin, c = _seeded(rng, s, *rng.integers(1, 3, size=3), 0.8)
        if lin.n_join and s ** (lin.n_join + lin.n_agg) <= 20000:
            out.append((s, lin, dict(c, rates=rates)))
    return out


@pytest.mark.parametrize(
    "rates, factor",
    [
        # measured on these 25 cases (worst, mean, optimal in):
        (Rates(), 1.25),  # 1 Gbit/s, 10 GFLOP/s, 1 ms per task: 1.237×, 1.027×, 17/25
        (Rates(flop_rate=1e15, task_overhead=0.0), 1.5),  # transfers only: 1.5×, 1.020×, 23/25
        (Rates(bandwidth=1e15, flop_rate=1e9, task_overhead=0.0), 1.001),  # compute only: 1.0000×, 21/25
    ],
)
def test_greedy_within_factor_of_brute_force_on_tiny_instances(rates, factor):
    ratios = []
    for s, lin, c in _tiny_cases(rates):
        g = tp.place_greedy(lin, s, **c)
        b = tp.brute_force(lin, s, objective="receive-seconds", **c)  # the paper's objective, the greedy's
        assert b.cost.receive_seconds <= g.cost.receive_seconds * (1 + 1e-9)  # brute force is the optimum
        ratios.append(g.cost.receive_seconds / b.cost.receive_seconds)
    assert max(ratios) <= factor * (1 + 1e-9), max(ratios)
    assert min(ratios) == pytest.approx(1.0)


def test_bytes_objective_within_factor_of_bytes_brute_force():
    ratios = []
    for s, lin, c in _tiny_cases(Rates()):
        g = tp.place_greedy(lin, s, objective="bytes", **c)
        b = tp.brute_force(lin, s, objective="bytes", **c)
        assert b.bytes_moved <= g.bytes_moved
        ratios.append((g.bytes_moved + 1) / (b.bytes_moved + 1))
    assert max(ratios) <= 2.0 + 1e-9, max(ratios)  # measured: worst 2.0× (16 MB for 8 MB), mean 1.12×
    assert np.mean(ratios) <= 1.15


def _irregular_cases(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        s = int(rng.integers(2, 6))
        lin, c = _seeded(rng, s, *rng.integers(2, 7, size=3), rng.uniform(0.2, 1.0), replicas=int(rng.integers(1, 3)))
        if lin.n_join:
            out.append((s, lin, c))
    return out


def test_bytes_objective_against_static_rules_on_irregular_placements():
    """Inputs scattered irregularly (one or two random replicas per block). Measured on these 100
    seeded cases: bytes-first greedy moves no more than co-partitioning on the join key in every
    case, no more than the by-output-key rule in all but 2, than owner-computes in all but 9 (the
    greedy cannot foresee that a tuple it moves for one aggregation group serves a later one); in
    total 0.64× (output), 0.49× (join), 0.72× (owner) their bytes."""
    worse = {"output": 0, "join": 0, "owner": 0}
    total = {"greedy": 0, "output": 0, "join": 0, "owner": 0}
    for s, lin, c in _irregular_cases(100, seed=5):
        g = tp.place_greedy(lin, s, objective="bytes", **c)
        total["greedy"] += g.bytes_moved
        for r in worse:
            b = tp.static_placement(lin, s, r, **c).bytes_moved
            worse[r] += g.bytes_moved > b
            total[r] += b
    assert worse["join"] == 0
    assert worse["output"] <= 2 and worse["owner"] <= 9, worse
    for r in worse:
        assert total["greedy"] <= 0.75 * total[r], (r, total)


def test_time_objective_against_static_rules_on_irregular_placements():
    """The paper's objective trades bytes for balance: measured on these 100 seeded cases, its
    predicted time beats or ties each static rule in most cases but not all (the greedy is
    myopic: Rule 2 places join groups before the partial-aggregate transfers they cause are
    known), and it moves more bytes than the statics in total. Measured: slower than by-output-key
    in 39 cases, than join-key co-partitioning in 4, than owner-computes in 4, by at most 1.23×;
    in total 0.98×, 0.78×, 0.73× their predicted time."""
    worse = {"output": 0, "join": 0, "owner": 0}
    secs = {"greedy": 0.0, "output": 0.0, "join": 0.0, "owner": 0.0}
    worst = 0.0
    for s, lin, c in _irregular_cases(100, seed=5):
        g = tp.place_greedy(lin, s, **c).cost.receive_seconds  # the paper's objective, the greedy's
        secs["greedy"] += g
        for r in worse:
            b = tp.static_placement(lin, s, r, **c).cost.receive_seconds
            worse[r] += g > b * (1 + 1e-9)
            secs[r] += b
            worst = max(worst, g / b)
    assert worse["join"] <= 4 and worse["owner"] <= 4 and worse["output"] <= 39, worse
    assert worst <= 1.25, worst
    for r, most in (("output", 0.99), ("join", 0.8), ("owner", 0.75)):
        assert secs["greedy"] <= most * secs[r], (r, secs)


def test_planning_time_is_linear_in_join_groups():
    import time

    rng = np.random.default_rng(0)
    times = []
    for n in (12, 24):  # 8× the join groups
        lin, c = _seeded(rng, 8, n, n, n, 1.0)
        t0 = time.perf_counter()
        tp.place_greedy(lin, 8, **c)
        times.append(time.perf_counter() - t0)
    assert times[1] <= 8 * 3 * times[0] + 0.5, times
