"""IA plan -> Dask graph: one HighLevelGraph layer per plan stage, every task pinned to its site.

A task exists for each computed chunk (an input block, a local join or map at a site, a
local aggregation of several chunks) and for each chunk a Broadcast or Shuffle carries
to a site that does not hold it yet (an identity task pinned at the destination, so the
move shows in the dashboard as ``tra-bcast`` / ``tra-shuffle`` and is exactly one
transfer). Pure re-labelling (ReKey, insertDim, filters, one-member aggregation) makes no
task: consumers read the origin's key.

Layer names are ``tra-<stage>-<token>``; stages are alphabetic and hyphenated so the
dashboard groups tasks by stage (``key_split``).
"""
from __future__ import annotations

import re

from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.task_spec import Alias, DataNode, Task, TaskRef

from ..ia.nodes import Broadcast, LocalAggregate, LocalFilter, LocalJoin, LocalMap, Placed, Shuffle
from ..tra.expr import Concat, Tile
from .sources import Ref, is_future


class Pins:
    """Layer annotation value: key -> [worker address] (callable, as dask expects)."""

    def __init__(self, mapping):
        self.mapping = mapping

    def __call__(self, key):
        return self.mapping.get(key)


def stage_name(node) -> str:
    if isinstance(node, Placed):
        return "input-" + re.sub(r"[^a-z]+", "-", node.input.name.split("-")[0].lower()).strip("-")
    if isinstance(node, LocalJoin):
        return "localjoin-" + _alpha(node.op.kernel.name)
    if isinstance(node, LocalAggregate):
        return "localagg-" + ("concat" if isinstance(node.op, Concat) else _alpha(node.op.kernel.name))
    if isinstance(node, LocalMap):
        return "localmap-" + _alpha(getattr(node.op, "kernel", None).name if hasattr(node.op, "kernel") else "tile")
    return node.kind


def _alpha(name: str) -> str:
    words = re.findall(r"[a-z]+", name.lower())
    return "-".join(words) or "op"


def emit(plan, sources: dict, workers, token: str, output_name: str):
    """Build the graph. ``workers[site]`` is the address pinning site's tasks (None: no pins).

    Returns (HighLevelGraph, output key per relation key).
    """
    avail = {}  # (origin, site) -> dask key holding that chunk on that site
    home = {}  # origin -> the dask key that computed it
    layer_of = {}  # dask key -> layer name
    layers = {}
    external = {}
    for src in sources.values():
        if src.graph:
            external.update(src.graph)
    ext_name = f"tra-external-{token}"
    for k in external:
        layer_of[k] = ext_name
    ext_pins = {}  # referenced external keys (lazy dask.array blocks) -> the site that reads them
    walk = plan.walk()
    moved = {o for n in walk if isinstance(n, (Broadcast, Shuffle)) for cs in n.copies.values() for _, o in cs}
    fused = _fusable_joins(walk)
    direct = len(plan.copies) == sum(len(cs) for cs in plan.copies.values())  # one copy per key
    for node in walk:
        if node.uid in fused:
            continue  # computed inside the local aggregation that consumes it
        name = f"tra-{stage_name(node)}-{token}-{node.uid}"
        if node.uid in fused.values():
            name = f"tra-{stage_name(node.child)}-{stage_name(node)[len('localagg-'):]}-{token}-{node.uid}"
        if node is plan and direct:
            name = output_name  # the collection's layer (``__dask_layers__``) holds its output keys
        tasks, pins = {}, {}
        for key, copies in node.copies.items():
            for site, origin in copies:
                if (origin, site) in avail:
                    continue
                dk = (name,) + tuple(key) + (site,)
                if isinstance(node, (Broadcast, Shuffle)):  # partials of one key may meet at a site
                    dk += (origin[2],)
                if node is plan and direct:
                    dk = (output_name,) + tuple(key)
                if node.uid in fused.values():
                    spec = _fused_task(node, key, site, avail, dk)
                else:
                    spec = _task(node, key, site, origin, avail, home, sources, dk)
                if isinstance(spec, Alias) and spec.target in external and not is_future(external[spec.target]):
                    ext_pins.setdefault(spec.target, site)
                if spec is None:  # a pure relabel: the origin's key already holds it here
                    continue
                tasks[dk] = spec
                pins[dk] = site
                avail[(origin, site)] = dk
                if origin not in home:
                    home[origin] = dk
                    if origin in moved and not isinstance(node, (Broadcast, Shuffle)):
                        # local consumers read a pinned copy: replicas made by the moves let
                        # dask's memory manager drop the original here before they run
                        keep = (f"tra-keep-{token}-{node.uid}",) + dk[1:]
                        tasks[keep] = Task(keep, _identity, TaskRef(dk))
                        pins[keep] = site
                        avail[(origin, site)] = keep
        if tasks:
            layers[name] = (tasks, pins)
            for dk in tasks:
                layer_of[dk] = name
    outputs, out_pins, out_keys = {}, {}, {}
    for key, copies in plan.copies.items():
        site, origin = copies[0]
        ok = (output_name,) + tuple(key)
        out_keys[key] = ok
        if avail[(origin, site)] != ok:  # the result was made earlier (or sits on several sites)
            outputs[ok] = Alias(ok, avail[(origin, site)])
            out_pins[ok] = site
    if outputs:
        tasks, pins = layers.setdefault(output_name, ({}, {}))
        tasks.update(outputs)
        pins.update(out_pins)
    _drop_unread_keeps(layers)
    return _graph(layers, layer_of, external, ext_pins, ext_name, workers), out_keys


