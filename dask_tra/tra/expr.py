"""TRA expressions: seven small immutable operator nodes over tensor relations.

The four per-tuple operators (ReKey, Filter, Transform, Tile) are ``TupleMap``s: the layers
below know them by that protocol only, so a new per-tuple operator is one class.

Each node declares its operands, as dask's ``Expr._parameters`` does: the names of its
constructor's arguments, children first, kept as attributes (``dag.Operands``). That gives
every node ``operands``, ``params`` (the operands after the children), ``over`` (the same
operator over other inputs) and pickling by constructor. Each node computes its output ``RelationType``
when it is built, so ill-formed expressions fail at call time with an error naming the
operator. Nodes compare by identity: reusing one node object is how a DAG shares a
sub-expression.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import math
from collections.abc import Iterable
from typing import Any, NoReturn, cast

import numpy as np

from .dag import TOKEN, Operands, cached, render, walk
from .errors import ChunkShapeError, IntegrityError, TRAError, fmt_key
from .kernels import Bound, Kernel
from .keyfuncs import KeyMap, KeyPred, replace_dim, select_dims
from .relation import ChunkAxis, RelationType, infer_axis


class Expr(Operands):
    """Base TRA node. ``children`` are input expressions; ``type`` the output metadata;
    ``_parameters`` the constructor's argument names, children first (``dag.Operands``)."""

    children: tuple[Expr, ...] = ()
    type: RelationType

    def describe(self) -> str:
        raise NotImplementedError

    def __reduce_ex__(self, protocol: Any) -> Any:
        """By constructor from the operands (a node that declares none pickles its attributes)."""
        get = type(self)._get
        return (type(self), get(self)) if get is not None else super().__reduce_ex__(protocol)

    def over(self, *children: Any) -> Any:
        """The same operator over other inputs, of the same types as its own. Where every new
        input's type is written exactly as the old one's (a rewrite below kept it), the node is
        copied in O(1): its type and all its constructor derived depend on its parameters and
        its inputs' types alone; the facts of the DAG below it (``dag.cached``) are dropped."""
        olds = self.children
        same = len(children) == len(olds) and all(n.type.identical(o.type) for n, o in zip(children, olds))
        if olds and same and type(self)._get is not None:
            new = object.__new__(type(self))
            fields = new.__dict__
            fields.update(self.__dict__)
            for fact in _BELOW:
                fields.pop(fact, None)
            for name, child in zip(cast(tuple, type(self)._parameters), children):
                fields[name] = child
            fields["children"] = tuple(children)
            return new
        return super().over(*children)

    def walk(self) -> list[Expr]:
        """Every node of the DAG once, children before parents."""
        return walk(self)

    def __repr__(self) -> str:
        return render(self)

    @property
    def input_names(self) -> frozenset[str]:
        """The names of the Inputs the DAG below this node reads. Kept on each node
        (``dag.cached``): an operator's is made from its children's, never by a walk, and a node
        with one child, or whose children read the same inputs, shares its child's set."""
        return cast(frozenset, cached(self, "_input_names", _input_names))

    @property
    def sparse_inputs(self) -> frozenset[Input]:
        """The block-sparse Inputs (with an explicit key set) below this node; kept on each node,
        as ``input_names`` (empty, and shared, for the dense expressions of most arrays)."""
        return cast(frozenset, cached(self, "_sparse_inputs", _sparse_inputs))

    @property
    def holes(self) -> bool:
        """True when the node reads a block-sparse input."""
        return bool(self.sparse_inputs)

    def _fail(self, exc_type: builtins.type[Exception], msg: str) -> NoReturn:
        raise exc_type(f"{self.describe()}: {msg}")

    def _dense_input(self, child: Expr, skippable: bool = False) -> None:
        """Refuse an input with holes, unless a missing (all-zero) block may be ``skippable``."""
        if not skippable and child.type.keys is not None:  # named only when it has holes
            child.type.require_continuity(self.describe(), child.describe())


# what ``dag.cached`` keeps on a node about the DAG below it: not carried to a copy over other inputs
_BELOW = ("_input_names", "_sparse_inputs", TOKEN)


