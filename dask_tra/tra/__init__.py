"""The tensor relational algebra: relation metadata, kernels, seven operators, a reference executor.

This layer knows nothing of Dask or of sites.
"""

from .errors import ChunkShapeError, IntegrityError, KernelError, TRAError
from .relation import ChunkAxis, RelationType
from .kernels import Kernel, Elementwise, Einsum, Reduce, Custom
from .keyfuncs import KeyMap, KeyPred
from .expr import Expr, Input, Join, Aggregate, ReKey, Filter, Transform, Tile, Concat, OPERATORS
from .executor import evaluate
from .blocks import split, assemble, normalize_chunks
