"""dask_tra.array.fft: discrete Fourier transforms (``numpy.fft`` / ``dask.array.fft`` and the
Array API ``fft`` extension).

A transform along an axis needs the whole axis in one chunk: the axis is rechunked to one
block (dask raises instead) and every chunk is transformed on its site, ``Transform(fft[1])``;
the other axes keep their blocks, so the work spreads over them. n-d transforms are 1-d
transforms one axis after another (as NumPy computes them). The frequency helpers are
arange-based arrays; the shifts are rolls.
"""

from __future__ import annotations

import numpy as np
from dask.utils import derived_from

from ..tra import Transform
from ..tra.relation import ChunkAxis
from .creation import asarray
from .linalg.kernels import FieldsKernel, on_host
from .relations import axis_of, wrap

_KINDS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


def _out_dtype(kind, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    single = dtype in (np.float32, np.complex64)
    if kind in ("irfft", "hfft"):
        return np.dtype(np.float32 if single else np.float64)
    return np.dtype(np.complex64 if single else np.complex128)


class FFT(FieldsKernel):
    """``numpy.fft.<kind>`` of a chunk along ``axis`` (its whole extent) with length ``n``."""

    arity = 1

    def __init__(self, kind, n, axis, norm, dtype):
        self.kind, self.n, self.axis, self.norm = kind, int(n), int(axis), norm
        self.dtype = _out_dtype(kind, dtype)
        self.name = f"{kind}[{axis}]"

    def __call__(self, chunk):
        return on_host(self._run, chunk)

    def _run(self, chunk):
        out = getattr(np.fft, self.kind)(chunk, n=self.n, axis=self.axis, norm=self.norm)
        return out.astype(self.dtype, copy=False)

    def out_axes(self, frontier, axes):
        n = self.n // 2 + 1 if self.kind in ("rfft", "ihfft") else self.n
        out = list(axes)
        out[self.axis] = ChunkAxis.const(n)
        return tuple(out)


def _transform(kind, a, n, axis, norm):
    from .rechunk import rechunk_axes

    a = asarray(a)
    if a.ndim == 0:
        raise ValueError(f"{kind}: needs an array of at least one dimension")
    axis = axis_of(axis, a.ndim)
    m = a.shape[axis]
    if n is None:
        n = 2 * (m - 1) if kind in ("irfft", "hfft") else m
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    if a.dtype.kind not in "biufc":
        raise TypeError(f"{kind}: unsupported dtype {a.dtype}")
    r = rechunk_axes(a, {axis: (m,)})
    return wrap(Transform(r.expr, FFT(kind, n, axis, norm, a.dtype)), a, extra=r.sources)


def _one(kind):
    def f(a, n=None, axis=-1, norm=None):
        return _transform(kind, a, n, axis, norm)

    f.__name__ = kind
    f.__doc__ = f"numpy.fft.{kind} along ``axis`` (rechunked to one block)."
    return derived_from(np.fft)(f)


fft, ifft, rfft, irfft, hfft, ihfft = (_one(k) for k in _KINDS)


def _axes_and_sizes(a, s, axes, who):
    a = asarray(a)
    if axes is None:
        axes = tuple(range(a.ndim)) if s is None else tuple(range(a.ndim - len(s), a.ndim))
    axes = tuple(axis_of(x, a.ndim) for x in axes)
    if len(set(axes)) < len(axes):  # dask's rule (NumPy would transform an axis twice)
        raise ValueError(f"{who}: duplicate axes not allowed, got {axes}")
    if s is None:
        s = [None] * len(axes)
    if len(s) != len(axes):
        raise ValueError(f"{who}: shape and axes have different lengths")
    return a, list(axes), list(s)


def _nd(kind):
    def f(a, s=None, axes=None, norm=None):
        a, axes, sizes = _axes_and_sizes(a, s, axes, f"{kind}n")
        if kind == "rfft":
            a = rfft(a, sizes[-1], axes[-1], norm)
            for ax, n in zip(axes[:-1], sizes[:-1]):
                a = fft(a, n, ax, norm)
            return a
        if kind == "irfft":
            for ax, n in zip(axes[:-1], sizes[:-1]):
                a = ifft(a, n, ax, norm)
            return irfft(a, sizes[-1], axes[-1], norm)
        one = fft if kind == "fft" else ifft
        for ax, n in reversed(list(zip(axes, sizes))):
            a = one(a, n, ax, norm)
        return a

    f.__name__ = f"{kind}n"
    f.__doc__ = f"numpy.fft.{kind}n: 1-d transforms along each of ``axes``."
    return derived_from(np.fft)(f)


fftn, ifftn, rfftn, irfftn = (_nd(k) for k in ("fft", "ifft", "rfft", "irfft"))


def _two(nd):
    def f(a, s=None, axes=(-2, -1), norm=None):
        return nd(a, s, axes, norm)

    f.__name__ = nd.__name__[:-1] + "2"
    f.__doc__ = f"numpy.fft.{f.__name__}."
    return derived_from(np.fft)(f)


fft2, ifft2, rfft2, irfft2 = (_two(g) for g in (fftn, ifftn, rfftn, irfftn))


@derived_from(np.fft)
def fftfreq(n, d=1.0, chunks="auto", *, dtype=None, device=None):
    """Sample frequencies of ``fft`` of length ``n``: [0, 1, ..., -1] / (d n)."""
    from .creation import arange
    from .elementwise import where

    n = int(n)
    i = arange(n, chunks=chunks)
    out = where(i < (n + 1) // 2, i, i - n) / (d * n)
    return out if dtype is None else out.astype(dtype)


@derived_from(np.fft)
def rfftfreq(n, d=1.0, chunks="auto", *, dtype=None, device=None):
    """Sample frequencies of ``rfft`` of length ``n``: [0, 1, ..., n // 2] / (d n)."""
    from .creation import arange

    n = int(n)
    out = arange(n // 2 + 1, chunks=chunks) / (d * n)
    return out if dtype is None else out.astype(dtype)


def _shift(a, axes, sign):
    from .manipulation import roll

    a = asarray(a)
    axes = tuple(range(a.ndim)) if axes is None else ((axes,) if np.ndim(axes) == 0 else tuple(axes))
    if not axes:
        return a
    return roll(a, [sign * (a.shape[ax] // 2) for ax in axes], axes)


@derived_from(np.fft)
def fftshift(x, axes=None):
    """Zero frequency to the centre: a roll by n // 2 along ``axes``."""
    return _shift(x, axes, 1)


@derived_from(np.fft)
def ifftshift(x, axes=None):
    """The inverse of ``fftshift``."""
    return _shift(x, axes, -1)


# ---------------------------------------------------------------- fft_wrap

_OUT_NAMES = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


def _wrapped_axis(kind, m, n):
    """Output extent along a transformed axis of extent ``m`` (``n``: the requested length)."""
    if kind == "rfft":
        return (m if n is None else n) // 2 + 1
    if kind in ("irfft", "hfft"):
        return 2 * (m - 1) if n is None else n
    if kind == "ihfft":
        n = m if n is None else n
        return n // 2 + 1
    return m if n is None else n


def fft_wrap(fft_func, kind=None, dtype=None, allow_fftpack=False):
    """A NumPy-style FFT function (``numpy.fft.*``, ``scipy.fft.*``) wrapped for RelArrays, as
    dask.array.fft's ``fft_wrap``.

    The transformed axes are rechunked to one block (dask raises instead), then ``fft_func``
    runs on every block (``map_blocks``).

    Parameters
    ----------
    fft_func : callable
        The FFT function, such as ``numpy.fft.fft`` or ``scipy.fft.rfft2``.
    kind : str, optional
        Which transform it is (``"fft"``, ``"rfft2"``, ``"ihfft"``, ...); default its
        ``__name__``.
    dtype : dtype, optional
        The output's dtype; default the transform's usual one.
    allow_fftpack : bool, optional
        Allow ``scipy.fftpack``'s functions without a ``FutureWarning``.

    Returns
    -------
    callable
        ``func(a, s=None, axes=None, norm=None)`` (``(a, n=None, axis=None, norm=None)`` for
        a 1-d transform) returning a RelArray.

    Raises
    ------
    ValueError
        ``kind`` is not a known transform.

    Examples
    --------
    >>> fft = da.fft.fft_wrap(np.fft.fft)
    >>> x = da.from_array(np.array([1.0, 0.0, 0.0, 0.0]), chunks=2)
    >>> fft(x).compute()
    array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    from .blockwise import map_blocks

    if not callable(fft_func):
        raise TypeError(f"fft_wrap: fft_func must be callable, got {type(fft_func).__name__}")
    kind = getattr(fft_func, "__name__", "") if kind is None else kind
    base = kind.rstrip("2n")
    if base not in _OUT_NAMES:
        raise ValueError(f"Given unknown `kind` {kind}.")
    fftpack = (getattr(fft_func, "__module__", None) or "").startswith("scipy.fftpack")
    if fftpack and not allow_fftpack:
        import warnings

        warnings.warn(
            f"Function {fft_func.__name__} from `scipy.fftpack` does not match NumPy's API and is considered "
            "legacy. Please use `scipy.fft` instead. To suppress this warning and allow usage, set "
            "`allow_fftpack=True`. Support for `scipy.fftpack` will be deprecated in future releases.",
            FutureWarning,
            stacklevel=2,
        )

    def func(a, s=None, axes=None, norm=None):
        a = asarray(a)
        if axes is None:
            if kind.endswith("2"):
                axes = (-2, -1)
            elif kind.endswith("n"):
                axes = tuple(range(a.ndim)) if s is None else tuple(range(len(s)))
            else:
                axes = (-1,)
        elif len(set(axes)) < len(axes):
            raise ValueError("Duplicate axes not allowed.")
        axes = tuple(axis_of(x, a.ndim) for x in axes)
        if s is not None and len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        out_dtype = dtype
        if out_dtype is None:
            sample = np.ones(a.ndim * (8,), dtype=a.dtype)
            try:
                out_dtype = fft_func(sample, axes=axes, norm=norm).dtype
            except TypeError:
                out_dtype = fft_func(sample).dtype
        a = a.rechunk({x: -1 for x in axes})
        chunks = list(a.chunks)
        for i, x in enumerate(axes):
            n = None if s is None else s[i]
            last = i == len(axes) - 1
            chunks[x] = (_wrapped_axis(base if last or base in ("fft", "ifft") else "fft", a.shape[x], n),)
        if kind.endswith("fft"):
            args = (None if s is None else s[0], axes[0]) + (() if fftpack else (norm,))
        else:
            args = (s, axes) + (() if fftpack else (norm,))
        return map_blocks(
            fft_func, a, *args, dtype=out_dtype, chunks=tuple(chunks), name=getattr(fft_func, "__name__", kind)
        )

    if kind.endswith("fft"):
        nd = func

        def func(a, n=None, axis=None, norm=None):
            return nd(a, None if n is None else (n,), None if axis is None else (axis,), norm)

    func.__name__ = getattr(fft_func, "__name__", kind)
    func.__doc__ = (
        f"Wrapping of {getattr(fft_func, '__module__', '')}.{func.__name__} (transformed axes rechunked to one block)."
    )
    return func


__all__ = [
    "fft",
    "fft2",
    "fft_wrap",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]
