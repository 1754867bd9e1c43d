"""Jupyter display of a RelArray: dask.array's table and chunk grid, plus the TRA operators
pending in its expression (by kind)."""

from __future__ import annotations

import html
import math
from collections import Counter

from .. import backends


def pending(x) -> Counter:
    """TRA operators in ``x.expr`` by kind (leaves are inputs, not operators)."""
    return Counter(type(n).__name__ for n in x.expr.walk() if n.children)


def repr_html(x) -> str:
    from dask.utils import format_bytes

    try:
        from dask.array.svg import svg

        grid = svg(x.chunks, size=120) if x.ndim else ""
    except (NotImplementedError, ValueError, ZeroDivisionError):
        grid = ""
    chunksize = tuple(max(c) if c else 0 for c in x.chunks)
    ops = pending(x)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(ops.items()))
    rows = [("Shape", str(x.shape), str(chunksize))]
    if backends.get(x.expr.type.backend).dense:  # a sparse chunk's bytes are not known (dask omits them)
        rows.insert(0, ("Bytes", format_bytes(x.nbytes), format_bytes(math.prod(chunksize) * x.dtype.itemsize)))
    meta = type(x._meta)
    body = "".join(f"<tr><th> {h} </th><td> {a} </td><td> {c} </td></tr>" for h, a, c in rows)
    body += (
        f'<tr><th> Chunk grid </th><td colspan="2"> {x.npartitions} chunks in '
        f"{x.numblocks} blocks </td></tr>"
        f'<tr><th> TRA operators </th><td colspan="2"> {sum(ops.values())} pending'
        f"{' (' + html.escape(kinds) + ')' if kinds else ''} </td></tr>"
        f'<tr><th> Data type </th><td colspan="2"> {x.dtype} {meta.__module__.split(".")[0]}.{meta.__name__} </td></tr>'
    )
    table = (
        '<table style="border-collapse: collapse;"><thead><tr><td> </td><th> RelArray </th>'
        f"<th> Chunk </th></tr></thead><tbody>{body}</tbody></table>"
    )
    return f"<table><tr><td>{table}</td><td>{grid}</td></tr></table>"


__all__ = ["repr_html", "pending"]
