"""A stateful fuzz on a shared 4-worker LocalCluster (see benchmarks/fuzz.py): dask.array and
dask_tra operations on shared persisted data, persist/del, replicate/rebalance, workers
retired, added and killed mid-compute; every result compared with NumPy."""
import os

import pytest
from distributed import Client, LocalCluster

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from benchmarks.fuzz import KINDS, OPS, Workload

STEPS = int(os.environ.get("DASK_TRA_FUZZ_STEPS", 12))
EXAMPLES = int(os.environ.get("DASK_TRA_FUZZ_EXAMPLES", 3))
_shared = {}
_steps = {"steps": 0, "examples": 0}


def _cluster():
    if "cluster" not in _shared:
        cluster = LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=":0",
                               memory_limit="2GiB")
        _shared.update(cluster=cluster, client=Client(cluster))
    return _shared["cluster"], _shared["client"]


@pytest.fixture(scope="module", autouse=True)
def _close_cluster():
    yield
    print(f"\nfuzz: {_steps['steps']} steps in {_steps['examples']} runs")
    misses = _steps.get("byte_misses", [])
    print(f"fuzz: {len(misses)} operations measured more than 10% off their predicted bytes"
          + "".join(f"\n  {op}: measured {got}, predicted {want}" for op, got, want, _ in misses[:5]))
    for e in _steps.get("errors", [])[:3]:
        print("fuzz error:", e)
    if "client" in _shared:
        _shared.pop("client").close()
        _shared.pop("cluster").close()


index = st.integers(0, 99)


class BusyCluster(RuleBasedStateMachine):
    @initialize(kinds=st.lists(st.sampled_from(KINDS), min_size=2, max_size=3), seed=st.integers(0, 10**6))
    def start(self, kinds, seed):
        cluster, client = _cluster()
        cluster.scale(4)
        self.w = Workload(cluster, client, workers=4)
        self._do("_settle")
        _steps["examples"] += 1
        for n, k in enumerate(kinds):
            self._do("new", k, seed + n, seed + n)

    @rule(kind=st.sampled_from(KINDS), shape=index, seed=st.integers(0, 10**6))
    def new(self, kind, shape, seed):
        self._do("new", kind, shape, seed)

    @rule(op=st.sampled_from(OPS), i=index, j=index)
    def operate(self, op, i, j):
        self._do("operate", op, i, j)

    @rule(i=index)
    def persist(self, i):
        self._do("persist", i)

    @rule(i=index)
    def delete(self, i):
        self._do("delete", i)

    @rule(i=index)
    def replicate(self, i):
        self._do("replicate", i)

    @rule()
    def rebalance(self):
        self._do("rebalance")

    @rule()
    def retire(self):
        self._do("retire")

    @rule()
    def add(self):
        self._do("add")

    @rule(i=index, delay=st.integers(5, 300))
    def kill_mid_compute(self, i, delay):
        self._do("kill_mid_compute", i, delay)

    def _do(self, action, *args):
        """Run a Workload action; an error is reported with its traceback before hypothesis
        replays the case (a cluster's history cannot be replayed exactly)."""
        try:
            getattr(self.w, action)(*args)
        except Exception:
            import traceback
            _steps.setdefault("errors", []).append(f"{action}{args}: {traceback.format_exc()}")
            raise

    @invariant()
    def bytes_as_predicted(self):
        """Measured plan bytes within 10% of predicted whenever the worker set did not change
        (``Workload._compute``); the count is reported at the end of the module."""
        _steps["steps"] += 1
        if hasattr(self, "w"):
            _steps.setdefault("byte_misses", []).extend(self.w.byte_misses)
            misses, self.w.byte_misses = list(self.w.byte_misses), []
            assert not misses, misses[0]


# derandomized: the suite draws the same cases every run (``python -m benchmarks soak`` explores
# at random); a case a random draw found is kept below as a test of its own
BusyCluster.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                                         database=None, suppress_health_check=list(HealthCheck),
                                         phases=[Phase.explicit, Phase.generate], derandomize=True)
test_busy_cluster = BusyCluster.TestCase


def test_einsum_over_lazy_dask_inputs_moves_what_it_predicts():
    """Found by a random draw of test_busy_cluster: an einsum over a lazy dask.array read twice,
    split 3-D, measured 58.8 kiB against 48.1 predicted (blocks remade on a second site and sent
    on to a third were counted as 0 bytes); tests/test_emit.py has the direct case."""
    cluster, client = _cluster()
    cluster.scale(4)
    w = Workload(cluster, client, workers=4)
    w._settle()
    for n, kind in enumerate(["dask-lazy", "dask-persisted"]):
        w.new(kind, 260971 + n, 260971 + n)
    for op, i, j in [("matmul", 70, 93), ("to_dask", 63, 76), ("matmul", 48, 5), ("elementwise", 97, 10),
                     ("elementwise", 40, 54), ("sum", 4, 80), ("rechunk", 44, 80), ("matmul", 56, 71),
                     ("einsum", 72, 8)]:
        w.operate(op, i, j)
    assert not w.byte_misses, w.byte_misses[0][:3]
