"""dask_tra.array.linalg: blocked linear algebra as TRA expressions (``dask.array.linalg``'s
functions, NumPy's ``linalg`` and the Array API ``linalg`` extension).

- ``qr``/``tsqr``/``svd``/``svd_compressed``: TSQR (``qr.py``);
- ``cholesky``/``lu``/``solve_triangular``/``solve``/``inv``: left-looking blocked algorithms
  (``blocked.py``);
- norms, ``det``, ``eigh``, ``trace``, ``diagonal``, ``lstsq``, ... (``norms.py``), with
  stacks of small matrices through NumPy's batched linalg per chunk (``batched.py``).
"""

from ..contractions import matmul, outer, tensordot, vecdot
from ..structure import matrix_transpose
from . import blocked as _blocked
from . import norms as _norms
from . import qr as _qr_module
from .blocked import *
from .norms import *
from .qr import *

__all__ = (
    list(_qr_module.__all__)
    + list(_blocked.__all__)
    + list(_norms.__all__)
    + ["matmul", "outer", "tensordot", "vecdot", "matrix_transpose"]
)
