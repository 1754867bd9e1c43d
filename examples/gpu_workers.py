"""dask_tra on GPU workers: CuPy chunks made, multiplied and reduced where the plan puts them.

    python examples/gpu_workers.py                          # local: LocalCUDACluster (dask-cuda) if
                                                            # there is a GPU, else a CPU LocalCluster
    python examples/gpu_workers.py --scheduler tcp://host:8786   # an existing cluster whose workers
                                                            # run `dask cuda worker` or
                                                            # `dask worker --resources GPU=1`
    python examples/gpu_workers.py --backend torch          # choose the chunk library
    python examples/gpu_workers.py --no-cluster             # the threaded scheduler

Without a GPU it prints a note and runs the same program with torch chunks (when torch is
installed) or NumPy chunks on CPU workers: the code path is the same, only the chunk library
differs. See docs/gpu.md.
"""
from __future__ import annotations

import argparse
import contextlib

import numpy as np

import dask_tra as dt
from dask_tra import backends
from dask_tra.backends import cluster as gpu


def pick_backend(requested=None):
    """The chunk library to use: ``requested``, else CuPy on a GPU, else torch, else NumPy."""
    if requested:
        if not backends.available(requested):
            raise SystemExit(f"backend {requested!r} is not available here")
        return requested
    if backends.available("cupy"):
        return "cupy"
    lib = "torch" if backends.available("torch") else "numpy"
    print(f"note: no GPU (CuPy cannot see a device); running with {lib} chunks on CPU workers")
    return lib


def open_cluster(args, backend):
    """A Client on ``--scheduler``, or a local cluster (LocalCUDACluster for CuPy when dask-cuda
    is installed), or nothing (``--no-cluster``: the threaded scheduler)."""
    if args.no_cluster:
        return contextlib.nullcontext(None)
    from distributed import Client, LocalCluster
    if args.scheduler:
        return Client(args.scheduler)
    if backend == "cupy":
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            print("note: dask-cuda is not installed; one worker per process with GPU=1 resources")
            return Client(LocalCluster(n_workers=1, threads_per_worker=1, resources={"GPU": 1},
                                       dashboard_address=None))
        return Client(LocalCUDACluster())
    return Client(LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None))


def run(backend, n=2000, k=1000, chunk=500, client=None):
    """Multiply two random matrices made on the workers in ``backend``'s library, reduce, compare
    with NumPy; returns (result, explain)."""
    with dt.config.set(backend=backend):  # random/creation functions make chunks of this library
        a = dt.random.standard_normal((n, k), chunks=chunk, seed=1, dtype=np.float32)
        b = dt.random.standard_normal((k, n), chunks=chunk, seed=2, dtype=np.float32)
    # from_array keeps the library of its input; to_backend converts where each chunk is
    w = dt.from_array(np.linspace(0, 1, n, dtype=np.float32), chunks=chunk).to_backend(backend)
    z = ((a @ b) * w).sum(axis=0)
    measure = dt.diagnostics.measure() if client is not None else contextlib.nullcontext()
    with measure as m:
        out = z.compute()
    print(f"result: {type(out).__module__}.{type(out).__name__} {tuple(out.shape)} {out.dtype}")
    if m is not None:
        print(f"bytes moved between workers: {m.bytes_moved:,} (predicted {m.predicted_bytes:,})")
    # the same values as NumPy chunks (random chunks are drawn from NumPy's seeded generator)
    ref_a = dt.random.standard_normal((n, k), chunks=chunk, seed=1, dtype=np.float32).compute()
    ref_b = dt.random.standard_normal((k, n), chunks=chunk, seed=2, dtype=np.float32).compute()
    want = ((ref_a @ ref_b) * np.linspace(0, 1, n, dtype=np.float32)).sum(axis=0)
    np.testing.assert_allclose(backends.to_numpy(out), want, rtol=2e-3, atol=2e-2)
    return out, z.explain()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scheduler", help="address of an existing cluster's scheduler")
    p.add_argument("--backend", choices=backends.names(), help="chunk library (default: cupy if a GPU)")
    p.add_argument("--no-cluster", action="store_true", help="threaded scheduler, no workers")
    p.add_argument("--size", type=int, default=2000)
    args = p.parse_args(argv)
    backend = pick_backend(args.backend)
    with open_cluster(args, backend) as client:
        if client is not None:
            workers = client.scheduler_info(n_workers=-1)["workers"]
            print(f"{len(workers)} workers; with a GPU: {list(gpu.gpu_workers(client)) or 'none'}")
            limit = gpu.site_memory_limit(min(w.get("memory_limit") or 2**62 for w in workers.values()),
                                          {backend}, client, dt.config.get("gpu_memory_limit"),
                                          dt.config.get("device"))
            print(f"per-site memory limit for {backend} chunks: {limit:,} bytes")
        out, explain = run(backend, n=args.size, k=args.size // 2, chunk=max(args.size // 4, 1), client=client)
        print(explain)
    return out


if __name__ == "__main__":
    main()
