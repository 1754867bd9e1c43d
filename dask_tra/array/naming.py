"""Deterministic array names, as dask's: ``<stage>-<token>``, the token a digest of what the array
computes (its expression and the contents its inputs were made from). The same operations on the
same data give the same name, so equal arrays have equal keys (``dask.base.tokenize``, dask's
``same_keys``) and a second build of one pipeline is recognised by the scheduler.

Tokens are computed node by node, children first, and kept on the node: an operation costs the
token of its one new node, however deep the expression (a chain of 1000 operations is hashed in
linear time). An input's token is its name: sources are named from their contents (``from_array``
hashes the data, ``random`` its seed and parameters); a source whose contents cannot be named
(a file that may change, a scattered block) keeps a fresh random name, and so does every array
built on it."""

from __future__ import annotations

import hashlib
import sys
import types

import numpy as np
from dask.base import tokenize

from ..optimizer.cache import type_token
from ..tra import Aggregate, Filter, ReKey, Tile
from ..tra.dag import TOKEN, cached


def _own(node) -> bytes:
    """What one node computes, besides its children: operator, parameters, type, kernel."""
    own = f"{type(node).__name__}|{node.describe()}|".encode() + type_token(node.type)
    kernel = getattr(node, "kernel", None)
    return own if kernel is None else own + b"|" + _kernel_token(kernel).encode()


_PLAIN = (int, float, complex, str, bytes, bool, type(None), np.generic, np.dtype)


def _kernel_token(kernel) -> str:
    """A kernel's token: what ``_norm`` writes of it, hashed. dask's own ``tokenize`` of a
    kernel pickles the whole object (~50 us a node); this reads its fields."""
    return hashlib.blake2b(_norm(kernel, 0).encode(), digest_size=16).hexdigest()


def _norm(v, depth: int) -> str:
    """An exact text of ``v``: numbers, strings and dtypes by ``repr``; NumPy's own ufuncs by
    name; sequences and dicts item by item; dask_tra's objects (kernels, key maps, bound
    functions) by their class and fields, as they compare; anything else (a RelArray, which
    names itself; functions, by content) by dask's ``tokenize``."""
    if isinstance(v, np.dtype) and v.fields is None:
        return f"dtype:{v.str}"  # exact (byte order, unit) and ~10x cheaper than repr
    if isinstance(v, _PLAIN):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return f"{type(v).__name__}({','.join(_norm(x, depth) for x in v)})"
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return "dict(" + ",".join(f"{k}={_norm(v[k], depth)}" for k in sorted(v)) + ")"
    if isinstance(v, np.ufunc) and getattr(np, v.__name__, None) is v:
        return f"numpy.{v.__name__}"
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)) and _importable(v):
        return f"function:{v.__module__}.{v.__qualname__}"  # as dask's pickle by reference
    cls = type(v)
    if depth < 8 and cls.__module__.startswith("dask_tra.") and not hasattr(v, "__dask_tokenize__"):
        known = _MADE.get((id(v), depth))
        if known is not None and known[0] is v:
            return known[1]
        fields = getattr(v, "__dict__", None)
        if fields is None and hasattr(cls, "__slots__"):
            fields = {k: getattr(v, k) for k in cls.__slots__ if hasattr(v, k)}
        if fields is not None:
            body = ",".join(f"{k}={_norm(fields[k], depth + 1)}" for k in sorted(fields))
            text = f"{cls.__module__}.{cls.__qualname__}({body})"
            if len(_MADE) >= _MADE_MAX:
                _MADE.clear()
            _MADE[id(v), depth] = (v, text)  # the object kept: its id is not reused while it is here
            return text
    return "token:" + tokenize(v)


# the text of dask_tra objects (kernels and their parts, immutable) already written, by object
# and depth (the text depends on it): shared parts (an ``Op``, a key map) are read once
_MADE: dict[tuple[int, int], tuple[object, str]] = {}
_MADE_MAX = 4096


def _importable(fn) -> bool:
    """Whether ``fn`` is the object its module and qualified name lead to, outside ``__main__``
    (where a redefinition keeps the name): then the name says which function it is."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if module in (None, "__main__") or "<" in qualname:
        return False
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj is fn


def expr_token(expr) -> str:
    """The node's token (and every new node's below it), iteratively; shared nodes once."""
    return cached(expr, TOKEN, _token)


def _token(node, child_tokens: list) -> str:
    h = hashlib.blake2b(_own(node), digest_size=16)
    for token in child_tokens:
        h.update(token.encode())
    return h.hexdigest()


_PLUMBING = (ReKey, Filter, Tile, Aggregate)
_RESHAPES = ("reshape", "squeeze")


def _stage(expr) -> str:
    """A short name for the last operation (letters and hyphens, as dask's key prefixes): the
    first node down the first-child chain that is not relabelling, a reshape or an Aggregate
    (``sum`` for a sum, ``matmul`` for a product), within a few steps."""
    for _ in range(8):
        kernel_name = getattr(getattr(expr, "kernel", None), "name", "")
        if expr.children and (isinstance(expr, _PLUMBING) or kernel_name in _RESHAPES):
            expr = expr.children[0]
        else:
            break
    if not expr.children:
        return expr.name.rsplit("-", 1)[0]
    kernel = getattr(expr, "kernel", None)
    word = getattr(kernel, "name", None) or getattr(expr, "label", None) or type(expr).__name__
    word = "".join(ch if ch.isalpha() else "-" for ch in str(word).lower()).strip("-")
    return "-".join(p for p in word.split("-") if p)[:40] or type(expr).__name__.lower()


def array_name(expr) -> str:
    """``<stage>-<token>``: the last operation (an input's kind) and the token. An array that is
    one input is not named as the input itself: its result keys (a persisted copy, say) must
    never be the keys the input's own blocks are made under."""
    return f"{_stage(expr)}-{expr_token(expr)[:32]}"
