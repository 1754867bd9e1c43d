"""Partitionings: where each tuple of a physical tensor relation lives.

``Grid(dims, groups)`` is the one family the optimizer produces: key dims ``dims`` are
cut into ``groups`` contiguous groups each, the group grid is numbered row-major, and
group number g of p goes to site ``g * s // p``, turned by the grid's ``home`` (a relation cut
from a larger array starts where its first block sat there). ``PART(D)`` of the papers is a Grid
whose groups are the block counts (every distinct ``key[D]`` its own group); EinDecomp's
partition vector ``d`` is the ``groups``. ``ALL`` puts every tuple on every site;
``SiteMap`` is an explicit key -> site map (data already placed on a cluster).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

Key = tuple[int, ...]


class Placement(Protocol):
    """What every partitioning offers: the sites of a key, and whether it keeps groups together."""

    def sites(self, key: Key, frontier: Sequence[int], s: int) -> tuple[int, ...]: ...

    def partitions_by(self, group_by: Sequence[int]) -> bool: ...


@dataclass(frozen=True)
class Grid:
    dims: tuple[int, ...]
    groups: tuple[int, ...]
    home: tuple[int, int] = (0, 1)  # (a position, out of): group 0 goes to site position * s // out

    def cell_sites(self, g: Any, s: int) -> Any:
        """The sites of group numbers ``g`` (an int or an array) on ``s`` sites."""
        shift = self.home[0] * s // self.home[1]
        g = g * s // math.prod(self.groups)
        return (g + shift) % s if shift else g

    def site(self, key: Key, frontier: Sequence[int], s: int) -> int:
        return int(site_table(self, tuple(frontier), s)[tuple(key)])

    def sites(self, key: Key, frontier: Sequence[int], s: int) -> tuple[int, ...]:
        return (self.site(key, frontier, s),)

    def table(self, frontier: Sequence[int], s: int) -> np.ndarray:
        """The site of every key below ``frontier`` (an array of shape ``frontier``), vectorized:
        group g of p along the grid goes to site ``g * s // p``, turned by ``home``."""
        frontier = tuple(int(f) for f in frontier)
        p = math.prod(self.groups)
        if p == 0 or not math.prod(frontier):
            return np.zeros(frontier, np.int64)
        g = np.zeros((1,) * len(frontier), np.int64)
        for d, n in zip(self.dims, self.groups):
            shape = [1] * len(frontier)
            shape[d] = frontier[d]
            g = g * n + (np.arange(frontier[d]) * n // frontier[d]).reshape(shape)
        return np.broadcast_to(self.cell_sites(g, s), frontier)

    def partitions_by(self, group_by: Sequence[int]) -> bool:
        """True when all tuples agreeing on ``group_by`` share a site (R2-4's precondition)."""
        return set(d for d, n in zip(self.dims, self.groups) if n > 1) <= set(group_by)

    def __str__(self) -> str:
        turn = f" from {self.home[0]}/{self.home[1]}" if self.home[0] else ""
        if not self.dims:
            return "ONE" + turn
        return f"PART{list(self.dims)}" + (f"/d={list(self.groups)}" if self.groups else "") + turn


@lru_cache(maxsize=1024)
def site_table(grid: Grid, frontier: tuple[int, ...], s: int) -> np.ndarray:
    return grid.table(frontier, s)


def part(dims: Iterable[int], frontier: Sequence[int], home: tuple[int, int] | None = None) -> Grid:
    """PART(D): every distinct value of key[D] its own group (``home``: see ``Grid``)."""
    dims = tuple(dims)
    return Grid(dims, tuple(frontier[d] for d in dims), home or (0, 1))


def part_all(frontier: Sequence[int], home: tuple[int, int] | None = None) -> Grid:
    """PART of every key dim, turned by ``home``: where a free input is made by default."""
    return part(range(len(frontier)), frontier, home)


@dataclass(frozen=True)
class All:
    def sites(self, key: Key, frontier: Sequence[int], s: int) -> tuple[int, ...]:
        return tuple(range(s))

    def partitions_by(self, group_by: Sequence[int]) -> bool:
        return False

    def __str__(self) -> str:
        return "ALL"


ALL = All()


@dataclass(frozen=True, eq=False)
class SiteMap:
    """Explicit placement: ``mapping[key]`` is a tuple of sites."""

    mapping: Mapping[Key, Sequence[int]]

    def sites(self, key: Key, frontier: Sequence[int], s: int) -> tuple[int, ...]:
        return tuple(self.mapping[key])

    def partitions_by(self, group_by: Sequence[int]) -> bool:
        home: dict[Key, int] = {}
        for k, sites in self.mapping.items():
            if len(sites) != 1 or home.setdefault(tuple(k[d] for d in group_by), sites[0]) != sites[0]:
                return False
        return True

    def __str__(self) -> str:
        return "SITEMAP"
