"""The logical rewrite pass: TRA expressions simplified before physical planning.

In the spirit of dask-expr's ``simplify``: a slice is pushed toward the inputs, so only the
blocks it keeps are computed; per-tuple chains are fused; relabellings that undo each other
vanish; equal sub-expressions are computed once. Each rule is a small object whose ``apply``
takes a node (its children already simplified) and returns the node rewritten, or None.

A rewrite is kept only when the new node has the old one's exact ``RelationType``: the same
keys, chunk shapes, dtype and backend. Every rule is exact (same (key, chunk) set), which the
property tests check against the reference executor. A rule that would compute a node's work
twice (a slice pushed below an operator whose result another operator also reads) does not fire.

The driver is iterative and visits each node once, plus once per node a rule makes; nothing
recurses, however deep the expression.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tra import expr as tra
from ..tra.dag import TOKEN, walk_many
from ..tra.errors import TRAError
from ..tra.expr import Expr, keep_blocks, placed_dims, with_children
from ..tra.kernels import Bound, Composed, Kernel
from ..tra.keyfuncs import KeyMap, KeyPred

Sole = Callable[[Expr], bool]  # whether a node has exactly one reader


@dataclass(frozen=True)
class Rule:
    """A named rewrite of ``on`` nodes: ``fn(node, sole)`` returns the rewritten node, or None."""

    name: str
    fn: Callable[[Any, Sole], Expr | None]
    on: type

    def apply(self, node: Expr, sole: Sole) -> Expr | None:
        return self.fn(node, sole)


# ---------------------------------------------------------------- predicates and key maps


def _pred_after(pred: KeyPred, keymap: KeyMap, key: tuple) -> bool:
    return pred(keymap(key))


def pred_after(pred: KeyPred, keymap: KeyMap) -> KeyPred:
    """``key -> pred(keymap(key))``: a Filter's predicate read before a ReKey."""
    direct = pred.read_dims(lambda d: _copied_dim(keymap, d))
    if direct is not None:
        return direct
    dims = None if pred.dims is None else keymap.copied(pred.dims)
    return KeyPred(Bound(_pred_after, pred, keymap), pred.name, dims)


def _copied_dim(keymap: KeyMap, dim: int) -> int | None:
    """The input dim that output dim ``dim`` of ``keymap`` copies, or None."""
    copied = keymap.copied((dim,))
    return next(iter(copied)) if copied else None


# ---------------------------------------------------------------- the rules


def _merge_filters(node: Any, sole: Sole) -> Expr | None:
    if isinstance(node, tra.Filter) and isinstance(node.child, tra.Filter) and sole(node.child):
        outer, inner = node.predicate, node.child.predicate
        return tra.Filter(node.child.child, inner if outer == inner else KeyPred.conjunction(outer, inner))
    return None


def _filter_into_input(node: Any, sole: Sole) -> Expr | None:
    """σ over an input is the input's kept blocks read alone: planned and emitted as such, the
    blocks it drops are never looked at (a slice of a 400-block input reads one)."""
    if isinstance(node, tra.Filter) and isinstance(node.child, tra.Input):
        return node.child.part_of(node.type)
    return None


def _filter_through_rekey(node: Any, sole: Sole) -> Expr | None:
    if isinstance(node, tra.Filter) and isinstance(node.child, tra.ReKey):
        rekey = node.child
        return tra.ReKey(tra.Filter(rekey.child, pred_after(node.predicate, rekey.key_fn)), rekey.key_fn)
    return None


def _relabel_through_transform(node: Any, sole: Sole) -> Expr | None:
    """A relabelling (σ or ReKey: it copies chunks) moves below a per-chunk λ: keys are λ's
    business no more than chunks are the relabelling's."""
    if node.pure_copy and isinstance(node.child, tra.Transform) and sole(node.child):
        t = node.child
        kernel = t.kernel
        if isinstance(node, tra.ReKey) and node.key_fn.renumbers is not None:
            kernel = kernel.restricted(node.key_fn.renumbers, node.key_fn.kept())
        return tra.Transform(node.over(t.child), kernel)
    return None