def _drop_unread_keeps(layers):
    """A keep copy nobody reads would be culled by dask anyway; leave it out of the plan's graph."""
    read = {d for tasks, _ in layers.values() for t in tasks.values() for d in t.dependencies}
    for tasks, pins in layers.values():
        for k in [k for k in tasks if k[0].startswith("tra-keep-") and k not in read]:
            del tasks[k], pins[k]


def _graph(layers, layer_of, external, ext_pins, ext_name, workers):
    """HighLevelGraph with exact layer dependencies and per-task worker pins.

    Of a wrapped dask.array's graph, the blocks the plan reads are pinned where it reads
    them (so they are made there); the tasks behind them are left to the scheduler.
    """
    hl, deps = {}, {}
    if external:
        annotations = None
        if workers is not None and ext_pins:
            annotations = {"workers": Pins({k: [workers[s]] for k, s in ext_pins.items()}),
                           "allow_other_workers": Pins({k: k not in ext_pins for k in external})}
        hl[ext_name] = MaterializedLayer(dict(external), annotations=annotations)
        deps[ext_name] = set()
    for name, (tasks, pins) in layers.items():
        annotations = None
        if workers is not None:
            annotations = {"workers": Pins({k: [workers[s]] for k, s in pins.items()}),
                           "allow_other_workers": False}  # strict: loose pins get stolen (see faults.py)
        hl[name] = MaterializedLayer(tasks, annotations=annotations)
        deps[name] = {layer_of[d] for t in tasks.values() for d in t.dependencies if d in layer_of} - {name}
    return HighLevelGraph(hl, deps)


def _ref(avail, origin, site):
    return TaskRef(avail[(origin, site)])


def _task(node, key, site, origin, avail, home, sources, dk):
    if isinstance(node, Placed):
        spec = sources[node.input.name].task(key)
        if isinstance(spec, Ref):
            return Alias(dk, spec.key)
        fn, *args = spec
        if len(args) == 1 and not callable(args[0]) and fn.__name__ == "_identity":
            return DataNode(dk, args[0])
        return Task(dk, fn, *args)
    if isinstance(node, (Broadcast, Shuffle)):
        return Task(dk, _identity, TaskRef(home[origin]))
    if isinstance(node, LocalFilter) or (isinstance(node, LocalMap) and node.pure_copy):
        src_key = node.source(key) if isinstance(node, LocalMap) else key
        avail[(origin, site)] = avail[(_origin_at(node.child, src_key, site), site)]
        return None
    if isinstance(node, LocalJoin):
        lk, rk = node.sources(key, site)
        l = _ref(avail, _origin_at(node.left, lk, site), site)
        r = _ref(avail, _origin_at(node.right, rk, site), site)
        return Task(dk, node.op.kernel, l, r)
    if isinstance(node, LocalAggregate):
        members = node.members[(key, site)]
        if len(members) == 1 and not isinstance(node.op, Concat):
            return None
        refs = [_ref(avail, o, site) for _, o in members]
        if isinstance(node.op, Concat):
            order = sorted(range(len(members)), key=lambda i: members[i][0][node.op.key_dim])
            return Task(dk, _concat, node.op.array_dim, *(refs[i] for i in order))
        return Task(dk, _fold, node.op.kernel, *refs)
    if isinstance(node, LocalMap):
        src = _ref(avail, _origin_at(node.child, node.source(key), site), site)
        op = node.op
        if isinstance(op, Tile):
            return Task(dk, _tile, src, op.tile_dim, op.tile_size, key[-1])
        return Task(dk, op.kernel, src)
    raise TypeError(f"cannot emit {node!r}")


def _fusable_joins(walk) -> dict:
    """{LocalJoin uid: LocalAggregate uid} for joins whose only consumer folds them with an
    aggregation kernel: one task per group and site then computes fold(kernel(l, r), ...)."""
    consumers = {}
    for n in walk:
        for c in n.children:
            consumers.setdefault(c.uid, []).append(n)
    out = {}
    for n in walk:
        users = consumers.get(n.uid, [])
        if isinstance(n, LocalJoin) and len(users) == 1 and isinstance(users[0], LocalAggregate) \
                and not isinstance(users[0].op, Concat):
            out[n.uid] = users[0].uid
    return out


def _fused_task(agg, key, site, avail, dk):
    join = agg.child
    args = []
    for jkey, _ in agg.members[(key, site)]:
        lk, rk = join.sources(jkey, site)
        args += [_ref(avail, _origin_at(join.left, lk, site), site),
                 _ref(avail, _origin_at(join.right, rk, site), site)]
    return Task(dk, _join_fold, join.op.kernel, agg.op.kernel, *args)


def _join_fold(join_kernel, agg_kernel, *pairs):
    acc = join_kernel(pairs[0], pairs[1])
    for i in range(2, len(pairs), 2):
        acc = agg_kernel(acc, join_kernel(pairs[i], pairs[i + 1]))
    return acc


def _origin_at(node, key, site):
    for s, o in node.copies[key]:
        if s == site:
            return o
    raise KeyError((key, site))


def _identity(x):
    return x


def _fold(kernel, *chunks):
    acc = chunks[0]
    for c in chunks[1:]:
        acc = kernel(acc, c)
    return acc


def _concat(axis, *chunks):
    from ..tra.kernels import namespace
    return namespace(*chunks).concat(chunks, axis=axis)


def _tile(chunk, dim, size, t):
    index = [slice(None)] * chunk.ndim
    index[dim] = slice(t * size, (t + 1) * size)
    return chunk[tuple(index)]


__all__ = ["emit", "Pins", "stage_name"]
