"""Contractions: einsum (and through it matmul, dot, tensordot, outer, inner, vecdot).

Each operand's letters are its key dims. Per operand first: a letter of extent 1 broadcast
against a longer one is squeezed out (reshape); a letter repeated inside one operand takes
the diagonal: ``Filter`` (equal block keys), ``ReKey`` (drop the copies), ``Transform``
(chunk diagonal). Letters shared by operands are rechunked alike. Then operands are
contracted pairwise (left to right, or along NumPy's greedy path for 3+ operands):

    Join(shared letters' key dims, einsum kernel)   -- the chunk kernel also sums, inside
                                                       each chunk, letters no longer needed
    Aggregate(kept letters' key dims, add)          -- sums those letters across blocks

A 2-D matrix product uses the ``matmul`` kernel, so the optimizer sees its classic form.
With ``combine``/``aggregate`` (EinDecomp's extended einsum, two operands) the kernel
combines with ``combine`` and both the kernel and the Aggregate fold with ``aggregate``.
"""

from __future__ import annotations

import string

import numpy as np
from dask.utils import derived_from

from ..tra import Aggregate, Filter, Join, Transform
from ..tra import kernels as K
from ..tra.kernels import Bound
from ..tra.keyfuncs import KeyPred, dims_equal
from .creation import asarray
from .elementwise import conj, multiply
from .kernels import ExtendedEinsum, npx
from .rechunk import rechunk_axes
from .relations import axis_of, nbytes, rekey, wrap
from .structure import moveaxis, ravel, reshape, transpose
from .subscripts import read_subscripts

AGGREGATES = {
    "add": K.add,
    "sum": K.add,
    "multiply": K.mul,
    "prod": K.mul,
    "maximum": K.maximum,
    "max": K.maximum,
    "minimum": K.minimum,
    "min": K.minimum,
}


def _multiply(a, b):
    return a * b


def _add(a, b):
    return a + b


def _subtract(a, b):
    return a - b


def _sqdiff(a, b):
    return (a - b) ** 2


def _absdiff(a, b):
    return abs(a - b)


def _maximum(a, b):
    return npx(a, b).maximum(a, b)


def _minimum(a, b):
    return npx(a, b).minimum(a, b)


COMBINES = {
    "multiply": _multiply,
    "add": _add,
    "subtract": _subtract,
    "sqdiff": _sqdiff,
    "squared_difference": _sqdiff,
    "absdiff": _absdiff,
    "absolute_difference": _absdiff,
    "maximum": _maximum,
    "minimum": _minimum,
}


def _on_values(fn, xp, a, b):
    """An Elementwise kernel's function from a function of the two values."""
    return fn(a, b)


def _dummy(a):
    return np.broadcast_to(np.zeros((), a.dtype), a.shape)


def parse(subscripts, arrays):
    """NumPy's reading of the subscripts (implicit output, ellipsis): (inputs, output, sizes)."""
    if not isinstance(subscripts, str):
        raise TypeError("einsum: subscripts must be a string (the sublist form is not supported)")
    ins, out = read_subscripts(subscripts, [a.ndim for a in arrays])
    sizes = {}
    for i, (s, a) in enumerate(zip(ins, arrays)):
        if len(s) != a.ndim:
            raise ValueError(
                f"einstein sum subscripts string contains {len(s)} indices for operand {i}, "
                f"which has {a.ndim} dimensions"
            )
        for c, n in zip(s, a.shape):
            if c in s[: s.index(c)] and sizes.get(c) != n:
                raise ValueError(
                    f"dimensions in operand {i} for collapsing index '{c}' don't match ({sizes[c]} != {n})"
                )
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(
                    f"Size of label '{c}' for operand {i} ({n}) does not match previous terms ({sizes[c]})."
                )
    return ins, out, sizes


def _kernel(name_or_fn, table, what):
    if name_or_fn is None:
        return None
    if isinstance(name_or_fn, K.Elementwise):
        return name_or_fn
    if isinstance(name_or_fn, str):
        if name_or_fn not in table:
            raise ValueError(f"einsum: unknown {what} {name_or_fn!r}; known: {sorted(table)}")
        f = table[name_or_fn]
        return f if isinstance(f, K.Elementwise) else K.Elementwise(name_or_fn, Bound(_on_values, f), 2)
    if isinstance(name_or_fn, np.ufunc) and what == "aggregate":
        return _kernel(name_or_fn.__name__, table, what)
    if callable(name_or_fn):
        name = getattr(name_or_fn, "__name__", "combine")
        name = name if name.isidentifier() else f"combine{id(name_or_fn):x}"
        return K.Elementwise(name, Bound(_on_values, name_or_fn), 2)
    raise TypeError(f"einsum: {what} must be a name, a callable or a kernel, got {type(name_or_fn).__name__}")