def _union(sets: list[frozenset]) -> frozenset:
    """The union of the children's sets, sharing the largest when it holds the others."""
    big = max(sets, key=len)
    rest = [k for k in sets if k is not big]
    return big if all(k <= big for k in rest) else big.union(*rest)


def _input_names(node: Expr, kids: list[frozenset[str]]) -> frozenset[str]:
    return _union(kids) if kids else frozenset((cast(Input, node).name,))


_NONE: frozenset = frozenset()


def _sparse_inputs(node: Expr, kids: list[frozenset[Input]]) -> frozenset[Input]:
    if kids:
        return _union(kids)
    return frozenset((cast(Input, node),)) if node.type.keys is not None else _NONE


def _key_set(keys: set[tuple[int, ...]], frontier: tuple[int, ...]) -> frozenset[tuple[int, ...]] | None:
    """An explicit key set, or None when it is every key below ``frontier``."""
    return None if len(keys) == math.prod(frontier) else frozenset(keys)


class Input(Expr):
    """A named leaf relation (data supplied at execution). ``constant``: each chunk is one value
    repeated, a read-only view that takes no memory (``zeros``, ``ones``, ``full``). ``whole``:
    the named relation's type when this leaf reads only the blocks of ``type`` (a filtered
    input, what the rewrite pass makes of σ over an input; its keys are the relation's own).
    ``home``: (position, out of) of its first block in the array it was cut from (blocks of a
    larger source, renumbered from 0): on a cluster its work starts where that block would be."""

    _parameters = ("name", "type", "constant", "whole", "home")

    def __init__(
        self,
        name: str,
        type: RelationType,
        constant: bool = False,
        whole: RelationType | None = None,
        home: tuple[int, int] | None = None,
    ):
        self.name, self.type, self.constant, self.whole, self.home = name, type, constant, whole, home

    def part_of(self, type: RelationType) -> Input:
        """This input's blocks of ``type`` (a filter's type: keys of this input, chunks alike)."""
        return Input(self.name, type, self.constant, self.whole or self.type, self.home)

    def describe(self) -> str:
        return f"Input[{self.name}]"


class _Named:
    """An operator's name for an error message, formatted only when one is raised."""

    __slots__ = ("form", "parts")

    def __init__(self, form: str, *parts: Any) -> None:
        self.form, self.parts = form, parts

    def __str__(self) -> str:
        return self.form.format(*self.parts)


def _keys_tuple(keys: Iterable[int], arity: int, who: Any) -> tuple[int, ...]:
    keys = tuple(int(k) for k in keys)
    for k in keys:
        if not 0 <= k < arity:
            raise TRAError(f"{who}: key dim {k} out of range for key arity {arity}")
    if len(set(keys)) != len(keys):
        raise TRAError(f"{who}: repeated key dims {keys}")
    return keys


def _check_kernel(kernel: object, arity: int, who: Any) -> None:
    if not isinstance(kernel, Kernel):
        raise TRAError(f"{who}: expected a Kernel, got {type(kernel).__name__}")
    if kernel.arity != arity:
        raise TRAError(f"{who}: kernel {kernel.name} takes {kernel.arity} chunks, needs {arity}")


Key = tuple[int, ...]


class TupleMap(Expr):
    """A per-tuple operator: every output tuple is made from one input tuple, where it sits.

    Layers below the TRA handle every subclass through this protocol alone (the IA's
    ``LocalMap``, the optimizer's ``local`` strategy and its closed-form cost, emission, zero
    filling and both executors), so a new per-tuple operator is one class. A subclass declares
    ``_parameters`` (``("child", ...)``, each kept as an attribute), computes ``type`` in its
    constructor, and overrides what differs from an identity:

    - ``out_keys(key)``: the output keys made from the input tuple at ``key``;
    - ``source(key)``: the input key an output key is made from;
    - ``chunk_task(key)``: ``(fn, *args)``, the output chunk at ``key`` being
      ``fn(input chunk, *args)`` with ``fn`` module-level (tasks pickle); None when the chunk
      passes through unchanged (then set ``pure_copy``: a relabelling makes no new data);
    - ``flops``: flops of the chunk function per input element (the optimizer's compute term).

    ``describe()`` must name every parameter: plans are cached by it and the type.
    """

    child: Expr
    pure_copy = False
    keeps_keys = False  # out_keys(k) == [k] for every k (the optimizer skips relabelling)
    flops = 0.0

    def out_keys(self, key: Key) -> list[Key]:
        return [key]

    def source(self, key: Key) -> Key:
        return key

    def chunk_task(self, key: Key) -> tuple | None:
        return None

    @property
    def label(self) -> str:
        """A short name for task keys and the dashboard."""
        return type(self).__name__.lower()


