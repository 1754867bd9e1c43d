"""Regressions: h5py/netCDF4 files read by name (``lazy.py``'s ``Reopen`` and ``_HANDLES``).

A read never goes through a handle on a file since rewritten (the old code kept every file a
process opened, by name, forever: with ``HDF5_USE_FILE_LOCKING=FALSE`` a rewritten file read
again gave the new file's other dataset's bytes at the old offset), and no handle the library
keeps makes rewriting the file fail or truncate it (with locking on, the old code's handle made
``h5py.File(path, "w")`` raise ``BlockingIOError`` after truncating the file to 0 bytes).

Each file holds two datasets: version 0 ``x`` then ``y``; version 1 a longer ``y`` first, then
``x`` with other values, so the old ``x``'s offset holds ``y``'s bytes in the new file.
Scenarios where HDF5 locking must be off in the reading process run in a subprocess whose
environment sets ``HDF5_USE_FILE_LOCKING=FALSE`` before h5py is imported.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dask_tra.array as da

h5py = pytest.importorskip("h5py")
netCDF4 = pytest.importorskip("netCDF4")
from distributed import Client, LocalCluster  # noqa: E402

KINDS = ["h5py", "netcdf4"]
N, CHUNK = 1000, 250

WRITER = textwrap.dedent('''
    import numpy as np

    def write(kind, path, version, n=1000):
        """Version 0: x (0..n-1) then y; version 1: a longer y first, then x (other values)."""
        x = np.arange(n, dtype="f8") + (0.0 if version == 0 else 10_000.0)
        y = np.full(n if version == 0 else 3 * n, -7.0 - version)
        order = [("x", x), ("y", y)] if version == 0 else [("y", y), ("x", x)]
        if kind == "h5py":
            import h5py
            with h5py.File(path, "w") as f:
                for name, v in order:
                    f.create_dataset(name, data=v)
        else:
            import netCDF4
            with netCDF4.Dataset(path, "w") as f:
                for name, v in order:
                    f.createDimension("n" + name, len(v))
                    f.createVariable(name, "f8", ("n" + name,))[:] = v

    def read(kind, path, name="x"):
        """NumPy's view of dataset ``name`` of the file."""
        if kind == "h5py":
            import h5py
            with h5py.File(path, "r") as f:
                return f[name][...]
        import netCDF4
        with netCDF4.Dataset(path, "r") as f:
            return np.asarray(f.variables[name][:])

    def opened(kind, path):
        """(file, dataset x) as a user opens them."""
        if kind == "h5py":
            import h5py
            f = h5py.File(path, "r")
            return f, f["x"]
        import netCDF4
        f = netCDF4.Dataset(path, "r")
        return f, f.variables["x"]
''')
_helpers: dict = {}
exec(WRITER, _helpers)  # the same write, read, opened here
write, read, opened = _helpers["write"], _helpers["read"], _helpers["opened"]

UNLOCKED = {**os.environ, "HDF5_USE_FILE_LOCKING": "FALSE"}


def _path(kind, tmp_path):
    return str(tmp_path / ("d.h5" if kind == "h5py" else "d.nc"))


def _rewrite_in_subprocess(kind, path):
    code = WRITER + f"\nwrite({kind!r}, {path!r}, 1)\n"
    subprocess.run([sys.executable, "-c", code], env=UNLOCKED, check=True, timeout=120)


SCENARIO = WRITER + textwrap.dedent('''
    import subprocess, sys
    import dask_tra.array as da
    from distributed import Client, LocalCluster

    kind, path, scheduler, where, writer = sys.argv[1:6]
    write(kind, path, 0)
    f, v = opened(kind, path)
    x = da.from_array(v, chunks=250)

    def check():
        if scheduler == "threads":
            first = x[:250].compute(scheduler="threads")
            assert (first == np.arange(250.0)).all(), first
            f.close()  # the user's file is closed: reads reopen it by name
            assert (x[:250].compute(scheduler="threads") == np.arange(250.0)).all()
        else:
            for _ in range(2):  # the file opened by name, twice
                assert (x[:250].compute() == np.arange(250.0)).all()
            f.close()
        if where == "same":
            write(kind, path, 1)
        else:
            subprocess.run([sys.executable, "-c", writer + f"\\nwrite({kind!r}, {path!r}, 1)\\n"], check=True)
        again = x.compute(scheduler="threads") if scheduler == "threads" else x.compute()
        expected = read(kind, path)
        assert expected[0] == 10_000.0
        assert (again == expected).all(), (again[:5], expected[:5])

    if scheduler == "threads":
        check()
    else:
        with LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as c, Client(c):
            check()
    print("OK")
