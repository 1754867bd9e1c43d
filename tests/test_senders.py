"""Per-site sent bytes: the closed form (``Cand.site_sent``, summed into ``Cost.site_sent``)
against the IA plan it builds, move by move (a copy held by several sites is sent by each in
equal share), and the full-duplex transfer time (the busiest link direction)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dask_tra.ia import Broadcast, Shuffle
from dask_tra.optimizer import plan
from dask_tra.optimizer.cost import Rates
from dask_tra.tra import Aggregate, Input, Join, split
from dask_tra.tra import kernels as K
from dask_tra.tra.kernels import Einsum


def _flows(root, s):
    """(bytes each site receives, bytes each site sends) of an IA plan's moves."""
    present, sent, recv = set(), np.zeros(s), np.zeros(s)
    for node in root.walk():
        for key, cs in node.copies.items():
            nb = node.type.dtype.itemsize * math.prod(node.type.chunk_shape(key))
            for site, origin in cs:
                if (origin, site) in present:
                    continue
                present.add((origin, site))
                if isinstance(node, (Broadcast, Shuffle)):
                    recv[site] += nb
                    holders = [t for t, o in node.child.copies[key] if o == origin]
                    for h in holders:
                        sent[h] += nb / len(holders)
    return recv, sent


def _matmul(seed):
    rng = np.random.default_rng(seed)
    ta, ra = split(rng.standard_normal((11, 9)), ((4, 3, 4), (2, 5, 2)))
    tb, rb = split(rng.standard_normal((9, 7)), ((2, 5, 2), (3, 4)))
    e = Aggregate(Join(Input("a", ta), Input("b", tb), (1,), (0,), Einsum("ij,jk->ik")), (0, 2), K.add)
    s = 4
    # uneven, with replicas: most blocks on site 0, some on two sites
    placed = {
        name: {k: ((0,) if rng.random() < 0.6 else tuple(sorted(rng.choice(s, size=rng.integers(1, 3), replace=False))))
               for k in rel}
        for name, rel in (("a", ra), ("b", rb))
    }
    return e, placed, s


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("force", ["bmm", "cmm", "rmm", "d=[2, 1, 2]", "d=[1, 2, 2]", "two-phase"])
def test_predicted_senders_equal_the_plans_moves(seed, force):
    e, placed, s = _matmul(seed)
    p = plan(e, s, placements=placed, force=force)
    recv, sent = _flows(p.root, s)
    np.testing.assert_allclose(p.cost.site_moved, recv)
    np.testing.assert_allclose(p.cost.site_sent, sent)
    assert sum(p.cost.site_sent) == pytest.approx(p.cost.bytes_moved)


def test_the_busiest_sender_sets_the_transfer_time():
    e, placed, s = _matmul(0)
    rates = Rates(bandwidth=1e6, task_overhead=0.0, flop_rate=1e15)
    p = plan(e, s, placements=placed, rates=rates)
    b = p.explain.breakdown
    assert b["transfer_s"] == pytest.approx(max(max(p.cost.site_moved), max(p.cost.site_sent)) / 1e6)
    assert b["busiest_sender_bytes"] == max(p.cost.site_sent)
    assert "out of the busiest sender" in str(p.explain.view(detail="algebra"))