class Join(Expr):
    """⋈(joinKeysL, joinKeysR, projOp): pair tuples whose join keys match, apply projOp.

    Output key: all left key dims, then the right key dims not in joinKeysR. Inputs with
    holes (block-sparse: a missing block is zeros) only under a kernel that annihilates zeros:
    the output holds the pairs that meet (an inner join).
    """

    _parameters = ("left", "right", "left_keys", "right_keys", "kernel")

    def __init__(self, left: Expr, right: Expr, left_keys: Iterable[int], right_keys: Iterable[int], kernel: Kernel):
        self.children = (left, right)
        self.left, self.right, self.kernel = left, right, kernel
        left_keys, right_keys = tuple(left_keys), tuple(right_keys)
        who = _Named("Join({},{},{})", list(left_keys), list(right_keys), getattr(kernel, "name", kernel))
        self.left_keys = _keys_tuple(left_keys, left.type.key_arity, who)
        self.right_keys = _keys_tuple(right_keys, right.type.key_arity, who)
        if len(self.left_keys) != len(self.right_keys):
            raise TRAError(f"{who}: {len(self.left_keys)} left join keys but {len(self.right_keys)} right")
        _check_kernel(kernel, 2, who)
        self._dense_input(left, kernel.annihilates)
        self._dense_input(right, kernel.annihilates)
        fl, fr = left.type.frontier, right.type.frontier
        for a, b in zip(self.left_keys, self.right_keys):
            if fl[a] != fr[b]:
                self._fail(
                    TRAError,
                    f"join key extents disagree: left key dim {a} has {fl[a]} blocks, right key dim {b} has {fr[b]}",
                )
        kl = left.type.key_arity
        self.right_out: dict[int, int] = {}  # right key dim -> output key dim
        rest = self._right_rest = tuple(d for d in range(right.type.key_arity) if d not in self.right_keys)
        for a, b in zip(self.left_keys, self.right_keys):
            self.right_out[b] = a
        for i, d in enumerate(rest):
            self.right_out[d] = kl + i
        frontier = fl + tuple(fr[d] for d in rest)
        laxes = left.type.axes
        raxes = tuple(ax.relabel(self.right_out) for ax in right.type.axes)
        try:
            axes = kernel.out_axes(frontier, laxes, raxes)
        except ChunkShapeError as e:
            self._fail(ChunkShapeError, str(e))
        self.type = RelationType(
            frontier,
            axes,
            kernel.out_dtype(left.type.dtype, right.type.dtype),
            kernel.out_backend(left.type.backend, right.type.backend),
            self._out_keys(frontier),
        )

    def _out_keys(self, frontier: tuple[int, ...]) -> frozenset[tuple[int, ...]] | None:
        """Block-sparse inputs: the pairs that meet (an inner join: a missing block joins to
        nothing), from the inputs' key sets; None when both inputs are dense."""
        lt, rt = self.left.type, self.right.type
        if lt.keys is None and rt.keys is None:
            return None
        index: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        for rk in rt.iter_keys():
            index.setdefault(tuple(rk[d] for d in self.right_keys), []).append(rk)
        keys = {
            self.out_key(lk, rk) for lk in lt.iter_keys() for rk in index.get(tuple(lk[d] for d in self.left_keys), ())
        }
        return _key_set(keys, frontier)

    def out_key(self, lkey: tuple[int, ...], rkey: tuple[int, ...]) -> tuple[int, ...]:
        rest = self._right_rest
        lkey = lkey if type(lkey) is tuple else tuple(lkey)
        if not rest:
            return lkey
        if len(rest) == 1:  # the common case, without a generator (once per joined tuple)
            return lkey + (rkey[rest[0]],)
        return lkey + tuple([rkey[d] for d in rest])

    def describe(self) -> str:
        return f"Join({list(self.left_keys)},{list(self.right_keys)},{self.kernel.name})"


