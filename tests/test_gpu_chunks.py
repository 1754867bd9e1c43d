"""Device chunks between workers, and GPU memory as the per-site limit, without a GPU where possible.

A device backend joins by registering itself (``backends.register``): ``DeviceArray`` below is
a stand-in for a GPU array (values behind a handle, on a numbered "fake" device, refusing
implicit conversion to NumPy as CuPy does), and ``FakeDevice`` its backend. Through it the
chunk serializers, ``sizeof``, ``concatenate`` and the GPU memory limit run on any machine.
torch CPU tensors cross real worker processes through the same serializer. The CUDA and CuPy
tests at the end need a GPU and skip cleanly without one.
"""
from collections import Counter

import numpy as np
import pytest

import dask_tra as dt
from dask_tra import backends
from dask_tra.backends import Backend, registry
from dask_tra.runtime import dispatch
from dask_tra.optimizer import MemoryLimitError

pytestmark = pytest.mark.numpy_chunks

RNG = np.random.default_rng(16)
A = RNG.standard_normal((800, 100))
B = RNG.standard_normal((100, 800))


class DeviceArray:
    """A stand-in for a GPU array on device ``fake:<device>``."""

    def __init__(self, values, device=0):
        self._values, self.device = np.asarray(values), int(device)

    shape = property(lambda self: self._values.shape)
    dtype = property(lambda self: self._values.dtype)
    ndim = property(lambda self: self._values.ndim)

    def __getitem__(self, index):
        return DeviceArray(self._values[index].copy(), self.device)

    def __array__(self, *args, **kwargs):
        raise TypeError("implicit conversion of a device array to NumPy")


class FakeDevice(Backend):
    """The backend of DeviceArray chunks: in device memory, ``memory`` bytes per device."""

    name = "fakedevice"
    chunk_modules = (__name__.partition(".")[0],)
    memory = 8 * 2**20

    def __init__(self):
        self.copies = Counter()

    def available(self):
        return True

    def chunk_types(self):
        return (DeviceArray,)

    def in_device_memory(self, device=None):
        return True

    def device_memory(self):
        return self.memory

    def device_name(self, device=None):
        return f"fake:{0 if device is None else int(str(device).rpartition(':')[2])}"

    def chunk_device(self, x):
        return f"fake:{x.device}"

    def to_numpy(self, x):
        self.copies["to_host"] += 1
        return x._values.copy()

    def from_numpy(self, a, device=None):
        self.copies["to_device"] += 1
        return DeviceArray(np.array(a), 0 if device is None else self.device_name(device)[5:])

    def concat(self, chunks, axis=0):
        return DeviceArray(np.concatenate([c._values for c in chunks], axis=axis), chunks[0].device)


@pytest.fixture(scope="module")
def fake():
    """FakeDevice registered for this module (the registry restored afterwards)."""
    mp = pytest.MonkeyPatch()
    for table in ("_BACKENDS", "_BY_MODULE", "_TYPE_CACHE"):
        mp.setattr(registry, table, dict(getattr(registry, table)))
    b = backends.register(FakeDevice())
    yield b
    mp.undo()


def test_a_backend_joins_by_registering(fake):
    x = DeviceArray(A)
    assert backends.get("fakedevice") is fake and "fakedevice" in backends.names()
    assert backends.backend_of(x, np.ones(2), 1.0) is fake and backends.backend_of_type(x) == "fakedevice"
    assert backends.numpy_dtype(x.dtype) == np.float64
    r = dt.from_array(x, chunks=(300, 50))
    assert r.expr.type.backend == "fakedevice" and r.device == "fake:0"
    assert dt.from_array(A, chunks=300).device == "cpu"
    from dask_tra.backends import cluster
    assert cluster.uses_device_memory({"numpy", "fakedevice"}) and not cluster.uses_device_memory({"numpy"})


def test_device_is_read_from_metadata():
    """RelArray.device names where chunks are, without computing: the input's device, a
    conversion's target, the configured device of created chunks, kept through persist."""
    torch = pytest.importorskip("torch")
    x = dt.from_array(torch.from_numpy(A), chunks=300)
    assert x.device == "cpu" and (x @ x.T).device == "cpu"
    on_gpu = x.to_backend("torch", device="cuda:1")  # lazy: nothing is moved here
    assert on_gpu.device == "cuda:1" and (on_gpu.T @ on_gpu + 1).device == "cuda:1"
    assert on_gpu.to_backend("numpy").device == "cpu"
    with dt.config.set(backend="torch", device="cuda"):
        r = dt.random.random((4, 4), chunks=2, seed=1)
    assert r.device == "cuda"  # each worker's default GPU
    assert x.persist(scheduler="sync").device == "cpu"
    with pytest.raises(ValueError, match="to_backend"):
        x.to_device("cuda")


