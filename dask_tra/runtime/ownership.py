"""Which tasks on a shared scheduler are dask_tra's: the ones its graphs annotate; and the
per-key annotation values (``Pins``) its layers carry.

dask_tra's scheduler plugin (``plugin.py``) changes how the scheduler treats pinned tasks and
their replicas. It does so only for tasks carrying this annotation, which every layer dask_tra
emits sets; other clients' tasks, pinned or not, are left exactly as distributed treats them.
"""

from __future__ import annotations

ANNOTATION = "dask_tra"


class Pins:
    """Layer annotation value: key -> its value (a worker list, a priority), ``default`` for a
    key not in ``mapping`` (callable, as dask expects)."""

    def __init__(self, mapping, default=None):
        self.mapping, self.default = mapping, default

    def __call__(self, key):
        return self.mapping.get(key, self.default)


def mark(annotations: dict) -> dict:
    """A layer's annotations, marked as dask_tra's."""
    return {**annotations, ANNOTATION: True}


def is_ours(ts) -> bool:
    """A scheduler ``TaskState`` that dask_tra emitted."""
    return bool(ts.annotations) and ts.annotations.get(ANNOTATION) is True


def pinned_by_us(ts) -> bool:
    """dask_tra's task, strictly pinned to its workers (``allow_other_workers=False``)."""
    return bool(ts.worker_restrictions) and not ts.loose_restrictions and is_ours(ts)