class Aggregate(Expr):
    """Σ(groupByKeys, aggOp): group tuples by the listed key dims and fold their chunks with aggOp.

    An input with holes only under a kernel whose identity is zero (add): the output holds the
    groups that received a tuple."""

    _parameters = ("child", "group_by", "kernel")

    def __init__(self, child: Expr, group_by: Iterable[int], kernel: Kernel):
        self.children = (child,)
        self.child, self.kernel = child, kernel
        group_by = tuple(group_by)
        who = _Named("Aggregate({},{})", list(group_by), getattr(kernel, "name", kernel))
        self.group_by = _keys_tuple(group_by, child.type.key_arity, who)
        _check_kernel(kernel, 2, who)
        self._dense_input(child, kernel.zero_identity)
        t = child.type
        mapping = {d: i for i, d in enumerate(self.group_by)}
        frontier = tuple(t.frontier[d] for d in self.group_by)
        axes_list = []
        for i, ax in enumerate(t.axes):
            dropped = [d for d in ax.key_dims if d not in mapping]
            if dropped:
                ax = ax.simplified()
                if any(d not in mapping for d in ax.key_dims):
                    self._fail(
                        ChunkShapeError,
                        f"chunks folded together differ in extent along "
                        f"chunk axis {i} (it varies with key dim {dropped[0]})",
                    )
            axes_list.append(ax.relabel(mapping))
        axes = tuple(axes_list)
        try:
            out = kernel.out_axes(frontier, axes, axes)
        except ChunkShapeError as e:
            self._fail(ChunkShapeError, str(e))
        if out != axes:
            self._fail(TRAError, f"aggregation kernel {kernel.name} must keep the chunk shape")
        keys = None if t.keys is None else _key_set({tuple(k[d] for d in self.group_by) for k in t.keys}, frontier)
        self.type = RelationType(frontier, axes, kernel.out_dtype(t.dtype, t.dtype), t.backend, keys)

    def describe(self) -> str:
        return f"Aggregate({list(self.group_by)},{self.kernel.name})"


