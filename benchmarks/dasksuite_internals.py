"""The tests of dask's ``dask/array/tests/`` that ``python -m benchmarks dask-suite`` leaves out of
the user-facing pass rate, because they only inspect dask's own graph structure (layer types,
task counts, key names dask's graph builder chose, its optimization passes), which dask_tra
builds differently by design. Each entry: an fnmatch pattern over ``file::test`` (the test id
without its parameters) and why. ``x._meta``, ``x.name``, tokenize determinism and
``dask.compute`` interop are user-facing and are never listed here."""

GPU_FILES = frozenset({
    "test_cupy_core.py", "test_cupy_creation.py", "test_cupy_gufunc.py", "test_cupy_linalg.py",
    "test_cupy_overlap.py", "test_cupy_percentile.py", "test_cupy_random.py", "test_cupy_reductions.py",
    "test_cupy_routines.py", "test_cupy_slicing.py", "test_cupy_sparse.py",
})

EXCLUDED: dict[str, str] = {
}