''')


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scheduler", ["threads", "inprocess-cluster"])
@pytest.mark.parametrize("where", ["same", "subprocess"])
def test_reread_after_rewrite_locking_off(kind, scheduler, where, tmp_path):
    """The whole scenario in a process with HDF5 locking off: read, rewrite the file (from the
    reading process or another), read again: the new file's values."""
    r = subprocess.run(
        [sys.executable, "-c", SCENARIO, kind, _path(kind, tmp_path), scheduler, where, WRITER],
        env=UNLOCKED, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


@pytest.fixture(scope="module")
def unlocked_cluster():
    """One single-thread worker process with HDF5 locking off: it keeps files open between
    reads, so reuse checks the file's identity."""
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="2GiB", env={"HDF5_USE_FILE_LOCKING": "FALSE"}) as cluster:
        yield cluster


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["client", "subprocess"])
def test_worker_process_rereads_rewritten_file(kind, where, unlocked_cluster, tmp_path):
    path = _path(kind, tmp_path)
    write(kind, path, 0)
    f, v = opened(kind, path)
    x = da.from_array(v, chunks=CHUNK)
    with Client(unlocked_cluster) as client:
        for _ in range(2):
            np.testing.assert_array_equal(x.compute(), np.arange(N, dtype="f8"))
        f.close()
        if where == "client":
            write(kind, path, 1)
        else:
            _rewrite_in_subprocess(kind, path)
        expected = read(kind, path)
        assert expected[0] == 10_000.0
        np.testing.assert_array_equal(x.compute(), expected)
        np.testing.assert_array_equal(x[CHUNK:2 * CHUNK].compute(), expected[CHUNK:2 * CHUNK])

        def kept():
            from dask_tra.array import lazy
            return len(lazy._HANDLES.open)

        assert max(client.run(kept).values()) >= 1  # the worker did keep the file open (the premise)


@pytest.fixture(scope="module")
def inprocess_cluster():
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster:
        yield cluster


@pytest.mark.parametrize("kind", KINDS)
def test_file_rewritable_after_compute_in_same_process(kind, inprocess_cluster, tmp_path):
    """After a compute whose workers live in this process, the file is intact, and the user can
    rewrite it (with either library: the other one's HDF5 takes its own file lock) and read the
    new file."""
    path = _path(kind, tmp_path)
    write(kind, path, 0)
    f, v = opened(kind, path)
    x = da.from_array(v, chunks=CHUNK)
    with Client(inprocess_cluster):
        np.testing.assert_array_equal(x.compute(), np.arange(N, dtype="f8"))
        f.close()
        size = os.path.getsize(path)
        np.testing.assert_array_equal(read(kind, path), np.arange(N, dtype="f8"))  # intact
        assert os.path.getsize(path) == size
        other = netCDF4.Dataset(path, "w") if kind == "h5py" else h5py.File(path, "w")
        other.close()
        write(kind, path, 1)
        expected = read(kind, path)
        assert expected[0] == 10_000.0
        np.testing.assert_array_equal(x.compute(), expected)


def test_persisted_memmap_blocks_do_not_follow_the_file(inprocess_cluster, tmp_path):
    """A memmap block read is a copy: rewriting the file after ``persist`` leaves the persisted
    values as read, and a new array reads the new file."""
    path = str(tmp_path / "m.dat")
    np.arange(N, dtype="f8").tofile(path)
    x = da.from_array(np.memmap(path, dtype="f8", mode="r", shape=(N,)), chunks=CHUNK)
    with Client(inprocess_cluster):
        y = x.persist()
        np.testing.assert_array_equal(y.compute(), np.arange(N, dtype="f8"))
        with open(path, "r+b") as fh:  # rewritten in place
            fh.write((np.arange(N, dtype="f8") + 10_000.0).tobytes())
        np.testing.assert_array_equal(y.compute(), np.arange(N, dtype="f8"))
        z = da.from_array(np.memmap(path, dtype="f8", mode="r", shape=(N,)), chunks=CHUNK)
        np.testing.assert_array_equal(z.compute(), np.arange(N, dtype="f8") + 10_000.0)