class ReKey(TupleMap):
    """ReKey(keyFunc): apply keyFunc to every key. Checks key uniqueness (it can break it)."""

    _parameters = ("child", "key_fn")
    pure_copy = True

    def __init__(self, child: Expr, key_fn: KeyMap):
        self.children = (child,)
        self.child, self.key_fn = child, key_fn
        t = child.type
        perm = key_fn.select
        if t.keys is None and perm is not None and sorted(perm) == list(range(t.key_arity)):
            # a transpose of a whole grid: its type in closed form, its key table when asked
            at = {d: i for i, d in enumerate(perm)}
            frontier = tuple(t.frontier[d] for d in perm)
            axes = tuple(ChunkAxis(tuple(at[d] for d in ax.key_dims), ax.sizes) for ax in t.axes)
            self.type = RelationType(frontier, axes, t.dtype, t.backend)
            return
        renumbered = _renumbered(t, key_fn)
        if renumbered is not None:  # a slice's blocks numbered 0, 1, ...: closed form
            self.type = renumbered
            return
        placed = placed_dims(key_fn, t)
        if placed is not None:  # dims kept or dropped (extent 1), new dims of extent 1: closed form
            at = {d: i for i, d in enumerate(placed) if d is not None}
            frontier = tuple(1 if d is None else t.frontier[d] for d in placed)
            axes = tuple((ax if all(d in at for d in ax.key_dims) else ax.simplified()).relabel(at) for ax in t.axes)
            self.type = RelationType(frontier, axes, t.dtype, t.backend)
            return
        mapped = self.sources = self._table(t, key_fn)
        # block-sparse: frontier and extents follow the whole key grid
        grid = (_whole_grid(t, key_fn) if t.keys is not None else None) or mapped
        arities = {len(k) for k in grid}
        if len(arities) > 1:
            self._fail(TRAError, f"key function returns keys of different arities {sorted(arities)}")
        arity = arities.pop() if arities else t.key_arity
        frontier = tuple(1 + max(k[d] for k in grid) for d in range(arity)) if grid else (0,) * arity
        dense = len(mapped) == math.prod(frontier)
        axes = tuple(
            infer_axis({nk: ax.size_at(k) for nk, k in grid.items()}, frontier) if ax.key_dims else ax  # constant: kept
            for ax in t.axes
        )
        self.type = RelationType(frontier, axes, t.dtype, t.backend, None if dense else frozenset(mapped))

    @classmethod
    def composed(cls, outer: ReKey, inner: ReKey) -> ReKey:
        """``ReKey(inner.child, outer.key_fn ∘ inner.key_fn)``, typed as ``outer`` is: where both
        key tables are made already, the new one is read off them, no key mapped again (two
        rechunks' relabellings of every tile)."""
        made = outer.__dict__.get("sources"), inner.__dict__.get("sources")
        key_fn = KeyMap.compose(outer.key_fn, inner.key_fn)
        if made[0] is None or made[1] is None:
            return cls(inner.child, key_fn)
        new = object.__new__(cls)
        new.children, new.child, new.key_fn, new.type = (inner.child,), inner.child, key_fn, outer.type
        new.sources = {nk: made[1][k] for nk, k in made[0].items()}
        return new

    @functools.cached_property
    def sources(self) -> dict:
        """output key -> input key (a transpose's, made when first asked)."""
        return self._table(self.child.type, self.key_fn)

    def _table(self, t: RelationType, key_fn: KeyMap) -> dict:
        """output key -> input key, checked: non-negative and unique."""
        mapped: dict[tuple[int, ...], tuple[int, ...]] = {}
        for k in t.iter_keys():
            nk = key_fn(k)
            if any(v < 0 for v in nk):
                self._fail(IntegrityError, f"key {fmt_key(k)} maps to negative key {fmt_key(nk)}")
            if nk in mapped:
                self._fail(
                    IntegrityError,
                    f"keys {fmt_key(mapped[nk])} and {fmt_key(k)} both map to {fmt_key(nk)} (key uniqueness)",
                )
            mapped[nk] = k
        return mapped

    @functools.cached_property
    def targets(self) -> dict:
        """input key -> output key (``sources`` inverted: a lookup, not a key map's call)."""
        return {k: nk for nk, k in self.sources.items()}

    def out_keys(self, key: Key) -> list[Key]:
        return [self.targets[tuple(key)]]

    def source(self, key: Key) -> Key:
        return self.sources[key]

    def describe(self) -> str:
        return f"ReKey({self.key_fn})"


def _renumbered(t: RelationType, key_fn: KeyMap) -> RelationType | None:
    """The type of a renumbering (``KeyMap.renumbering``) that numbers the blocks present along
    its dim 0, 1, ... in order of their new numbers, over a relation dense but maybe for holes
    along that dim (``keep_blocks``' Filter): dense, its chunk extents taken at the old numbers.
    None otherwise (the key table then decides, and reports a bad map)."""
    axis, fn = key_fn.renumbers, key_fn.fn
    if axis is None or not isinstance(fn, Bound) or fn.fn is not replace_dim or type(fn.params[1]) is not dict:
        return None
    table = fn.params[1]
    if t.keys is None:
        present: Iterable[int] = range(t.frontier[axis])
    else:
        present = {k[axis] for k in t.keys}
        if len(t.keys) != len(present) * math.prod(f for d, f in enumerate(t.frontier) if d != axis):
            return None  # holes along other dims too
        if all(i in table for i in range(t.frontier[axis])):
            return None  # it numbers the holes too: the whole grid's numbering decides (``_whole_grid``)
    old_of = {}
    for v in present:
        new = table.get(v)
        if new is None or new in old_of:
            return None
        old_of[new] = v
    m = len(old_of)
    if not m or any(j not in old_of for j in range(m)):
        return None
    order = [old_of[j] for j in range(m)]
    axes = tuple(
        ax
        if axis not in ax.key_dims
        else ChunkAxis(ax.key_dims, np.take(ax.sizes, order, axis=ax.key_dims.index(axis)))
        for ax in t.axes
    )
    return RelationType(t.frontier[:axis] + (m,) + t.frontier[axis + 1 :], axes, t.dtype, t.backend)