def test_device_chunks_serialize_with_one_host_copy_each_way(fake):
    from dask.array.core import concatenate3
    from dask.sizeof import sizeof
    from distributed.protocol import deserialize, serialize
    x = DeviceArray(A[:300], device=1)
    assert sizeof(x) == 300 * 100 * 8  # exact bytes: measure() and the scheduler count these
    dispatch.reset_transfers()
    fake.copies.clear()
    header, frames = serialize(x, serializers=("dask",), on_error="raise")
    assert header["sub-header"]["dask_tra"] == ["fakedevice", "fake:1"]
    y = deserialize(header, frames)
    assert type(y) is DeviceArray and y.device == 1
    np.testing.assert_array_equal(y._values, A[:300])
    assert dispatch.transfers() == {"serialized": 1, "deserialized": 1, "device_to_host": 1, "host_to_device": 1}
    assert fake.copies == {"to_host": 1, "to_device": 1}
    glued = concatenate3([[x, y], [y, x]])  # a computed RelArray's finalize: stays a device array
    assert type(glued) is DeviceArray and glued.shape == (600, 200)


def test_a_backend_of_a_library_imported_later_keeps_dasks_own_registrations(fake):
    """A backend whose library is not imported yet is installed lazily, when Dask first meets
    one of its chunks, after the library's own lazy Dask registration (dask.array registers
    tensordot, take, ... for CuPy that way): that one still runs."""
    import sys
    import types

    from dask.array.dispatch import concatenate_lookup, take_lookup
    from dask.sizeof import sizeof
    ran = []

    def dasks_own():
        ran.append("dask")
        take_lookup.register(lib.Chunk, _take)
    concatenate_lookup.register_lazy("dask_tra_later_lib")(dasks_own)

    class Later(FakeDevice):
        name, chunk_modules = "later", ("dask_tra_later_lib",)

        def chunk_types(self):
            return (sys.modules["dask_tra_later_lib"].Chunk,)
    backends.register(Later())
    lib = types.ModuleType("dask_tra_later_lib")  # "imported" only now
    lib.Chunk = type("Chunk", (DeviceArray,), {"__module__": "dask_tra_later_lib"})
    sys.modules["dask_tra_later_lib"] = lib
    try:
        x = lib.Chunk(A[:4])
        assert sizeof(x) == 4 * 100 * 8 and ran == ["dask"]
        assert take_lookup.dispatch(lib.Chunk) is _take
        glued = concatenate_lookup.dispatch(lib.Chunk)([x, x], axis=0)  # dask_tra's (NumPy's would refuse)
        assert isinstance(glued, DeviceArray) and glued.shape == (8, 100)
    finally:
        del sys.modules["dask_tra_later_lib"]


def _take(a, indices, axis=0):
    return a


def test_gpu_memory_limit_replaces_then_refuses_a_plan(fake):
    """Plans of device chunks are held to the GPU limit, host chunks are not: a limit below the
    best plan's peak replaces it with one that fits; one below every plan's peak refuses it."""
    host = dt.from_array(A, chunks=100) @ dt.from_array(B, chunks=100)
    dev = dt.from_array(DeviceArray(A), chunks=100) @ dt.from_array(DeviceArray(B), chunks=100)
    limit = 5 * 2**20
    # bytes dominate the time (a slow network): the best plan, cmm, moves nothing but holds 6.4 MB on a site
    with dt.config.set(gpu_memory_limit=limit, bandwidth=1e3, flop_rate=1e15, task_overhead=1e-9):
        p_host, w_host = host.planned(sites=4)
        p_dev, w_dev = dev.planned(sites=4)
    assert w_host.memory_limit is None and w_dev.memory_limit == limit
    assert max(p_host.cost.peak_memory.values()) > limit >= max(p_dev.cost.peak_memory.values())
    assert [o.strategy for o in p_host.explain.operators] != [o.strategy for o in p_dev.explain.operators]
    with dt.config.set(gpu_memory_limit=2**20), pytest.raises(MemoryLimitError, match=r"no plan fits 1,048,576"):
        dev.planned(sites=4)


def test_gpu_workers_limit_is_their_device_memory(fake):
    """On a cluster the sites are the GPU workers and the limit a fraction of their device's
    memory (asked of the workers' backends: in-process workers see FakeDevice's 8 MiB)."""
    from distributed import Client, LocalCluster
    host = dt.from_array(A, chunks=100) @ dt.from_array(B, chunks=100)
    dev = dt.from_array(DeviceArray(A), chunks=100) @ dt.from_array(DeviceArray(B), chunks=100)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                      resources={"GPU": 1}, memory_limit="2GiB") as lc, Client(lc):
        p_host, w_host = host.planned()
        p, where = dev.planned()  # gpu_memory_limit: 0.8 of the device by default
        assert where.count == 2 and w_host.memory_limit == 2 * 2**30
        assert where.memory_limit == int(0.8 * FakeDevice.memory)
        assert where.memory_limit >= max(p.cost.peak_memory.values())  # (the host plan is not bound by it)
        with dt.config.set(gpu_memory_limit=0.25), pytest.raises(MemoryLimitError, match="no plan fits"):
            dev.compute()  # refused while planning: nothing ran


