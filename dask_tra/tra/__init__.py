"""The tensor relational algebra: relation metadata, kernels, seven operators, a reference executor.

This layer knows nothing of Dask or of sites.
"""

from .blocks import assemble, normalize_chunks, split
from .errors import ChunkShapeError, IntegrityError, KernelError, TRAError
from .executor import evaluate
from .expr import OPERATORS, Aggregate, Concat, Expr, Filter, Input, Join, ReKey, Tile, Transform
from .kernels import Custom, Einsum, Elementwise, Kernel, Reduce
from .keyfuncs import KeyMap, KeyPred
from .relation import ChunkAxis, RelationType
