"""Several RelArrays planned and computed as ONE computation (loss and gradients together).

``Joint(a, b, ...)`` hands the optimizer every array's expression as one multi-root DAG
(``optimizer.plan_many``): a node they share (the forward pass, which a gradient reads) is
planned once and computed once, and the plan is emitted as one Dask graph holding each
output's blocks under its own key prefix (``emit`` with several roots).

Reuse: the optimizer's search keeps up to ``keep`` layouts per node and lets every
consumer pick its own, so a node read by several consumers (a forward intermediate read
by the backward pass) may be computed once per layout: its cost model counts bytes moved,
and recomputation moves none. ``Joint`` (``reuse=True``, the default) resolves every such
node to ONE of its layouts (``plan_many``'s ``one_layout``), which all consumers then read,
moving it where they need it: each forward intermediate is computed once.
"""

from __future__ import annotations

from ..runtime.collection import DaskCollection
from ..runtime.sources import fresh_name
from .core import RelArray
from .planview import explain_of


class Joint(DaskCollection):
    """A Dask collection of several RelArrays computed by one plan.

    Their expressions are planned together, so nodes they share are computed once.
    ``dask.compute(Joint(loss, g1, g2))`` (or ``.compute()``) returns a tuple of NumPy arrays;
    ``.persist()`` a tuple of persisted RelArrays; ``.explain()`` the plan.

    Parameters
    ----------
    *arrays : RelArray
        The arrays (at least one).
    reuse : bool, optional
        Compute every shared node in one layout (default True).

    Raises
    ------
    ValueError
        No array is given.
    TypeError
        An argument is not a RelArray.

    See Also
    --------
    compute, persist

    Examples
    --------
    >>> x = da.arange(4, chunks=2)
    >>> da.Joint(x.sum(), (x * 2).sum()).compute()
    (np.int64(6), np.int64(12))
    """

    def __init__(self, *arrays, reuse=True):
        if not arrays:
            raise ValueError("Joint needs at least one RelArray")
        for i, a in enumerate(arrays):
            if not isinstance(a, RelArray):
                raise TypeError(f"Joint: argument {i} is a {type(a).__name__}, not a RelArray")
        self.one_layout = reuse
        self.arrays = tuple(arrays)
        self.sources = {}
        for a in arrays:
            self.sources.update(a.sources)
        self.name = fresh_name("tra-joint")
        self.chunks = ()
        self._plans = {}
        self._last_entry = None

    @property
    def roots(self) -> tuple:
        return tuple(a.sparse_expr for a in self.arrays)

    @property
    def output_names(self) -> tuple:
        """Each array's own name: its blocks keep the keys they have when it is computed alone
        (a block-sparse array's held blocks only)."""
        return tuple(a.name for a in self.arrays)

    @property
    def array_type(self) -> type:
        return RelArray

    def _persisted_futures(self):
        return None  # each output is planned; a persisted one is read by its futures' keys

    def explain(self, sites=None, detail=None, full=None):
        """The report of the one plan computing every output (with the bytes its graph moves,
        once the graph was built); ``detail="algebra"``: in the algebra's terms, ``full``: every
        step (``Explain.view``)."""
        return explain_of(self, sites, detail, full)

    def __dask_keys__(self):
        return [a.__dask_keys__() for a in self.arrays]

    def __dask_layers__(self):
        return tuple(dict.fromkeys(self.output_names))

    def _finalizer(self) -> tuple:
        return _finalize_all, (tuple(a._finalizer() for a in self.arrays),)

    def _rebuilder(self) -> tuple:
        return _rebuild_all, (tuple(a._rebuilder() for a in self.arrays),)

    def __repr__(self):
        return f"dask_tra.Joint<{len(self.arrays)} outputs: " + ", ".join(f"{a.shape}" for a in self.arrays) + ">"


def _finalize_all(results, finalizers):
    return tuple(f(r, *args) for r, (f, args) in zip(results, finalizers))


def _rebuild_all(dsk, rebuilders, rename=None):
    return tuple(f(dsk, *args) for f, args in rebuilders)


def only_arrays(args) -> bool:
    """True if ``args`` are RelArrays, or lists, tuples or dicts of them, and at least one."""
    flat = [
        v for a in args for v in (a.values() if isinstance(a, dict) else a if isinstance(a, (list, tuple)) else (a,))
    ]
    return bool(flat) and all(isinstance(v, RelArray) for v in flat)


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
    return _unflatten(Joint(*flat).compute(**kwargs), spec)


def persist(*args, **kwargs):
    """Persist RelArrays (or lists/tuples/dicts of them) in ONE plan; returns persisted
    RelArrays in the same structure. Keyword arguments go to ``dask.persist``."""
    flat, spec = _flatten(args)
    return _unflatten(Joint(*flat).persist(**kwargs), spec)


__all__ = ["Joint", "compute", "persist"]