@derived_from(np)
def einsum(
    subscripts,
    *operands,
    dtype=None,
    optimize=None,
    combine=None,
    aggregate=None,
    out=None,
    casting="safe",
    order="K",
    split_every=None,
    **kwargs,
):
    """numpy.einsum over RelArrays; ``combine``/``aggregate`` give the extended einsum."""
    if out is not None:
        raise TypeError("einsum: out= is not supported by dask_tra arrays (they are immutable)")
    ops = [asarray(o) for o in operands]
    ins, out_s, sizes = parse(subscripts, ops)
    comb, agg = _kernel(combine, COMBINES, "combine"), _kernel(aggregate, AGGREGATES, "aggregate")
    custom = comb is not None or agg is not None
    if custom and len(ops) != 2:
        raise ValueError("einsum: combine/aggregate take exactly two operands")
    agg = agg or K.add
    if dtype is not None:
        ops = [o.astype(dtype, casting=casting) for o in ops]
    probe = [np.ones((1,) * o.ndim, o.dtype) for o in ops]
    if custom:
        res_dtype = np.asarray((comb or K.mul)(np.ones(1, ops[0].dtype), np.ones(1, ops[1].dtype))).dtype
        summed = set("".join(ins)) - set(out_s)
        if agg is not K.add and agg is not K.mul and any(sizes[c] == 0 for c in summed):
            raise ValueError(f"einsum: zero-size aggregation with {agg.name}, which has no identity")
    else:
        res_dtype = np.einsum(",".join(ins) + "->" + out_s, *probe).dtype
    terms = [_prepare(o, s, sizes) for o, s in zip(ops, ins)]
    terms = _unify(terms)
    if len(terms) == 1:
        return _single(*terms[0], out_s)
    path = [(0, 1)] * (len(terms) - 1)
    if len(terms) > 2:
        path = np.einsum_path(
            ",".join(s for _, s in terms) + "->" + out_s, *[_dummy(a) for a, _ in terms], optimize="greedy"
        )[0][1:]
    for step in path:
        picked = [terms[i] for i in step]
        terms = [t for i, t in enumerate(terms) if i not in step]
        later = set(out_s).union(*[set(s) for _, s in terms])
        if len(picked) == 1:  # sum the letters no later operand or the output needs
            a, s = picked[0]
            keep = "".join(c for c in s if c in later)
            terms.append((_single(a, s, keep), keep))
            continue
        while len(picked) > 1:  # a step may name several operands: contract them pairwise
            rest = picked[2:]
            needed = later.union(*[set(s) for _, s in rest])
            final = not terms and not rest
            picked = [_pair(picked[0], picked[1], out_s if final else None, needed, comb, agg, res_dtype)] + rest
        terms.append(picked[0])
    a, s = terms[0]
    return _single(a, s, out_s)


def _prepare(a, s, sizes):
    """Squeeze broadcast (extent-1) letters, take diagonals of repeated ones."""
    drop = [d for d, c in enumerate(s) if a.shape[d] == 1 and sizes[c] != 1]
    if drop:
        a = reshape(a, tuple(n for d, n in enumerate(a.shape) if d not in drop))
        s = "".join(c for d, c in enumerate(s) if d not in drop)
    if len(set(s)) == len(s):
        return a, s
    first = {c: s.index(c) for c in s}
    r = rechunk_axes(a, {d: a.chunks[first[c]] for d, c in enumerate(s)})
    a = wrap(r.expr, a, extra=r.sources)
    pairs = [(d, first[c]) for d, c in enumerate(s) if first[c] != d]
    pred = KeyPred(Bound(dims_equal, tuple(pairs)), f"isEq{pairs}", frozenset(x for p in pairs for x in p))
    uniq = "".join(dict.fromkeys(s))
    expr = rekey(Filter(a.expr, pred), [first[c] for c in uniq])
    return wrap(Transform(expr, K.Einsum(f"{s}->{uniq}")), a), uniq


def _unify(terms):
    """Rechunk so that a letter is chunked alike in every operand (like its largest operand)."""
    target = {}
    for a, s in sorted(terms, key=lambda t: nbytes(t[0]), reverse=True):
        for c, ch in zip(s, a.chunks):
            target.setdefault(c, ch)
    out = []
    for a, s in terms:
        if all(a.chunks[d] == tuple(target[c]) for d, c in enumerate(s)):
            out.append((a, s))  # as it is (a block-sparse operand stays block-sparse)
            continue
        r = rechunk_axes(a, {d: target[c] for d, c in enumerate(s)})
        out.append((wrap(r.expr, a, extra=r.sources), s))
    return out


def _single(a, s, out_s):
    """One operand: sum the letters not in ``out_s``, order the rest as ``out_s``."""
    if len(set(out_s) - set(s)):
        raise ValueError(f"einsum: output letters {out_s!r} not all in operand {s!r}")
    if all(c in out_s for c in s):
        return transpose(a, [s.index(c) for c in out_s])
    expr = Transform(a.sparse_expr, K.Einsum(f"{s}->{out_s}"))  # linear, summed: skips missing blocks
    return wrap(Aggregate(expr, [s.index(c) for c in out_s], K.add), a)