def placed_dims(key_fn: KeyMap, t: RelationType) -> tuple | None:
    """The input dim each output key dim copies (None: a new dim of extent 1), when ``key_fn``
    only places dims (``select_dims``) one to one over ``t``'s whole non-empty grid, every input
    dim it leaves out of extent 1; else None."""
    fn = key_fn.fn
    placed = key_fn.select
    if placed is None and isinstance(fn, Bound) and fn.fn is select_dims:
        placed = tuple(fn.params[0])
    if placed is None or t.keys is not None or not all(t.frontier):
        return None
    kept = [d for d in placed if d is not None]
    if len(set(kept)) != len(kept) or not all(0 <= d < t.key_arity for d in kept):
        return None
    return placed if all(f == 1 for d, f in enumerate(t.frontier) if d not in kept) else None


def _whole_grid(t: RelationType, key_fn: KeyMap) -> dict | None:
    """new key -> old key over every key below ``t``'s frontier, when ``key_fn`` maps them all
    one to one onto non-negative keys of one arity; else None."""
    try:
        grid = {key_fn(k): k for k in t.with_(keys=None).iter_keys()}
    except LookupError:  # a table that maps only the keys present
        return None
    if len(grid) != math.prod(t.frontier) or len({len(k) for k in grid}) > 1 or min(map(min, grid), default=0) < 0:
        return None
    return grid


class Filter(TupleMap):
    """σ(boolFunc): keep tuples whose key satisfies boolFunc. May leave holes (sparse keys)."""

    _parameters = ("child", "predicate")
    pure_copy = True

    def __init__(self, child: Expr, predicate: KeyPred):
        self.children = (child,)
        self.child, self.predicate = child, predicate
        t = child.type
        parts = predicate.conjuncts()
        values = _kept_values(t, parts)
        keys: frozenset | None
        if values is not None:  # the kept keys are a product: frontier and density from its factors
            frontier = tuple(v[-1] + 1 for v in values) if all(values) else (0,) * t.key_arity
            dense = all(len(v) == f for v, f in zip(values, frontier)) or not all(values)
            keys = None if dense else frozenset(itertools.product(*values))
        else:
            kept = _kept(t, parts)
            frontier = tuple(1 + max((k[d] for k in kept), default=-1) for d in range(t.key_arity))
            keys = None if len(kept) == math.prod(frontier) else frozenset(kept)
        axes = tuple(ax.truncate(frontier) for ax in t.axes)
        self.type = RelationType(frontier, axes, t.dtype, t.backend, keys)

    def out_keys(self, key: Key) -> list[Key]:
        t = self.type  # the keys kept: a dense result's are its frontier's box
        kept = all(k < f for k, f in zip(key, t.frontier)) if t.keys is None else tuple(key) in t.keys
        return [key] if kept else []

    def describe(self) -> str:
        return f"Filter({self.predicate})"


def _kept_values(t: RelationType, parts: tuple) -> list[list[int]] | None:
    """When ``t`` is dense and each of a predicate's ``parts`` (``KeyPred.conjuncts``) reads one
    dim: per dim, the values the kept keys take (ascending; the kept keys are their product, in
    the grid's order), each asked once at a key of the grid; else None."""
    if not (t.keys is None and t.key_arity and all(p.dims is not None and len(p.dims) == 1 for p in parts)):
        return None
    values = [list(range(f)) for f in t.frontier]
    for pred in parts:
        (d,) = pred.dims
        if not all(values):
            break
        blocks = pred.block_set()
        if blocks is not None and blocks[0] == d:  # ``key[d] in blocks``: read in closed form
            values[d] = [v for v in values[d] if v in blocks[1]]
            continue
        first = [v[0] for v in values]
        values[d] = [v for v in values[d] if pred(tuple(first[:d] + [v] + first[d + 1 :]))]
    return values


