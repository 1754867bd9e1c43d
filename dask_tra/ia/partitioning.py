"""Partitionings: where each tuple of a physical tensor relation lives.

``Grid(dims, groups)`` is the one family the optimizer produces: key dims ``dims`` are
cut into ``groups`` contiguous groups each, the group grid is numbered row-major, and
group number g of p goes to site ``g * s // p``. ``PART(D)`` of the papers is a Grid
whose groups are the block counts (every distinct ``key[D]`` its own group); EinDecomp's
partition vector ``d`` is the ``groups``. ``ALL`` puts every tuple on every site;
``SiteMap`` is an explicit key -> site map (data already placed on a cluster).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Grid:
    dims: tuple
    groups: tuple

    def site(self, key, frontier, s: int) -> int:
        p = math.prod(self.groups)
        if p == 0:
            return 0
        g = 0
        for d, n in zip(self.dims, self.groups):
            g = g * n + key[d] * n // frontier[d]
        return g * s // p

    def sites(self, key, frontier, s):
        return (self.site(key, frontier, s),)

    def partitions_by(self, group_by) -> bool:
        """True when all tuples agreeing on ``group_by`` share a site (R2-4's precondition)."""
        return set(d for d, n in zip(self.dims, self.groups) if n > 1) <= set(group_by)

    def __str__(self):
        if not self.dims:
            return "ONE"
        return f"PART{list(self.dims)}" + (f"/d={list(self.groups)}" if self.groups else "")


def part(dims, frontier) -> Grid:
    """PART(D): every distinct value of key[D] its own group."""
    dims = tuple(dims)
    return Grid(dims, tuple(frontier[d] for d in dims))


@dataclass(frozen=True)
class All:
    def sites(self, key, frontier, s):
        return tuple(range(s))

    def partitions_by(self, group_by) -> bool:
        return False

    def __str__(self):
        return "ALL"


ALL = All()


@dataclass(frozen=True, eq=False)
class SiteMap:
    """Explicit placement: ``mapping[key]`` is a tuple of sites."""

    mapping: dict

    def sites(self, key, frontier, s):
        return tuple(self.mapping[key])

    def partitions_by(self, group_by) -> bool:
        home = {}
        for k, sites in self.mapping.items():
            if len(sites) != 1 or home.setdefault(tuple(k[d] for d in group_by), sites[0]) != sites[0]:
                return False
        return True

    def __str__(self):
        return "SITEMAP"