# ---------------------------------------------------------------- torch tensors between worker processes

def test_torch_chunks_cross_workers_through_the_chunk_serializer(small_client):
    torch = pytest.importorskip("torch")
    x = dt.from_array(torch.from_numpy(A), chunks=(200, 50))
    with dt.config.set(backend="torch"):
        y = dt.random.standard_normal((100, 800), chunks=(50, 200), seed=3)
    small_client.run(dispatch.reset_transfers)
    with dt.diagnostics.measure() as m:
        got = (x @ y).compute()
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), A @ y.compute().numpy(), rtol=1e-10)
    counts = small_client.run(dispatch.transfers)
    assert sum(c["serialized"] for c in counts.values()) > 0  # tensors moved, by dask_tra's serializer
    assert sum(c["device_to_host"] + c["host_to_device"] for c in counts.values()) == 0  # CPU: no copies
    assert m.bytes_moved > 0 and abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * m.predicted_bytes


def test_tensor_with_autograd_state_keeps_distributeds_serializer():
    torch = pytest.importorskip("torch")
    from distributed.protocol import deserialize, serialize
    dispatch.install(["torch"])
    t = torch.ones(3, requires_grad=True)
    header, frames = serialize(t, serializers=("dask",), on_error="raise")
    assert "dask_tra" not in header["sub-header"]
    back = deserialize(header, frames)
    assert back.requires_grad and torch.equal(back.detach(), t.detach())
    plain = torch.arange(6.0)
    header, frames = serialize(plain, serializers=("dask",), on_error="raise")
    assert header["sub-header"]["dask_tra"] == ["torch", None]
    assert torch.equal(deserialize(header, frames), plain)


# ---------------------------------------------------------------- on a GPU (skipped without one)

def _cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


def _moved_counts(client):
    counts = client.run(dispatch.transfers)
    counts["client"] = dispatch.transfers()
    return {k: sum(c[k] for c in counts.values()) for k in dispatch._COUNTED}


def test_torch_cuda_chunks_cross_workers_with_one_host_copy(small_client):
    torch = _cuda_torch()
    x = dt.from_array(torch.from_numpy(A).cuda(), chunks=(200, 50))
    y = dt.from_array(torch.from_numpy(B).cuda(), chunks=(50, 200))
    assert x.device == "cuda:0"
    small_client.run(dispatch.reset_transfers)
    dispatch.reset_transfers()
    with dt.diagnostics.measure() as m:
        got = (x @ y).compute()
    assert got.is_cuda
    np.testing.assert_allclose(got.cpu().numpy(), A @ B, rtol=1e-10)
    c = _moved_counts(small_client)
    assert c["device_to_host"] == c["host_to_device"] == c["serialized"] == c["deserialized"] > 0
    assert abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * m.predicted_bytes


def test_cupy_chunks_cross_workers_with_one_host_copy(small_client):
    cupy = pytest.importorskip("cupy")
    if not backends.available("cupy"):
        pytest.skip("CuPy sees no GPU")
    x = dt.from_array(cupy.asarray(A), chunks=(200, 50))
    y = dt.from_array(cupy.asarray(B), chunks=(50, 200))
    assert x.device == "cuda:0"
    small_client.run(dispatch.reset_transfers)
    dispatch.reset_transfers()
    with dt.diagnostics.measure() as m:
        got = (x @ y).compute()
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(got), A @ B, rtol=1e-10)
    c = _moved_counts(small_client)
    assert c["device_to_host"] == c["host_to_device"] == c["serialized"] == c["deserialized"] > 0
    assert abs(m.bytes_moved - m.predicted_bytes) <= 0.1 * m.predicted_bytes


# ---------------------------------------------------------------- the GPU benchmarks

def test_gpu_benchmarks_say_they_need_a_gpu():
    if backends.available("cupy"):
        pytest.skip("this machine has a GPU")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "benchmarks", "gpu", "--out", "/nonexistent"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "need a CUDA GPU" in out.stdout and "Nothing was measured" in out.stdout


def test_gpu_benchmark_runner_on_cpu_chunks(small_client):
    """The GPU benchmarks' cluster runner with torch CPU chunks at a tiny size (plumbing only:
    no figure is reported from this): it times, measures the bytes moved, counts copies, and
    plans the FFNN step's two outputs as one computation."""
    pytest.importorskip("torch")
    from benchmarks import gpu
    rec = gpu.run_on_cluster(small_client, gpu.ffnn_step, gpu._ffnn_inputs(dict(N=64, D=32, H=48, L=8)),
                             "dask_tra", backend="torch")
    assert rec["seconds"] > 0 and rec["bytes"] > 0
    assert rec["copies"] == {"device_to_host": 0, "host_to_device": 0}  # CPU tensors: no device copies
    assert rec["strategies"].count("|") == 0 and rec["strategies"]  # one plan (a Joint) for both outputs
