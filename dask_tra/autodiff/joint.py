"""Several RelArrays planned and computed as ONE computation (loss and gradients together).

``dask.compute(a, b)`` plans each RelArray on its own, so nodes they share (the forward
pass, which a gradient reads) are computed once per plan. ``Joint(a, b, ...)`` plans them
as one DAG instead: every output gets a per-tuple *token* (an empty chunk) and the tokens
are summed into one tuple, a synthetic root that depends on all outputs at next to no
cost. The optimizer plans that root like any expression; the plan is emitted once as one
Dask graph, and each output's blocks are aliases of the chunks its token tasks read (where
the chosen plan holds them).

Reuse: the optimizer's search keeps up to ``keep`` layouts per node and lets every
consumer pick its own, so a node read by several consumers (a forward intermediate read
by the backward pass) may be computed once per layout: its cost model counts bytes moved,
and recomputation moves none. ``Joint`` (``reuse=True``, the default) resolves every such
node to ONE of its layouts (the one giving the cheapest whole plan, see ``plan_joint``),
which all consumers then read, moving it where they need it: each forward intermediate is
computed once.
"""

from __future__ import annotations

import numpy as np

from ..array.core import RelArray
from ..dask.collection import DaskCollection, _finalize, _report_reads, current_rates
from ..dask.sources import fresh_name
from ..tra import Aggregate, Join, Transform
from ..tra import kernels as K
from .terms import GradKernel


def _token(_chunk):
    return np.zeros((), np.int8)


def _token2(a, b):
    return np.zeros((), np.int8)


def _no_axes(frontier, *in_axes):
    return ()


class Joint(DaskCollection):
    """A Dask collection of several RelArrays computed by one plan.

    ``dask.compute(Joint(loss, g1, g2))`` (or ``.compute()``) returns a tuple of NumPy arrays;
    ``.persist()`` a tuple of persisted RelArrays; ``.explain()`` the plan."""

    def __init__(self, *arrays, reuse=True):
        self.reuse = reuse
        if not arrays:
            raise ValueError("Joint needs at least one RelArray")
        for i, a in enumerate(arrays):
            if not isinstance(a, RelArray):
                raise TypeError(f"Joint: argument {i} is a {type(a).__name__}, not a RelArray")
        self.arrays = tuple(arrays)
        self._kernels = []
        root = None
        for i, a in enumerate(arrays):
            k = GradKernel(f"output{i}", _token, 1, axes=_no_axes, dtype=np.int8)
            self._kernels.append(k)
            tok = Aggregate(Transform(a.expr, k), [], K.add) if a.expr.type.key_arity else Transform(a.expr, k)
            root = (
                tok
                if root is None
                else Join(root, tok, [], [], GradKernel("outputs", _token2, 2, axes=_no_axes, dtype=np.int8))
            )
        self.expr = root
        self.sources = {}
        for a in arrays:
            self.sources.update(a.sources)
        self.name = fresh_name("tra-joint")
        self.names = tuple(f"{self.name}-out{i}" for i in range(len(arrays)))
        self.chunks = ()
        self._plans = {}
        self._last_explain = None

    def _make_plan(self, where, placements):
        """Like ``RelArray``'s plan, with shared nodes in one layout if ``reuse``."""
        from .. import config

        return plan_joint(
            self.expr,
            where.count,
            placements=placements or None,
            memory_limit=where.memory_limit,
            keep=config.get("keep"),
            force=config.get("force"),
            reuse=self.reuse,
            rates=current_rates(where),
        )

    def explain(self, sites=None):
        """The report of the one plan computing every output (with the bytes its graph moves,
        once the graph was built)."""
        if sites is None and self._last_explain is not None:
            return self._last_explain
        return self.planned(sites)[0].explain

    def __dask_graph__(self):
        """The plan emitted once; each output's blocks are aliases of the chunks its token
        tasks read (a token task per output tuple, whose one dependency is that tuple)."""
        from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
        from dask.task_spec import Alias

        entry = self._planned_entry()
        if entry.graph is None:
            graph, _, reads, moves = self._emit(entry, f"{self.name}-root", unfused_kernels=self._kernels)
            layer_of, found = {}, {i: {} for i in range(len(self.arrays))}
            index = {id(k): i for i, k in enumerate(self._kernels)}
            for name, layer in graph.layers.items():
                for dk, task in layer.items():
                    layer_of[dk] = name
                    i = index.get(id(getattr(task, "func", None)))
                    if i is not None:
                        n = self.arrays[i].ndim
                        found[i].setdefault(tuple(dk[1 : 1 + n]), next(iter(task.dependencies)))
            layers, deps = dict(graph.layers), dict(graph.dependencies)
            for i, (a, name) in enumerate(zip(self.arrays, self.names)):
                want = set(a.expr.type.iter_keys())
                if set(found[i]) != want:
                    raise RuntimeError(f"Joint: the plan's graph does not show output {i}'s blocks")
                aliases = {(name,) + k: Alias((name,) + k, src) for k, src in found[i].items()}
                layers[name] = MaterializedLayer(aliases)
                deps[name] = {layer_of[src] for src in found[i].values() if src in layer_of}
            outputs = [src for f in found.values() for src in f.values()]
            entry.emitted(HighLevelGraph(layers, deps), reads, moves.bytes(outputs))
        self._report(entry)
        _report_reads(entry.reads)
        return entry.graph

    def __dask_keys__(self):
        out = []
        for a, name in zip(self.arrays, self.names):
            numblocks = a.numblocks
            if not numblocks:
                out.append([(name,)])
                continue

            def nest(prefix, name=name, numblocks=numblocks):
                if len(prefix) == len(numblocks):
                    return (name,) + prefix
                return [nest(prefix + (i,)) for i in range(numblocks[len(prefix)])]

            out.append(nest(()))
        return out

    def __dask_layers__(self):
        return self.names

    def __dask_tokenize__(self):
        return self.name

    def __dask_postcompute__(self):
        return _finalize_all, (tuple(a.ndim for a in self.arrays),)

    def __dask_postpersist__(self):
        return _rebuild_all, (tuple(a.expr.type for a in self.arrays), self.names)

    def compute(self, **kwargs):
        import dask

        return dask.compute(self, **kwargs)[0]

    def __repr__(self):
        return (
            f"dask_tra.autodiff.Joint<{len(self.arrays)} outputs: " + ", ".join(f"{a.shape}" for a in self.arrays) + ">"
        )


