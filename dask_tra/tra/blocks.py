"""Between whole arrays and array relations ({key: chunk} with key dim i counting blocks on axis i)."""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from .errors import TRAError
from .relation import RelationType


def normalize_chunks(chunks: Any, shape: Sequence[int]) -> tuple:
    """dask-style chunks (an int, a tuple of ints, or explicit tuples per axis) for ``shape``."""
    if isinstance(chunks, int):
        chunks = (chunks,) * len(shape)
    if len(chunks) != len(shape):
        raise TRAError(f"chunks {chunks!r} has {len(chunks)} entries for a {len(shape)}-d shape {shape}")
    out = []
    for axis, (c, n) in enumerate(zip(chunks, shape)):
        if isinstance(c, (int, np.integer)):
            c = int(c) if c > 0 else max(n, 1)
            out.append(tuple([c] * (n // c) + ([n % c] if n % c else [])) or (0,))
        else:
            c = tuple(int(x) for x in c)
            if sum(c) != n or any(x < 0 for x in c):
                raise TRAError(f"chunks {c} on axis {axis} do not add up to its length {n}")
            out.append(c)
    return tuple(out)


def split(x: Any, chunks: Any) -> tuple[RelationType, dict]:
    """Cut an array into an array relation; returns (type, {key: chunk})."""
    chunks = normalize_chunks(chunks, x.shape)
    starts = [np.cumsum((0,) + c) for c in chunks]
    rel = {}
    for key in itertools.product(*(range(len(c)) for c in chunks)):
        index = tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, key))
        rel[key] = x[index]
    return RelationType.from_chunks(chunks, x.dtype), rel


def assemble(type_: RelationType, rel: dict) -> np.ndarray:
    """Glue an array relation back into one array."""
    chunks = type_.array_chunks()
    if chunks is None:
        raise TRAError(f"{type_!r} is not an array relation (chunk axis i must follow key dim i)")
    if not rel:
        return np.zeros(tuple(sum(c) for c in chunks), dtype=type_.dtype)
    return np.block(_nest(rel, chunks, ())) if chunks else rel[()]


def _nest(rel: dict, chunks: tuple, prefix: tuple) -> Any:
    if len(prefix) == len(chunks):
        return rel[prefix]
    return [_nest(rel, chunks, prefix + (i,)) for i in range(len(chunks[len(prefix)]))]