def _filter_through_join(node: Any, sole: Sole) -> Expr | None:
    """σ over ⋈: the filter moves to each side whose key determines it (the left side's key is the
    output key's first dims; the right side's holds the join dims and the rest)."""
    if not (isinstance(node, tra.Filter) and isinstance(node.child, tra.Join) and sole(node.child)):
        return None
    pred, join = node.predicate, node.child
    if pred.dims is None:
        return None
    kl = join.left.type.key_arity
    out_arity = node.type.key_arity
    from_right = {o: r for r, o in join.right_out.items()}  # output dim -> right dim
    left, right = join.left, join.right
    if all(d < kl for d in pred.dims):
        left = tra.Filter(left, KeyPred.reindexed(pred, {d: d for d in pred.dims}, out_arity))
    if all(d in from_right for d in pred.dims):
        right = tra.Filter(right, KeyPred.reindexed(pred, {d: from_right[d] for d in pred.dims}, out_arity))
    if left is join.left and right is join.right:
        return None
    kernel = join.kernel  # the filter may end some dims sooner: their trailing blocks are cut
    for d, (now, was) in enumerate(zip(node.type.frontier, join.type.frontier)):
        if now < was:
            kernel = kernel.restricted(d, tuple(range(now)))
    return tra.Join(left, right, join.left_keys, join.right_keys, kernel)


def _slice_through_join(node: Any, sole: Sole) -> Expr | None:
    """A slice that keeps some blocks of one key dim and renumbers them (ReKey(renumber) over
    σ, the holes closed at once) moves below ⋈ as a pair, to each side that holds the dim: alone,
    the σ would leave holes in the join's inputs."""
    if not (isinstance(node, tra.ReKey) and node.key_fn.renumbers is not None):
        return None
    filt = node.child
    if not (isinstance(filt, tra.Filter) and isinstance(filt.child, tra.Join) and sole(filt) and sole(filt.child)):
        return None
    axis, pred, join = node.key_fn.renumbers, filt.predicate, filt.child
    if pred.dims is None or not pred.dims <= {axis}:
        return None
    kl, out_arity = join.left.type.key_arity, filt.type.key_arity
    from_right = {o: r for r, o in join.right_out.items()}  # output dim -> right dim

    def cut(side: Expr, dim: int) -> Expr:
        kept = tra.Filter(side, KeyPred.reindexed(pred, {axis: dim}, out_arity))
        return tra.ReKey(kept, node.key_fn.renumbered_at(dim, side.type.key_arity))

    left = cut(join.left, axis) if axis < kl else join.left
    right = cut(join.right, from_right[axis]) if axis in from_right else join.right
    kernel = join.kernel.restricted(axis, node.key_fn.kept())
    return tra.Join(left, right, join.left_keys, join.right_keys, kernel)


def _filter_through_aggregate(node: Any, sole: Sole) -> Expr | None:
    if not (isinstance(node, tra.Filter) and isinstance(node.child, tra.Aggregate) and sole(node.child)):
        return None
    agg = node.child
    source = dict(enumerate(agg.group_by))
    return tra.Aggregate(
        tra.Filter(agg.child, KeyPred.reindexed(node.predicate, source, len(source))), agg.group_by, agg.kernel
    )


def _merge_rekeys(node: Any, sole: Sole) -> Expr | None:
    if isinstance(node, tra.ReKey) and isinstance(node.child, tra.ReKey):
        return tra.ReKey.composed(node, node.child)
    return None


def _drop_identity_rekey(node: Any, sole: Sole) -> Expr | None:
    if isinstance(node, tra.ReKey) and _is_identity(node):
        return node.child
    return None


