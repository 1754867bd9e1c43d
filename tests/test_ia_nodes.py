"""IA nodes know everything from metadata, by pure functions of their children: a node's
facts do not depend on which of them was asked for first."""
from dask_tra.ia import LocalAggregate, Placed, SiteMap
from dask_tra.tra import Input, RelationType
from dask_tra.tra import kernels as K


def _aggregate_over_three_sites():
    t = RelationType.from_chunks(((2, 2, 1), (3, 3)), "float64")
    where = {(i, j): ((i + j) % 3,) for i in range(3) for j in range(2)}
    return LocalAggregate(Placed(Input("A", t), SiteMap(where), 3), [0], K.add)


def test_local_aggregate_members_need_no_copies_first():
    agg = _aggregate_over_three_sites()
    members = agg.members  # before anything asked for the copies
    assert {gt: [k for k, _ in m] for gt, m in members.items()} == {
        ((0,), 0): [(0, 0)], ((0,), 1): [(0, 1)], ((1,), 1): [(1, 0)], ((1,), 2): [(1, 1)],
        ((2,), 2): [(2, 0)], ((2,), 0): [(2, 1)]}
    again = _aggregate_over_three_sites()
    again.copies  # the other order: the same groups
    assert {gt: [k for k, _ in m] for gt, m in again.members.items()} == {
        gt: [k for k, _ in m] for gt, m in members.items()}
    assert sorted(t for t, _ in agg.copies[(1,)]) == [1, 2]


def test_local_aggregate_members_are_in_key_order_past_ten_blocks():
    """The members a local fold reads, in key order (10 after 9: a fold's order is its sum's
    rounding), on each site, whatever order the copies come in."""
    t = RelationType.from_chunks(((1,) * 12, (2, 2)), "float64")
    where = {(i, j): ((i * 7 + j) % 2,) for i in range(12) for j in range(2)}
    agg = LocalAggregate(Placed(Input("A", t), SiteMap(where), 2), [1], K.add)
    for (g, site), members in agg.members.items():
        keys = [k for k, _ in members]
        assert keys == sorted(keys)
        assert keys == [k for k in sorted(where) if k[1] == g[0] and where[k] == (site,)]