def plan_joint(expr, sites, placements=None, memory_limit=None, force=None, keep=6, reuse=True, rates=None):
    """``optimizer.plan``; with ``reuse`` every TRA node is computed in ONE layout (see
    ``optimizer.plan_many``'s ``one_layout``): consumers wanting another layout move it."""
    from .. import optimizer as O

    return O.plan_many(
        (expr,),
        sites,
        placements=placements,
        memory_limit=memory_limit,
        force=force,
        keep=keep,
        rates=rates,
        one_layout=reuse,
    )


def _finalize_all(results, ndims):
    return tuple(_finalize(r, n) for r, n in zip(results, ndims))


def _rebuild_all(dsk, types, names, rename=None):
    return tuple(RelArray._from_persisted(dsk, t, n) for t, n in zip(types, names))


def _flatten(args):
    flat, spec = [], []
    for a in args:
        if isinstance(a, RelArray):
            spec.append(("one", len(flat)))
            flat.append(a)
        elif isinstance(a, dict):
            keys = list(a)
            spec.append(("dict", keys, len(flat)))
            flat.extend(a[k] for k in keys)
        elif isinstance(a, (list, tuple)):
            spec.append((type(a), len(a), len(flat)))
            flat.extend(a)
        else:
            raise TypeError(f"compute: expected RelArrays (or lists, tuples, dicts of them), got {type(a).__name__}")
    return flat, spec


def _unflatten(values, spec):
    out = []
    for s in spec:
        if s[0] == "one":
            out.append(values[s[1]])
        elif s[0] == "dict":
            keys, start = s[1], s[2]
            out.append(dict(zip(keys, values[start : start + len(keys)])))
        else:
            typ, n, start = s
            out.append(typ(values[start : start + n]))
    return tuple(out)


def compute(*args, **kwargs):
    """Compute RelArrays (or lists/tuples/dicts of them) in ONE plan; returns NumPy results
    in the same structure: ``loss, grads = compute(loss, grads)``. Keyword arguments go to
    ``dask.compute`` (e.g. ``scheduler="threads"``)."""
    flat, spec = _flatten(args)
    values = Joint(*flat).compute(**kwargs)
    out = _unflatten(values, spec)
    return out


__all__ = ["Joint", "compute"]