def _kept(t: RelationType, parts: tuple) -> list:
    """The keys of ``t`` that a predicate keeps, tested part by part (``KeyPred.conjuncts``),
    each part once per value of the dims it reads (a slice of a 400-block array asks 20 times,
    not 400, through its chain of key maps); ``_kept_values`` where the kept keys are a product."""
    kept = list(t.iter_keys())
    for pred in parts:
        if pred.dims is None:
            kept = [k for k in kept if pred(k)]
            continue
        found = pred.tuple_set()
        if found is not None:  # ``dims_in``: the keys' values read in closed form, no call per key
            dims, allowed = found
            if len(dims) == 1:
                kept = [k for k in kept if k[dims[0]] in allowed]
            else:
                kept = [k for k in kept if tuple([k[d] for d in dims]) in allowed]
            continue
        read = tuple(sorted(pred.dims))
        said: dict = {}
        out = []
        for k in kept:
            at = tuple(k[d] for d in read)
            keep = said.get(at)
            if keep is None:
                keep = said[at] = bool(pred(k))
            if keep:
                out.append(k)
        kept = out
    return kept


def keep_blocks(expr: Expr, axis: int, used: Iterable[int]) -> ReKey:
    """``expr`` with only the blocks ``used`` (sorted) along key dim ``axis``, renumbered 0, 1,
    ...: a Filter and a renumbering ReKey, the pair the rewrite pass moves toward the inputs."""
    used = [int(i) for i in used]
    rank = {i: r for r, i in enumerate(used)}
    kept = Filter(expr, KeyPred.blocks_in(axis, frozenset(rank), f"inBlocks{used}"))
    return ReKey(kept, KeyMap.renumbering(axis, rank, expr.type.key_arity))


class Transform(TupleMap):
    """λ(transformFunc): apply a unary kernel to every chunk; keys unchanged."""

    _parameters = ("child", "kernel")
    keeps_keys = True
    flops = 1.0

    def __init__(self, child: Expr, kernel: Kernel):
        self.children = (child,)
        self.child, self.kernel = child, kernel
        _check_kernel(kernel, 1, _Named("Transform({})", getattr(kernel, "name", kernel)))
        t = child.type
        try:
            axes = tuple(kernel.out_axes(t.frontier, t.axes))
        except ChunkShapeError as e:
            self._fail(ChunkShapeError, str(e))
        self.type = RelationType(t.frontier, axes, kernel.out_dtype(t.dtype), kernel.out_backend(t.backend), t.keys)

    @classmethod
    def typed(cls, child: Expr, kernel: Kernel, type: RelationType) -> Transform:
        """``Transform(child, kernel)`` of a known ``type``, not inferred again: for a rewrite
        whose kernel computes exactly what a node of that type did (two maps fused into one)."""
        new = object.__new__(cls)
        new.children, new.child, new.kernel, new.type = (child,), child, kernel, type
        return new

    def chunk_task(self, key: Key) -> tuple:
        return (self.kernel,)

    @property
    def label(self) -> str:
        return self.kernel.name

    def describe(self) -> str:
        return f"Transform({self.kernel.name})"


