"""The implementation algebra: physical tensor relations whose tuples carry sites.

No Dask here: plans are data, with a reference executor that simulates sites.
"""

from .executor import execute, project
from .nodes import (
    IA_OPERATORS,
    Broadcast,
    Expand,
    IANode,
    LocalAggregate,
    LocalFilter,
    LocalJoin,
    LocalMap,
    Placed,
    PlanError,
    Shuffle,
    expand,
    rekey,
    tile,
    transform,
)
from .partitioning import ALL, Grid, SiteMap, part, part_all
