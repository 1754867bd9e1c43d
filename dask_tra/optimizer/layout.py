"""Getting a planned relation where a strategy needs it, moving as little as possible.

A ``Built`` is a TRA node's IA sub-plan as the plan builder made it, with whether it is a free
input (not yet placed: a strategy may lay it out as it likes at no cost). The search's
alternatives, costed, are ``search.Alt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from ..ia import ALL, Broadcast, Placed, Shuffle, SiteMap, part, part_all
from ..ia.nodes import IANode, LocalAggregate
from ..ia.partitioning import Placement
from ..tra.kernels import Kernel
from .operators.registry import Local, PreAggregate, Repartition, Strategy


@dataclass
class Built:
    node: IANode
    free: bool = False


def sites_of(node: IANode) -> dict:
    """key -> sorted tuple of sites holding it."""
    return {k: tuple(sorted({t for t, _ in cs})) for k, cs in node.copies.items()}


def first_site(node: IANode) -> tuple[int, int] | None:
    """``Grid.home`` starting a grid on the lowest site of ``node``'s first tuple (None: site 0,
    or no tuple); ``symbolic.first_site`` of its layout."""
    first = min(node.copies, default=None)
    site = min(t for t, _ in node.copies[first]) if first is not None else 0
    return (site, node.s) if site else None


def start(alt: Built) -> tuple[int, int] | None:
    """``Grid.home`` where grouping ``alt`` starts: a free input's own (``tra.Input.home``), a
    placed relation's first tuple's site; ``symbolic.start`` of its view."""
    return cast(Placed, alt.node).input.home if alt.free else first_site(alt.node)


def signature(node: IANode) -> tuple:
    """Where every tuple is: two alternatives with equal signatures are interchangeable downstream."""
    return tuple(sorted(sites_of(node).items()))


def has_placement(node: IANode, placement: Placement) -> bool:
    f, s = node.type.frontier, node.s
    if s == 1:  # every tuple, made once, on the one site
        return True
    return all(
        len({o for _, o in cs}) == 1 and {t for t, _ in cs} == set(placement.sites(k, f, s))
        for k, cs in node.copies.items()
    )


def place(alt: Built, placement: Placement) -> IANode:
    """``alt`` laid out by ``placement``: re-placed if free, unchanged if already there, else shuffled."""
    node = alt.node
    if alt.free:  # a free alternative is an input not yet placed
        return Placed(cast(Placed, node).input, placement, node.s)
    if has_placement(node, placement):
        return node
    return Shuffle(node, placement)


def broadcast(alt: Built, partners: tuple | None = None) -> IANode:
    """Every tuple of ``alt`` to every site (a free input is first made by PART(all dims)).

    With ``partners = (target, target_keys, alt_keys)``, only to the sites where the join's
    other side ``target`` holds a tuple it joins with: the graph moves a block only to sites
    whose tasks read it, so that is what the plan predicts."""
    node = alt.node
    if alt.free:
        source = cast(Placed, node).input
        node = Placed(source, part_all(node.type.frontier, source.home), node.s)
    if partners is None:
        return Broadcast(node)
    if node.s == 1:  # the one site holds every partner
        return node
    placement = SiteMap(_partner_sites(alt.node, *partners))
    return node if has_placement(node, placement) else Shuffle(node, placement)


def _partner_sites(node: IANode, target: IANode, target_keys: Sequence[int], keys: Sequence[int]) -> dict:
    """key of ``node`` -> the sites where ``target`` holds a tuple it joins with (site 0 if none)."""
    want: dict = {}
    for tk, sites in sites_of(target).items():
        want.setdefault(tuple(tk[d] for d in target_keys), set()).update(sites)
    return {k: tuple(sorted(want.get(tuple(k[d] for d in keys), ()))) or (0,) for k in node.type.iter_keys()}


def align(alt: Built, target: IANode, target_keys: Sequence[int], alt_keys: Sequence[int]) -> IANode:
    """Send each tuple of ``alt`` to every site where ``target`` holds a tuple it joins with
    (``target_keys`` of the target's key equal ``alt_keys`` of ours)."""
    if alt.node.s == 1 and not alt.free:  # the one site holds every partner
        return alt.node
    return place(alt, SiteMap(_partner_sites(alt.node, target, target_keys, alt_keys)))


def partitioned_by(node: IANode, dims: Sequence[int]) -> bool:
    """True when all tuples agreeing on key[dims] sit on one common site, once each."""
    if node.s == 1:  # every tuple, made once, on the one site
        return True
    home: dict[tuple[int, ...], int] = {}
    for k, cs in node.copies.items():
        sites = {t for t, _ in cs}
        if len(cs) != 1:
            return False
        if home.setdefault(tuple(k[d] for d in dims), next(iter(sites))) not in sites:
            return False
    return True


def finish_aggregate(
    child: IANode, group_by: Sequence[int], kernel: Kernel, two_phase_ok: bool = True, like=None
) -> tuple[LocalAggregate, Strategy]:
    """ΣL after whatever layout ``child`` has: local (R2-4), two-phase (R2-5) or shuffle first;
    with the aggregate-alone strategy that is (``Local()``, ``PreAggregate()``, ``Repartition()``).
    ``like``: the TRA aggregation computed (``LocalAggregate``'s)."""
    if partitioned_by(child, group_by):
        return LocalAggregate(child, group_by, kernel, like=like), Local()
    single = all(len(cs) == 1 for cs in child.copies.values())  # replicas would be folded twice
    if two_phase_ok and single and kernel.associative and kernel.commutative:
        pre = LocalAggregate(child, group_by, kernel, like=like)
        g = tuple(range(len(group_by)))
        if partitioned_by(pre, g):
            return pre, Local()
        return LocalAggregate(Shuffle(pre, part(g, pre.type.frontier)), g, kernel), PreAggregate()
    moved = Shuffle(child, part(group_by, child.type.frontier))
    return LocalAggregate(moved, group_by, kernel), Repartition()


__all__ = [
    "Built",
    "ALL",
    "place",
    "broadcast",
    "align",
    "partitioned_by",
    "finish_aggregate",
    "signature",
    "first_site",
    "start",
    "sites_of",
    "has_placement",
]