class Tile(TupleMap):
    """Tile(tileDim, tileSize): cut every chunk along a chunk axis; a new last key dim counts tiles
    (of the tuples present: a missing block's tiles are missing). The count is the longest
    chunk's: a shorter chunk's last tiles are empty (extent 0)."""

    _parameters = ("child", "tile_dim", "tile_size")

    def __init__(self, child: Expr, tile_dim: int, tile_size: int):
        self.children = (child,)
        self.child, self.tile_dim, self.tile_size = child, int(tile_dim), int(tile_size)
        t = child.type
        if not 0 <= self.tile_dim < t.rank:
            self._fail(TRAError, f"chunk axis {tile_dim} out of range for chunk rank {t.rank}")
        if self.tile_size < 1:
            self._fail(TRAError, f"tile size must be positive, got {tile_size}")
        ax = t.axes[self.tile_dim]
        n = int(-(-ax.sizes.max() // self.tile_size)) if ax.sizes.size else 0
        k = t.key_arity
        tiles = np.arange(n).reshape((1,) * ax.sizes.ndim + (n,))
        sizes = np.clip(ax.sizes[..., None] - tiles * self.tile_size, 0, self.tile_size)
        new_axis = ChunkAxis(ax.key_dims + (k,), sizes).simplified()
        axes = t.axes[: self.tile_dim] + (new_axis,) + t.axes[self.tile_dim + 1 :]
        keys = None if t.keys is None else frozenset(k + (i,) for k in t.keys for i in range(n))
        self.type = RelationType(t.frontier + (n,), axes, t.dtype, t.backend, keys)

    def out_keys(self, key: Key) -> list[Key]:
        return [key + (t,) for t in range(self.type.frontier[-1])]

    def source(self, key: Key) -> Key:
        return key[:-1]

    def chunk_task(self, key: Key) -> tuple:
        return (tile_chunk, self.tile_dim, self.tile_size, key[-1])

    def describe(self) -> str:
        return f"Tile({self.tile_dim},{self.tile_size})"


def tile_chunk(chunk: Any, dim: int, size: int, t: int) -> Any:
    """Tile ``t`` of a chunk cut along axis ``dim`` into tiles of ``size``."""
    index = [slice(None)] * chunk.ndim
    index[dim] = slice(t * size, (t + 1) * size)
    return chunk[tuple(index)]


class Concat(Expr):
    """Concat(keyDim, arrayDim): group by all other key dims, concatenate along arrayDim in keyDim order."""

    _parameters = ("child", "key_dim", "array_dim")

    def __init__(self, child: Expr, key_dim: int, array_dim: int):
        self.children = (child,)
        self.child, self.key_dim, self.array_dim = child, int(key_dim), int(array_dim)
        t = child.type
        if not 0 <= self.key_dim < t.key_arity:
            self._fail(TRAError, f"key dim {key_dim} out of range for key arity {t.key_arity}")
        if not 0 <= self.array_dim < t.rank:
            self._fail(TRAError, f"chunk axis {array_dim} out of range for chunk rank {t.rank}")
        self._dense_input(child)
        kd = self.key_dim
        mapping = {d: d - (d > kd) for d in range(t.key_arity) if d != kd}
        axes: list[ChunkAxis] = []
        for i, ax in enumerate(t.axes):
            if i == self.array_dim:
                if kd in ax.key_dims:
                    keep = tuple(d for d in ax.key_dims if d != kd)
                    summed = ChunkAxis(keep, ax.sizes.sum(axis=ax.key_dims.index(kd)))
                else:
                    summed = ChunkAxis(ax.key_dims, ax.sizes * t.frontier[kd])
                axes.append(summed.relabel(mapping))
                continue
            s = ax.simplified()
            if kd in s.key_dims:
                self._fail(ChunkShapeError, f"chunks concatenated together differ in extent along chunk axis {i}")
            axes.append(s.relabel(mapping))
        frontier = tuple(f for d, f in enumerate(t.frontier) if d != kd)
        self.type = RelationType(frontier, tuple(axes), t.dtype, t.backend)

    def describe(self) -> str:
        return f"Concat({self.key_dim},{self.array_dim})"


OPERATORS = (Join, Aggregate, ReKey, Filter, Transform, Tile, Concat)


def with_children(node: Expr, children: tuple[Expr, ...]) -> Expr:
    """The operator ``node`` over other inputs, of the same types as its own (``Expr.over``)."""
    return node.over(*children)


def substitute(root: Expr, table: dict[str, Expr]) -> Expr:
    """``root`` with every ``Input`` named in ``table`` replaced by ``table[name]``, itself
    substituted the same way (a chain of lineages becomes one expression). Iterative: each node is
    rebuilt once (a shared node stays shared), the untouched ones are kept, and nothing recurses
    however deep the chain. ``table`` must not reach a name from its own expression."""
    done: dict[int, Expr] = {}  # id(node) -> its substitute
    stack: list[Expr] = [root]
    entered: set[int] = set()  # table entries being substituted (a cycle would never end)
    while stack:
        node = stack[-1]
        if id(node) in done:
            stack.pop()
            continue
        if isinstance(node, Input) and node.name in table:
            sub = table[node.name]
            if id(sub) in done:
                done[id(node)] = done[id(sub)]
                stack.pop()
            elif id(sub) in entered:
                raise TRAError(f"Input[{node.name}]: its substitute reads it")
            else:
                entered.add(id(sub))
                stack.append(sub)
            continue
        todo = [c for c in node.children if id(c) not in done]
        if todo:
            stack.extend(todo)
            continue
        kids = tuple(done[id(c)] for c in node.children)
        same = all(k is c for k, c in zip(kids, node.children))
        done[id(node)] = node if same else with_children(node, kids)
        stack.pop()
    return done[id(root)]
