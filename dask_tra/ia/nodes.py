"""IA operators over physical tensor relations (tuples carry sites).

Every node knows, from metadata alone, its ``copies``: for each key, the (site, origin)
pairs where a tuple with that key sits. ``origin`` names the computation that produced
the chunk (a placed input, a local join at a site, ...). Moves (``Broadcast``,
``Shuffle``) keep origins, so a copy arriving where its origin already is costs nothing;
this is also what Dask does (one transfer per distinct key and worker).

Local operators mirror TRA operators and reuse the TRA nodes for their output types. Each
node declares its operands (``_parameters``, as the TRA's: ``dag.Operands``), so a rule
rebuilds any node over new children with ``node.over(*children)``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from ..tra import expr as tra
from ..tra.dag import Operands, render, walk
from ..tra.errors import TRAError, fmt_key
from ..tra.kernels import Kernel
from ..tra.keyfuncs import KeyMap, KeyPred
from ..tra.relation import RelationType
from .partitioning import ALL, Key, Placement

# (site, origin) pairs of one key; an origin names the computation that made the chunk
Copies = dict[Any, tuple[tuple[int, Any], ...]]


class PlanError(TRAError):
    """An IA plan is malformed (e.g. two different chunks for one key meet in a local join)."""


_uid = itertools.count()


def _placeholder(type_: RelationType) -> tra.Input:
    return tra.Input("_", type_)


class IANode(Operands):
    """Base IA node: ``children``, ``type`` (logical metadata), ``s`` (site count), ``copies``."""

    kind = "ia"
    children: tuple[IANode, ...] = ()
    type: RelationType
    s: int

    def __init__(self) -> None:
        self.uid = next(_uid)
        self._copies: Copies | None = None

    def _compute_copies(self) -> dict[Any, Sequence[tuple[int, Any]]]:
        """key -> (site, origin) pairs, from the children's copies (each operator its own rule)."""
        raise NotImplementedError

    @property
    def copies(self) -> Copies:
        """key -> tuple of (site, origin), sorted; computed once from metadata."""
        if self._copies is None:  # children first, iteratively (deep plans), each node once
            stack = [(self, False)]
            while stack:
                node, ready = stack.pop()
                if node._copies is not None:
                    continue
                if ready:
                    node._copies = {
                        k: tuple(v) if len(v) == 1 else tuple(sorted(set(v), key=repr))
                        for k, v in node._compute_copies().items()
                    }
                    continue
                stack.append((node, True))
                stack.extend((c, False) for c in node.children if c._copies is None)
        assert self._copies is not None
        return self._copies

    def walk(self) -> list[IANode]:
        """Every node of the plan once, children before parents."""
        return walk(self)

    def new_origin(self, key: Iterable[int], site: int) -> tuple[int, Key, int]:
        return (self.uid, tuple(key), site)

    def describe(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return render(self)


class Placed(IANode):
    """A TRA input laid out on sites by a partitioning (Grid, SiteMap or ALL)."""

    kind = "input"
    _parameters = ("input", "placement", "s")

    def __init__(self, input: tra.Input, placement: Placement, s: int):
        super().__init__()
        self.input, self.placement, self.s, self.type = input, placement, s, input.type

    def _compute_copies(self) -> dict[Any, Any]:
        """Replicas of a tuple (several sites) are one chunk: one origin, so moving it to a site
        that already holds a replica is free, and two replicas never meet as different chunks."""
        f = self.type.frontier
        if self.s == 1:  # one site holds everything (a local plan)
            return {k: [(0, (self.uid, k, 0))] for k in self.type.iter_keys()}
        out = {}
        for k in self.type.iter_keys():
            sites = self.placement.sites(k, f, self.s)
            origin = self.new_origin(k, sites[0])
            out[k] = [(t, origin) for t in sites]
        return out

    def describe(self) -> str:
        return f"{self.input.describe()}@{self.placement}"


class _Move(IANode):
    _parameters: tuple[str, ...] | None = ("child",)

    def __init__(self, child: IANode):
        super().__init__()
        self.children, self.child, self.s, self.type = (child,), child, child.s, child.type

    def targets(self, key: Key, frontier: tuple[int, ...]) -> Iterable[int]:
        """The sites a tuple with ``key`` is sent to."""
        raise NotImplementedError

    def _compute_copies(self) -> dict[Any, Any]:
        f = self.type.frontier
        return {k: [(t, origin) for _, origin in cs for t in self.targets(k, f)] for k, cs in self.child.copies.items()}


class Broadcast(_Move):
    """BCAST: every tuple to every site."""

    kind = "bcast"
    placement = ALL

    def targets(self, key: Key, frontier: tuple[int, ...]) -> Iterable[int]:
        return range(self.s)

    def describe(self) -> str:
        return "Broadcast"


class Shuffle(_Move):
    """SHUF: every tuple to the site(s) a partitioning names (PART(D), a Grid, or a SiteMap)."""

    kind = "shuffle"
    _parameters = ("child", "placement")

    def __init__(self, child: IANode, placement: Placement):
        super().__init__(child)
        self.placement = placement

    def targets(self, key: Key, frontier: tuple[int, ...]) -> Iterable[int]:
        return self.placement.sites(key, frontier, self.s)

    def describe(self) -> str:
        return f"Shuffle[{self.placement}]"


class LocalJoin(IANode):
    """⋈L: join tuples that share a site; the output tuple stays on that site. With ``at``
    (output key -> site: a placement of every join group, as two-phase plans make), each output
    tuple is made at its one site only, though its inputs may meet at others too. ``like``: the
    TRA join it computes (same keys and kernel), whose type is reused where the inputs' types
    are its inputs' (``Expr.over``)."""

    kind = "localjoin"
    _parameters = ("left", "right", "left_keys", "right_keys", "kernel", "at")

    def __init__(
        self,
        left: IANode,
        right: IANode,
        left_keys: Iterable[int],
        right_keys: Iterable[int],
        kernel: Kernel,
        at: Mapping[Key, int] | None = None,
        *,
        like: tra.Join | None = None,
    ):
        super().__init__()
        self.at = at
        self.children, self.left, self.right = (left, right), left, right
        self.s = left.s
        ends = (_placeholder(left.type), _placeholder(right.type))
        left_keys, right_keys = tuple(left_keys), tuple(right_keys)
        if like is not None and (like.left_keys, like.right_keys, like.kernel) == (left_keys, right_keys, kernel):
            self.op = like.over(*ends)  # the TRA join it computes: its type, in O(1) over the same input types
        else:
            self.op = tra.Join(*ends, left_keys, right_keys, kernel)
        self.left_keys, self.right_keys, self.kernel = self.op.left_keys, self.op.right_keys, kernel
        self.type = self.op.type
        self._kl = left.type.key_arity
        self._right_pos = tuple(self.op.right_out[d] for d in range(right.type.key_arity))  # in the output key

    def _compute_copies(self) -> dict[Any, Any]:
        op = self.op
        index = defaultdict(list)
        rkeys, lkeys = _joined(op.right_keys, self.right.type), _joined(op.left_keys, self.left.type)
        for rk, rcs in self.right.copies.items():
            index[rk if rkeys is None else tuple(rk[d] for d in rkeys)].append((rk, rcs))
        out: dict[Any, Any] = {}
        if self.s == 1 and self.at is None:  # one site, one copy of each tuple: every pair meets there
            uid = self.uid
            for lk in self.left.copies:
                for rk, _ in index.get(lk if lkeys is None else tuple(lk[d] for d in lkeys), ()):
                    key = op.out_key(lk, rk)
                    out[key] = ((0, (uid, key, 0)),)
            return out
        for lk, lcs in self.left.copies.items():
            partners = index.get(lk if lkeys is None else tuple(lk[d] for d in lkeys))
            if not partners:
                continue
            lsites = _one_origin_per_site(lk, lcs, self)
            for rk, rcs in partners:
                key = op.out_key(lk, rk)
                if len(lcs) == 1 and len(rcs) == 1:  # one copy each (every local plan): no sets
                    both = [lcs[0][0]] if lcs[0][0] == rcs[0][0] else []
                else:
                    both = sorted(set(lsites) & set(_one_origin_per_site(rk, rcs, self)))
                if self.at is not None:
                    site = self.at.get(key)
                    if site is not None and site not in both:
                        raise PlanError(f"{self.describe()}: the tuples of {fmt_key(key)} do not meet at site {site}")
                    both = [] if site is None else [site]
                if both:
                    out[key] = [(t, self.new_origin(key, t)) for t in both]
        return out

    def sources(self, key: Key, site: int) -> tuple[Key, Key]:
        """(left key, right key) joined into ``key`` (the same at every site)."""
        return key[: self._kl], tuple([key[d] for d in self._right_pos])

    def describe(self) -> str:
        return f"LocalJoin({list(self.op.left_keys)},{list(self.op.right_keys)},{self.op.kernel.name})"


def _joined(dims: tuple[int, ...], t: RelationType) -> tuple[int, ...] | None:
    """The join dims of a side's key, or None when they are the whole key in order (the key
    itself is then the join value)."""
    return None if dims == tuple(range(t.key_arity)) else dims


def _one_origin_per_site(key: Key, copies: Iterable[tuple[int, Any]], node: IANode) -> dict[int, Any]:
    sites: dict[int, Any] = {}
    for t, origin in copies:
        if sites.setdefault(t, origin) != origin:
            raise PlanError(f"{node.describe()}: two different chunks for key {fmt_key(key)} meet at site {t}")
    return sites


class LocalAggregate(IANode):
    """ΣL: group the tuples at each site by key dims and fold them (or concatenate, for Concat).
    ``like``: the TRA aggregation it computes (same group dims and kernel), as ``LocalJoin``'s."""

    kind = "localagg"
    _parameters = ("child", "group_by", "kernel", "concat")

    op: tra.Concat | tra.Aggregate

    def __init__(
        self,
        child: IANode,
        group_by: Iterable[int] | None = None,
        kernel: Kernel | None = None,
        concat: Sequence | None = None,
        *,
        like: tra.Aggregate | None = None,
    ):
        super().__init__()
        self.children, self.child, self.s = (child,), child, child.s
        self.kernel, self.concat = kernel, None if concat is None else tuple(concat)
        self.group_by: tuple[int, ...]
        if concat is not None:
            self.op = tra.Concat(_placeholder(child.type), *concat)
            kd = self.op.key_dim
            self.group_by = tuple(d for d in range(child.type.key_arity) if d != kd)
        else:
            # without ``concat``, ``group_by`` and ``kernel`` are given (Aggregate checks them)
            group_by = tuple(cast(Iterable[int], group_by))
            op: tra.Aggregate
            if like is not None and (like.group_by, like.kernel) == (group_by, kernel):
                op = like.over(_placeholder(child.type))  # the TRA aggregation it computes, O(1)
            else:
                op = tra.Aggregate(_placeholder(child.type), group_by, cast(Kernel, kernel))
            self.op, self.group_by = op, op.group_by
        self.type = self.op.type
        self._members: dict[tuple[Key, int], list[tuple[Key, Any]]] | None = None

    @property
    def members(self) -> dict[tuple[Key, int], list[tuple[Key, Any]]]:
        """(group key, site) -> [(key, origin), ...] in key order: the tuples each local fold
        reads. A function of the child's copies, computed once."""
        if self._members is None:
            groups: defaultdict[tuple[Key, int], list[tuple[Key, Any]]] = defaultdict(list)
            for k, cs in self.child.copies.items():
                g = tuple(k[d] for d in self.group_by)
                for t, origin in cs:
                    groups[(g, t)].append((k, origin))
            # in key order (a tuple held twice on a site: its copies' order); keys are appended
            # in the child's key order, so this is a pass that finds them sorted
            self._members = {gt: sorted(members, key=_key_of) for gt, members in groups.items()}
        return self._members

    def _compute_copies(self) -> dict[Any, Any]:
        out: defaultdict[Key, list[tuple[int, Any]]] = defaultdict(list)
        for (g, t), members in self.members.items():
            passthrough = len(members) == 1 and isinstance(self.op, tra.Aggregate)
            out[g].append((t, members[0][1] if passthrough else self.new_origin(g, t)))
        return out

    def describe(self) -> str:
        return f"LocalAggregate({self.op.describe()})"


def _key_of(member: tuple[Key, Any]) -> Key:
    return member[0]


class LocalFilter(IANode):
    """σL: keep tuples whose key passes; sites unchanged."""

    kind = "localfilter"
    _parameters = ("child", "predicate")

    def __init__(self, child: IANode, predicate: KeyPred):
        super().__init__()
        self.children, self.child, self.s, self.predicate = (child,), child, child.s, predicate
        self.op = tra.Filter(_placeholder(child.type), predicate)
        self.type = self.op.type

    def _compute_copies(self) -> dict[Any, Any]:
        """The child's copies of the keys the filter keeps (its type holds them)."""
        copies = self.child.copies
        return {k: copies[k] for k in self.type.iter_keys() if k in copies}

    def describe(self) -> str:
        return f"LocalFilter({self.op.predicate})"


class Expand:
    """insertDim/duplicate as a key function: place a key into a larger key space, copying the
    tuple along every new dim (the RMM replication). ``positions[i]`` is the output dim of input dim i.
    A tuple map of the IA only (``TupleMap``'s protocol, its type from the input's)."""

    pure_copy = True
    keeps_keys = False
    flops = 0.0

    def __init__(self, positions: Iterable[int], frontier: Sequence[int]):
        self.positions, self.frontier = tuple(positions), tuple(frontier)
        self.new_dims = [d for d in range(len(frontier)) if d not in self.positions]
        self.label = f"dup{self.new_dims}"

    def out_keys(self, key: Key) -> list[Key]:
        made = []
        for extra in itertools.product(*(range(self.frontier[d]) for d in self.new_dims)):
            out = [0] * len(self.frontier)
            for i, d in enumerate(self.positions):
                out[d] = key[i]
            for d, v in zip(self.new_dims, extra):
                out[d] = v
            made.append(tuple(out))
        return made

    def source(self, key: Key) -> Key:
        return tuple(key[d] for d in self.positions)

    def chunk_task(self, key: Key) -> None:
        return None

    def over(self, child: Any) -> Expand:
        return self

    def describe(self) -> str:
        return self.label

    def type_of(self, t: RelationType) -> RelationType:
        mapping = dict(enumerate(self.positions))
        keys = None if t.keys is None else frozenset(nk for k in t.keys for nk in self.out_keys(k))
        return RelationType(self.frontier, tuple(ax.relabel(mapping) for ax in t.axes), t.dtype, t.backend, keys)


class LocalMap(IANode):
    """λL: per-tuple map at each site. ``op`` is a ``TupleMap`` (a TRA per-tuple operator but
    Filter, which is ``LocalFilter``) built over a placeholder, or an ``Expand`` (multi-map
    duplicating tuples into new key dims)."""

    kind = "localmap"
    _parameters = ("child", "op")

    def __init__(self, child: IANode, op: tra.TupleMap | Expand):
        super().__init__()
        self.children, self.child, self.s, self.op = (child,), child, child.s, op
        self.type = op.type_of(child.type) if isinstance(op, Expand) else op.type
        self.pure_copy = op.pure_copy  # data unchanged: no new origin

    def _compute_copies(self) -> dict[Any, Any]:
        out = {}
        for k, cs in self.child.copies.items():
            for nk in self.op.out_keys(k):
                # a map of one chunk is one chunk wherever it is computed: its origin follows
                # the input's (a replica's map is a replica)
                out[nk] = list(cs) if self.pure_copy else [(t, self.new_origin(nk, o[2])) for t, o in cs]
        return out

    def over(self, child: IANode) -> LocalMap:
        """The same map over ``child``, its operator rebuilt for ``child``'s type (``local_map``)."""
        return local_map(child, self.op)

    def out_keys(self, key: Key) -> list[Key]:
        return self.op.out_keys(key)

    def source(self, key: Key) -> Key:
        """Input key of an output key (every tuple map makes each output key from one input key)."""
        return self.op.source(key)

    @property
    def name(self) -> str:
        return self.op.describe()

    def describe(self) -> str:
        return f"LocalMap({self.name})"


IA_OPERATORS = (Placed, Broadcast, Shuffle, LocalJoin, LocalAggregate, LocalFilter, LocalMap)


def local_map(child: IANode, op: tra.TupleMap | Expand) -> LocalMap:
    """A ``LocalMap`` applying the same map as ``op`` (any tuple map, over any input) to ``child``:
    ``op`` itself when it reads a relation of ``child``'s type (what a local plan's maps do),
    else ``op`` rebuilt over a placeholder of that type."""
    if isinstance(op, tra.TupleMap) and op.children[0].type.same_as(child.type):
        return LocalMap(child, op)
    return LocalMap(child, op.over(_placeholder(child.type)))


def transform(child: IANode, kernel: Kernel) -> LocalMap:
    return LocalMap(child, tra.Transform(_placeholder(child.type), kernel))


def rekey(child: IANode, key_fn: KeyMap) -> LocalMap:
    return LocalMap(child, tra.ReKey(_placeholder(child.type), key_fn))


def tile(child: IANode, tile_dim: int, tile_size: int) -> LocalMap:
    return LocalMap(child, tra.Tile(_placeholder(child.type), tile_dim, tile_size))


def expand(child: IANode, positions: Iterable[int], frontier: Sequence[int]) -> LocalMap:
    return LocalMap(child, Expand(positions, frontier))
