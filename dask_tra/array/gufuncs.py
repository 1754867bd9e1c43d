"""``gufunc`` and ``as_gufunc``: a Python function bound to a generalized-ufunc signature, as
dask.array has them. Calling one is ``apply_gufunc`` (``blockwise.py``): core dimensions made
one block, then ``blockwise`` over the loop dimensions."""

from __future__ import annotations

from .blockwise import apply_gufunc

_OPTIONS = ("vectorize", "axes", "axis", "keepdims", "output_sizes", "output_dtypes", "allow_rechunk", "meta")


class gufunc:
    """``pyfunc`` bound into ``apply_gufunc`` with ``signature`` and the other options."""

    def __init__(
        self,
        pyfunc,
        *,
        signature=None,
        vectorize=False,
        axes=None,
        axis=None,
        keepdims=False,
        output_sizes=None,
        output_dtypes=None,
        allow_rechunk=False,
        meta=None,
    ):
        if not callable(pyfunc):
            raise TypeError(f"gufunc: pyfunc must be callable, got {type(pyfunc).__name__}")
        if not isinstance(signature, str):
            raise TypeError(f"gufunc: signature must be a string like '(i)->()', got {signature!r}")
        self.pyfunc, self.signature, self.vectorize = pyfunc, signature, vectorize
        self.axes, self.axis, self.keepdims = axes, axis, keepdims
        self.output_sizes, self.output_dtypes = output_sizes, output_dtypes
        self.allow_rechunk, self.meta = allow_rechunk, meta
        self.__name__ = getattr(pyfunc, "__name__", "gufunc")
        self.__doc__ = f"Bound gufunc: ``{self.__name__}`` with signature ``{signature!r}``."

    def __call__(self, *args, allow_rechunk=False, **kwargs):
        return apply_gufunc(
            self.pyfunc,
            self.signature,
            *args,
            vectorize=self.vectorize,
            axes=self.axes,
            axis=self.axis,
            keepdims=self.keepdims,
            output_sizes=self.output_sizes,
            output_dtypes=self.output_dtypes,
            allow_rechunk=self.allow_rechunk or allow_rechunk,
            meta=self.meta,
            **kwargs,
        )

    def __repr__(self):
        return f"<gufunc {self.__name__} {self.signature!r}>"


def as_gufunc(signature=None, **kwargs):
    """Decorator: ``@as_gufunc("(i)->()", output_dtypes=float)`` makes a function a ``gufunc``."""
    unknown = set(kwargs) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"Unsupported keyword argument(s) provided: {sorted(unknown)}")

    def _as_gufunc(pyfunc):
        return gufunc(pyfunc, signature=signature, **kwargs)

    return _as_gufunc


__all__ = ["as_gufunc", "gufunc"]
