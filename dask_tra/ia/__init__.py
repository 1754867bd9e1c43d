"""The implementation algebra: physical tensor relations whose tuples carry sites.

No Dask here: plans are data, with a reference executor that simulates sites.
"""

from .partitioning import ALL, Grid, SiteMap, part
from .nodes import (
    Broadcast,
    Expand,
    IANode,
    LocalAggregate,
    LocalFilter,
    LocalJoin,
    LocalMap,
    expand,
    rekey,
    tile,
    transform,
    Placed,
    PlanError,
    Shuffle,
    IA_OPERATORS,
)
from .executor import execute, project
