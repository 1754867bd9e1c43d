"""The Array API ``fft`` extension (``xp.fft``) over RelArrays: ``dask_tra.array.fft`` under the
standard's signatures (positional-only array, keyword-only options)."""

from . import fft as _fft
from .namespace_array import made as _made


def _one(name):
    f = getattr(_fft, name)

    def g(x, /, *, n=None, axis=-1, norm="backward"):
        return f(x, n=n, axis=axis, norm=norm)

    g.__name__ = name
    return g


def _nd(name):
    f = getattr(_fft, name)

    def g(x, /, *, s=None, axes=None, norm="backward"):
        return f(x, s=s, axes=axes, norm=norm)

    g.__name__ = name
    return g


fft, ifft, rfft, irfft, hfft, ihfft = (_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fftn, ifftn, rfftn, irfftn = (_nd(n) for n in ("fftn", "ifftn", "rfftn", "irfftn"))


def _device(device):
    if device not in (None, "cpu"):
        raise ValueError(f"unsupported device {device!r}; RelArrays live on 'cpu'")


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    _device(device)
    return _made(_fft.fftfreq(n, d, dtype=dtype))


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    _device(device)
    return _made(_fft.rfftfreq(n, d, dtype=dtype))


def fftshift(x, /, *, axes=None):
    return _fft.fftshift(x, axes)


def ifftshift(x, /, *, axes=None):
    return _fft.ifftshift(x, axes)