def _is_identity(node: tra.ReKey) -> bool:
    """Whether the ReKey maps every key to itself: in closed form where its map declares what it
    does (a transpose's table is not built to be found not to be one)."""
    fn, arity = node.key_fn, node.child.type.key_arity
    if node.type.key_arity != arity:
        return False
    if fn.select is not None:
        return fn.select == tuple(range(arity))
    placed = placed_dims(fn, node.child.type)
    if placed is not None:  # dims kept, dropped or added in closed form (``keepdims``' ``key[0,0,0]``)
        f = node.child.type.frontier  # a dim of extent 1 is 0 in every key, wherever it comes from
        return all(d == i or f[i] == 1 and (d is None or f[d] == 1) for i, d in enumerate(placed))
    if fn.renumbers is not None and isinstance(fn.fn, Bound) and node.child.type.keys is None:
        table = fn.fn.params[1]
        return all(table.get(i) == i for i in range(node.child.type.frontier[fn.renumbers]))
    return all(k == v for k, v in node.sources.items())


def _fuse_transforms(node: Any, sole: Sole) -> Expr | None:
    if isinstance(node, tra.Transform) and isinstance(node.child, tra.Transform) and sole(node.child):
        outer, inner = node.kernel, node.child.kernel
        return tra.Transform.typed(node.child.child, outer.compose(inner) or Composed(outer, inner), node.type)
    return None


def _permute_below_concat(node: Any, sole: Sole) -> Expr | None:
    """A chunk transpose run first on a concatenation's result (maybe through a relabelling)
    moves below it: each member is transposed and they are concatenated along the axis the old
    one became. The concatenation then writes the transposed layout, so what reads it next gets
    it C-contiguous (a quantile over the last axis, as xarray's, sorts its rows twice as fast
    as in a transposed view)."""
    if not isinstance(node, tra.Transform) or node.kernel.arity != 1:
        return None
    parts = node.kernel.parts if isinstance(node.kernel, Composed) else (node.kernel,)
    perm = parts[0].permutes
    child, rekey = node.child, None
    if isinstance(child, tra.ReKey) and sole(child):
        rekey, child = child, child.child
    if perm is None or not (isinstance(child, tra.Concat) and sole(child)) or len(perm) != child.type.rank:
        return None
    concat = tra.Concat(tra.Transform(child.child, parts[0]), child.key_dim, perm.index(child.array_dim))
    below = concat if rekey is None else tra.ReKey(concat, rekey.key_fn)
    if len(parts) == 1:
        return below
    rest = parts[1]
    for k in parts[2:]:
        rest = Composed(k, rest)
    return tra.Transform(below, rest)


def _reduce_below_concat(node: Any, sole: Sole) -> Expr | None:
    """An aggregation of a reduction of concatenated parts (xarray's groupby: a month's days
    gathered from several blocks, concatenated, then summed) reduces each part where it is and
    merges the parts' results in the aggregation, when that is how the reduction's results
    merge (``Kernel.parts_merge``): the parts are not copied together, and on a cluster only
    their reductions move."""
    if not isinstance(node, tra.Aggregate) or not (node.kernel.associative and node.kernel.commutative):
        return None
    reduce = node.child
    if not (isinstance(reduce, tra.Transform) and sole(reduce) and isinstance(reduce.child, tra.Concat)):
        return None
    concat = reduce.child
    if not sole(concat) or reduce.kernel.parts_merge(concat.array_dim) != node.kernel:
        return None
    kd = concat.key_dim
    group_by = tuple(d if d < kd else d + 1 for d in node.group_by)  # the parts' dims: kd is back
    return tra.Aggregate(tra.Transform(concat.child, reduce.kernel), group_by, node.kernel)


def _drop_identity_transform(node: Any, sole: Sole) -> Expr | None:
    if isinstance(node, tra.Transform) and node.kernel.identity_map:
        return node.child
    return None


RULES: tuple[Rule, ...] = tuple(
    Rule(fn.__name__.strip("_"), fn, on)
    for fn, on in (
        (_merge_filters, tra.Filter),
        (_filter_into_input, tra.Filter),
        (_filter_through_rekey, tra.Filter),
        (_relabel_through_transform, tra.TupleMap),
        (_filter_through_join, tra.Filter),
        (_filter_through_aggregate, tra.Filter),
        (_slice_through_join, tra.ReKey),
        (_merge_rekeys, tra.ReKey),
        (_drop_identity_rekey, tra.ReKey),
        (_fuse_transforms, tra.Transform),
        (_permute_below_concat, tra.Transform),
        (_drop_identity_transform, tra.Transform),
        (_reduce_below_concat, tra.Aggregate),
    )
)