def _pair(left, right, out_s, later, comb, agg, dtype):
    """Join two operands on their shared letters; sum the letters not needed ``later``."""
    (a, sa), (b, sb) = left, right
    shared = [c for c in sa if c in sb]
    joined = sa + "".join(c for c in sb if c not in sa)
    kept = out_s if out_s is not None else "".join(c for c in joined if c in later)
    subs = f"{sa},{sb}->{kept}"
    if comb is not None or agg is not K.add:
        kernel = ExtendedEinsum(subs, comb or K.mul, agg, dtype)
    elif len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0] and kept == sa[0] + sb[1] and len(set(kept + sa[1])) == 3:
        kernel = K.matmul
    else:
        kernel = K.Einsum(subs)
    # a missing block joins to nothing when the product of zeros is zero and partials are summed
    skip = kernel.annihilates and agg.zero_identity
    ea, eb = (a.sparse_expr, b.sparse_expr) if skip else (a.expr, b.expr)
    expr = Join(ea, eb, [sa.index(c) for c in shared], [sb.index(c) for c in shared], kernel)
    if len(kept) < len(joined):
        expr = Aggregate(expr, [joined.index(c) for c in kept], agg)
    else:
        expr = rekey(expr, [joined.index(c) for c in kept])
    return wrap(expr, a, b), kept


# ---------------------------------------------------------------- NumPy's contraction functions

LETTERS = string.ascii_letters


@derived_from(np)
def tensordot(a, b, axes=2):
    a, b = asarray(a), asarray(b)
    if np.ndim(axes) == 0:
        n = int(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise ValueError("shape-mismatch for sum")
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        ax_a, ax_b = ([x] if np.ndim(x) == 0 else list(x) for x in axes)
    ax_a = [axis_of(x, a.ndim) for x in ax_a]
    ax_b = [axis_of(x, b.ndim) for x in ax_b]
    if len(ax_a) != len(ax_b) or any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
        raise ValueError("shape-mismatch for sum")
    la = LETTERS[: a.ndim]
    lb = list(LETTERS[a.ndim : a.ndim + b.ndim])
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    lb = "".join(lb)
    out = "".join(c for d, c in enumerate(la) if d not in ax_a) + "".join(c for d, c in enumerate(lb) if d not in ax_b)
    return einsum(f"{la},{lb}->{out}", a, b)


@derived_from(np)
def matmul(a, b, out=None, **kwargs):
    if out is not None:
        raise TypeError("matmul: out= is not supported by dask_tra arrays (they are immutable)")
    a, b = asarray(a), asarray(b)
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(
                f"matmul: Input operand {i} does not have enough dimensions (has 0, gufunc core "
                f"with signature (n?,k),(k,m?)->(n?,m?) requires 1)"
            )
    ka, kb = a.shape[-1], b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n?,k),(k,m?)->(n?,m?) (size {kb} is different from {ka})"
        )
    np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    sa = "...ik" if a.ndim > 1 else "k"
    sb = "...kj" if b.ndim > 1 else "k"
    out_s = ("..." if max(a.ndim, b.ndim) > 2 else "") + ("i" if a.ndim > 1 else "") + ("j" if b.ndim > 1 else "")
    return einsum(f"{sa},{sb}->{out_s}", a, b)


@derived_from(np)
def dot(a, b, out=None):
    if out is not None:
        raise TypeError("dot: out= is not supported by dask_tra arrays (they are immutable)")
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if a.shape[-1] != kb:
        raise ValueError(
            f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != "
            f"{kb} (dim {max(b.ndim - 2, 0)})"
        )
    la = LETTERS[: a.ndim - 1] + "z"
    lb = LETTERS[26 : 26 + b.ndim - 2] + "z" + ("Z" if b.ndim > 1 else "")
    out = la[:-1] + lb.replace("z", "")
    return einsum(f"{la},{lb}->{out}", a, b)


@derived_from(np)
def inner(a, b):
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    la, lb = LETTERS[: a.ndim - 1] + "z", LETTERS[26 : 26 + b.ndim - 1] + "z"
    return einsum(f"{la},{lb}->{la[:-1] + lb[:-1]}", a, b)


@derived_from(np)
def outer(a, b):
    return einsum("i,j->ij", ravel(asarray(a)), ravel(asarray(b)))


@derived_from(np)
def vecdot(x1, x2, /, *, axis=-1):
    x1, x2 = asarray(x1), asarray(x2)
    n = max(x1.ndim, x2.ndim)
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"vecdot: x1 and x2 differ in size along axis {axis} ({x1.shape[axis]} != {x2.shape[axis]})")
    x1, x2 = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    if x1.dtype.kind == "c":
        x1 = conj(x1)
    return einsum("...i,...i->...", x1, x2) if n else multiply(x1, x2)


__all__ = ["einsum", "tensordot", "matmul", "dot", "inner", "outer", "vecdot"]
