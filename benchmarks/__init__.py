"""Benchmarks: the TRA and EinDecomp papers' workloads, dask_tra against dask.array, NumPy and
PyTorch, on a loopback cluster or on an emulated cluster network (network namespaces + tc).

    python -m benchmarks run --suite paper --workers 4 [--net 250mbit] [--repeat 3] [--quick]
    python -m benchmarks gpu [--only matmul,ffnn,paper-mm]    # needs a CUDA GPU (CuPy)

Modules: ``cli`` (the runner), ``cluster`` (loopback or network-namespace cluster),
``workloads`` (the computations and their sizes), ``competitors`` (running and measuring
each system), ``report`` (tables, targets, plots), ``gpu`` (the GPU benchmarks). See docs/benchmarks.md.
"""