# ---------------------------------------------------------------- common sub-expressions


# id -> (object, its value): a kernel, key map or predicate (immutable) is read once, whichever
# of a simplify's passes meets it again; the object is kept, so its id is not reused while here
_seen: dict[int, tuple] = {}
_SEEN_MAX = 4096
BIG = 64  # items of a collection compared one by one; larger ones: see ``_big``


def _value(v: Any) -> Any:
    """A hashable stand-in equal exactly when the values are: kernels by their type and every
    field (a function by identity: two kernels named alike with other functions differ), a
    scalar with its type (1, 1.0 and True are equal in Python, not as parameters: int8 * 1.0 is
    float64)."""
    if type(v) in _ATOMS:  # most fields: checked first
        return v
    if isinstance(v, (Kernel, Bound, KeyMap, KeyPred)):
        found = _seen.get(id(v))
        if found is None or found[0] is not v:
            fields = (v.fn, v.params) if isinstance(v, Bound) else vars(v)
            if len(_seen) >= _SEEN_MAX:
                _seen.clear()
            found = _seen[id(v)] = (v, (type(v), _value(fields)))
        return found[1]
    if isinstance(v, (dict, list, tuple, set, frozenset)) and len(v) > BIG:
        return _big(v)
    if isinstance(v, dict):
        return ("dict", frozenset((_value(k), _value(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_value(x) for x in v))
    if isinstance(v, (set, frozenset)):
        return ("set", frozenset(_value(x) for x in v))
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, float) and v != v:
        return ("nan", type(v))
    hash(v)
    return (type(v), v)


def _big(v: Any) -> Any:
    """A large collection: by content when it holds plain numbers and strings only (index lists,
    block keys), else equal only to itself (not read item by item)."""
    items = v.items() if isinstance(v, dict) else v
    if isinstance(v, dict) or {type(x) for x in items} - _PLAIN:
        return (type(v).__name__, id(v))
    return (type(v).__name__, frozenset(v) if isinstance(v, (set, frozenset)) else tuple(v))


_ATOMS = frozenset({int, str, type(None)})  # returned as they are (a bool is not: True == 1)
_PLAIN = _ATOMS | {tuple}  # what a large collection may hold to be compared by content


def content(node: Expr) -> Any:
    """What a node computes from its children, as a hashable value: its class and declared
    parameters (``dag.Operands``; None: not comparable). Valid while the objects it names by
    identity (large tables) are alive: never stored."""
    try:
        return (type(node), _value(node.params))
    except TypeError:  # an unhashable field: the node is only equal to itself
        return None


def same_work(old: Expr, new: Expr) -> Expr:
    """``new``, which computes what ``old`` does (``old`` rebuilt over simplified inputs, or
    rewritten by an exact rule), given ``old``'s content token if it has none: merging by
    tokens stays exact, and ``content`` is computed only for the nodes rules make inside."""
    token = old.__dict__.get(TOKEN)
    if token is not None and TOKEN not in new.__dict__:
        new.__dict__[TOKEN] = token
    return new


class Merger:
    """Finds, for each node settled, an equal one settled before: by content token where the
    array layer named them (``dag.TOKEN``: a digest of the node and everything below it, what
    equal array names rest on), else by ``content`` among the nodes of its class over the same
    (merged) children. A content is computed only when such a node is there to compare: most
    nodes a rule makes have no twin. Valid while the nodes it was given are alive."""

    def __init__(self) -> None:
        self.by_token: dict[Any, Expr] = {}
        self.by_kids: dict[tuple, list[Expr]] = {}
        self.contents: dict[int, Any] = {}

    def kept(self, node: Expr) -> Expr:
        """The node settled before that equals ``node`` (over its children, already merged),
        else ``node``, now settled."""
        token = node.__dict__.get(TOKEN)
        if token is not None:
            return self.by_token.setdefault(token, node)
        bucket = self.by_kids.setdefault((type(node), tuple(map(id, node.children))), [])
        if bucket:
            own = self._content(node)
            if own is not None:
                for other in bucket:
                    if self._content(other) == own:
                        return other
        bucket.append(node)
        return node

    def _content(self, node: Expr) -> Any:
        if id(node) not in self.contents:
            self.contents[id(node)] = content(node)
        return self.contents[id(node)]


def common_subexpressions(exprs: tuple[Expr, ...], readers: Counter | None = None) -> tuple[Expr, ...]:
    """``exprs`` with nodes that compute the same thing from the same inputs merged into one
    (``Merger``); ``readers`` (id -> count) gets, for each node of the merged DAG, the operators
    reading it."""
    done: dict[int, Expr] = {}
    counted: set[int] = set()
    merger = Merger()
    for node in walk_many(exprs):  # children first
        kids = tuple(done[id(c)] for c in node.children)
        same = all(k is c for k, c in zip(kids, node.children))
        found = done[id(node)] = merger.kept(node if same else same_work(node, with_children(node, kids)))
        if readers is not None and id(found) not in counted:
            counted.add(id(found))
            readers.update(id(c) for c in found.children)
    return tuple(done[id(e)] for e in exprs)


# ---------------------------------------------------------------- the driver


ROUNDS = 3  # passes at most: a pass that cuts shared results, or makes nodes equal, gives the next more to move


def simplify(exprs: Iterable[Expr], rules: tuple[Rule, ...] = RULES) -> tuple[Expr, ...]:
    """The expressions rewritten by ``rules`` until none fires, with common sub-expressions
    merged before and as the rewritten nodes settle; then, where every reader of a shared
    result filters it, the result is cut to the box of blocks they keep (``_cut_shared``) and
    the pass runs again, as it does when the rewrites made nodes equal (two slices of ``x``
    reached by two paths). Each result has its expression's exact type."""
    exprs = tuple(exprs)
    try:
        for _ in range(ROUNDS):
            merged: list = []
            exprs = _simplify_once(exprs, rules, merged)
            cut = _cut_shared(exprs)
            if cut is None and not merged:
                break
            exprs = exprs if cut is None else cut
        return exprs
    finally:
        _seen.clear()  # it keeps kernels alive (their index arrays too): only while simplifying


def _cut_shared(exprs: tuple[Expr, ...]) -> tuple[Expr, ...] | None:
    """Where a computed result is read by several operators, all Filters (a slice of ``x + x.T``
    reads ``x`` twice): the result cut to the box of blocks its readers keep, each dim's kept
    blocks renumbered (``keep_blocks``: the next pass moves that pair below the result) and
    numbered back, so each reader filters what it did. None when there is no such result."""
    order = walk_many(exprs)
    if not any(isinstance(n, tra.Filter) for n in order):
        return None
    readers: dict[int, list] = {}
    for node in order:
        for c in node.children:
            readers.setdefault(id(c), []).append(node)
    roots = {id(e) for e in exprs}
    read: dict[int, Expr] = {}  # id -> what its readers now read (it rebuilt, maybe cut)
    changed = False
    for node in order:  # children first
        kids = tuple(read[id(c)] for c in node.children)
        new = node if all(k is c for k, c in zip(kids, node.children)) else same_work(node, with_children(node, kids))
        users = readers.get(id(node), ())
        if len(users) > 1 and node.children and id(node) not in roots and all(isinstance(u, tra.Filter) for u in users):
            cut = _box_cut(new, users)
            changed = changed or cut is not new
            new = cut
        read[id(node)] = new
    out = tuple(read[id(e)] for e in exprs)
    return out if changed and all(o.type.same_as(e.type) for o, e in zip(out, exprs)) else None


def _box_cut(node: Expr, filters: list) -> Expr:
    """``node`` keeping the box of blocks the ``filters`` keep (their types hold those keys),
    numbered as before; ``node`` itself when the box is all of it."""
    t = node.type
    box = [sorted({k[d] for f in filters for k in f.type.iter_keys()}) for d in range(t.key_arity)]
    cut_dims = [d for d, b in enumerate(box) if len(b) < t.frontier[d]]
    if not cut_dims or any(not b for b in box):
        return node
    for d in cut_dims:
        node = keep_blocks(node, d, box[d])
    for d in cut_dims:
        node = tra.ReKey(node, KeyMap.renumbering(d, dict(enumerate(box[d])), t.key_arity))
    return node


def _simplify_once(exprs: tuple[Expr, ...], rules: tuple[Rule, ...], merged: list) -> tuple[Expr, ...]:
    """One pass of ``rules`` over the merged DAG; ``merged`` gets the nodes that the rewrites
    made equal (the next pass may move more through them). A node is merged with an equal one
    as it is settled (``Merger``), so what reads it is built over the one kept."""
    readers: Counter = Counter()  # id -> operators (and roots) reading it
    exprs = common_subexpressions(tuple(exprs), readers)
    merger = Merger()  # the nodes settled by this pass (a rewrite keeps the token of the node it replaced)
    readers.update(id(e) for e in exprs)
    made: list[Expr] = []  # every node built here, alive so that no id is reused
    done: dict[int, Expr] = {}  # id -> the node simplified (a simplified node maps to itself)
    redirect: dict[int, Expr] = {}  # a node a rule rewrote -> its rewrite (simplified next)

    def sole(node: Expr) -> bool:
        return readers[id(node)] == 1

    def replaced(cur: Expr, new: Expr) -> None:
        """Reader counts after ``cur`` gives way to ``new``: the nodes the rule made read their
        children; ``cur`` is gone, and so is each node below it that nothing reads any more."""
        todo, seen = [new], set()
        while todo:
            m = todo.pop()
            if id(m) in done or id(m) in seen:
                continue
            seen.add(id(m))
            made.append(m)
            readers.update(id(c) for c in m.children)
            todo.extend(m.children)
        readers[id(new)] += readers[id(cur)]
        gone = list(cur.children)
        while gone:
            c = gone.pop()
            readers[id(c)] -= 1
            if readers[id(c)] == 0:
                gone.extend(c.children)

    stack: list[Expr] = list(exprs)
    while stack:
        node = stack[-1]
        if id(node) in done:
            stack.pop()
            continue
        if id(node) in redirect:
            new = redirect[id(node)]
            if id(new) in done:
                done[id(node)] = done[id(new)]
                stack.pop()
            else:
                stack.append(new)
            continue
        todo = [c for c in node.children if id(c) not in done]
        if todo:
            stack.extend(todo)
            continue
        kids = tuple(done[id(c)] for c in node.children)
        cur = node
        if any(k is not c for k, c in zip(kids, node.children)):
            cur = same_work(node, with_children(node, kids))
            made.append(cur)
            readers[id(cur)] = readers[id(node)]
        rewrite = _first_rewrite(cur, rules, sole)
        if rewrite is None:
            kept = merger.kept(cur)
            if kept is not cur:  # made equal to a node settled before: its readers read that one
                merged.append(cur)
                readers[id(kept)] += readers[id(cur)]
            done[id(node)] = done[id(cur)] = kept
            stack.pop()
        else:
            replaced(cur, same_work(cur, rewrite))
            redirect[id(node)] = rewrite
    return tuple(done[id(e)] for e in exprs)


_ON: dict[tuple[int, type], tuple] = {}  # (id(rules), class) -> (rules, the rules for that class)


def _rules_on(rules: tuple[Rule, ...], cls: type) -> tuple[Rule, ...]:
    """The rules that apply to nodes of class ``cls``, in order (looked up by the tuple's
    identity: hashing it would hash every rule)."""
    found = _ON.get((id(rules), cls))
    if found is None or found[0] is not rules:
        if len(_ON) > 256:
            _ON.clear()
        found = _ON[(id(rules), cls)] = (rules, tuple(r for r in rules if issubclass(cls, r.on)))
    return found[1]


def _first_rewrite(node: Expr, rules: tuple[Rule, ...], sole: Sole) -> Expr | None:
    """The first rule's rewrite of ``node`` that keeps its type exactly, or None."""
    for rule in _rules_on(rules, type(node)):
        try:
            new = rule.apply(node, sole)
        except TRAError:  # the rewritten operator is not well formed (e.g. a join over holes)
            continue
        if new is not None and new.type.same_as(node.type):
            return new
    return None
