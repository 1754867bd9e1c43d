"""A cluster's workers, its GPU workers and their memory, asked of a ``distributed.Client`` (used
duck-typed: this module imports neither Dask nor a chunk library; the functions sent to workers
import what is there).

- ``workers_info(client)``: the scheduler's workers, asked now (see its doc).
- ``gpu_workers(client)``: the workers that hold a GPU: started with ``--resources GPU=n``, or
  reporting a GPU (dask-cuda's ``LocalCUDACluster``/``dask cuda worker`` report one through
  NVML; otherwise the worker is asked whether CuPy or torch sees a device).
- ``device_memory(client)``: {worker: total bytes of its GPU, or None}.
- ``gpu_memory_limit(client, setting)``: bytes per site for GPU-resident chunks: ``setting``
  itself when it is a number of bytes (> 1), else that fraction of the smallest GPU's memory.
- ``site_memory_limit(host_limit, backends_used, client, setting)``: what a plan may use per
  site: the host limit, or the smaller GPU limit when the plan's chunks live on GPUs.
"""

from __future__ import annotations


def _worker_device_memory():
    """Run on a worker: total bytes of the GPU this process uses (asked of the backends in turn), or None."""
    from dask_tra import backends

    for name in backends.names():
        if backends.available(name):
            total = backends.get(name).device_memory()
            if total:
                return total
    return None


def workers_info(client) -> dict:
    """{address: info} of the scheduler's workers, asked now. Not ``client.scheduler_info()``: it
    returns a field that the client's periodic refresh (which asks for no workers) may overwrite
    between the query and the read, so a busy client sometimes sees no workers at all. An
    asynchronous client gets its cached info, as ``scheduler_info`` gives it."""
    if client.asynchronous:
        return client.scheduler_info(n_workers=-1)["workers"]
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def device_memory(client, info=None) -> dict:
    """{worker address: total GPU bytes or None}: NVML's report when the scheduler has it (dask-cuda
    workers), else asked of the workers (CuPy, then torch)."""
    info = workers_info(client) if info is None else info
    out, ask = {}, []
    for addr, w in info.items():
        total = (w.get("gpu") or {}).get("memory-total") or ((w.get("metrics") or {}).get("gpu") or {}).get(
            "memory-total"
        )
        if total:
            out[addr] = int(total)
        else:
            ask.append(addr)
    if ask:
        key = (id(client), tuple(sorted(ask)))
        answers = _ASKED.get(key)
        if answers is None:  # asked once per client and worker set (planning runs often)
            answers = _ASKED[key] = client.run(_worker_device_memory, workers=ask)
            while len(_ASKED) > 64:
                _ASKED.pop(next(iter(_ASKED)))
        out.update({a: (int(v) if v else None) for a, v in answers.items()})
    return out


_ASKED: dict = {}


def gpu_workers(client, info=None) -> tuple:
    """Sorted addresses of the workers with a GPU (the ``GPU`` resource, or a device reported by
    NVML / CuPy / torch); empty when there are none."""
    info = workers_info(client) if info is None else info
    marked = sorted(a for a, w in info.items() if (w.get("resources") or {}).get("GPU"))
    if marked:
        return tuple(marked)
    return tuple(sorted(a for a, m in device_memory(client, info).items() if m))


def gpu_memory_limit(client=None, setting=0.8, info=None):
    """Bytes per site for chunks in GPU memory: ``setting`` bytes (a number > 1), or the fraction
    ``setting`` (0 < setting <= 1) of the smallest GPU among the GPU workers; None when unknown."""
    if setting is None:
        return None
    if setting > 1:
        return int(setting)
    if client is None:
        return None
    info = workers_info(client) if info is None else info
    gpus = gpu_workers(client, info)
    mem = [m for a, m in device_memory(client, {a: info[a] for a in gpus}).items() if m]
    return int(min(mem) * float(setting)) if mem else None


def uses_device_memory(backends_used, device=None) -> bool:
    """Whether chunks of these backends live in GPU memory (each backend says: CuPy always,
    torch with a CUDA ``device``)."""
    from . import get

    return any(get(name).in_device_memory(device) for name in set(backends_used))


def site_memory_limit(host_limit, backends_used, client=None, setting=0.8, device=None, info=None):
    """The per-site memory limit of a plan whose chunks are of ``backends_used``: ``host_limit``,
    or the smaller GPU limit (``gpu_memory_limit``) when those chunks live on GPUs."""
    if not uses_device_memory(backends_used, device):
        return host_limit
    gpu = gpu_memory_limit(client, setting, info)
    if gpu is None:
        return host_limit
    return gpu if host_limit is None else min(int(host_limit), gpu)


__all__ = [
    "workers_info",
    "gpu_workers",
    "device_memory",
    "gpu_memory_limit",
    "site_memory_limit",
    "uses_device_memory",
]
