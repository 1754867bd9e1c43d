"""Lazy reads and per-block writes: h5py, zarr, netCDF4, memmap, npy stacks, delayed values.

Reads are counted with ``Counting``, a wrapper around the real on-disk array that records every
read (its region, and the worker that made it) in a log file, so reads made in worker
processes are counted too.
"""
import math
import os
import time

import dask
import dask.array
import numpy as np
import pytest

import dask_tra.array as da
from dask_tra.array.io import Reopen
from dask_tra.ia.nodes import Placed
from dask_tra.optimizer import evaluate_cost
from dask_tra.runtime.sources import LazyArraySource

h5py = pytest.importorskip("h5py")
zarr = pytest.importorskip("zarr")
netCDF4 = pytest.importorskip("netCDF4")

SHAPE, CHUNKS = (400, 300), (100, 100)  # 4 x 3 = 12 blocks; the last column of blocks is full


class Counting:
    """An array-like that logs each read ``(region, worker)`` to ``log`` and reads ``inner``."""

    def __init__(self, inner, log):
        self.inner, self.log = inner, str(log)
        self.shape, self.dtype, self.ndim = tuple(inner.shape), np.dtype(inner.dtype), len(inner.shape)

    def __getitem__(self, box):
        try:
            from distributed import get_worker
            who = get_worker().address
        except (ImportError, ValueError):
            who = "local"
        with open(self.log, "a") as f:
            f.write(f"{tuple((s.start, s.stop) for s in box)}|{who}\n")
        return self.inner[box]


def reads(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [(eval(r), w) for r, w in (line.strip().split("|") for line in f)]


@pytest.fixture
def data():
    return np.random.default_rng(0).standard_normal(SHAPE)


def _stored(kind, path, data):
    """The on-disk array of ``kind`` holding ``data`` (chunked like CHUNKS)."""
    if kind == "h5py":
        with h5py.File(path / "d.h5", "w") as f:
            f.create_dataset("x", data=data, chunks=CHUNKS)
        return h5py.File(path / "d.h5", "r")["x"]
    if kind == "zarr":
        z = zarr.create_array(str(path / "d.zarr"), shape=data.shape, dtype=data.dtype, chunks=CHUNKS)
        z[...] = data
        return z
    ds = netCDF4.Dataset(path / "d.nc", "w")
    ds.createDimension("a", data.shape[0])
    ds.createDimension("b", data.shape[1])
    ds.createVariable("x", "f8", ("a", "b"), chunksizes=CHUNKS)[:] = data
    ds.close()
    return netCDF4.Dataset(path / "d.nc", "r").variables["x"]


KINDS = ["h5py", "zarr", "netcdf4"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("index, blocks", [
    ((slice(0, 100), slice(0, 100)), 1),
    ((slice(150, 260), slice(None)), 6),
    ((-1, slice(10, 290, 7)), 3),
    (([390, 5, 120], slice(250, 40, -3)), 9),
])
def test_slicing_reads_only_the_blocks_it_needs(tmp_path, data, kind, index, blocks):
    log = tmp_path / "reads.log"
    x = da.from_array(Counting(Reopen(_stored(kind, tmp_path, data)) if kind != "zarr"
                               else _stored(kind, tmp_path, data), log), chunks=CHUNKS)
    assert reads(log) == []  # building the array reads nothing
    y = x[index]
    np.testing.assert_array_equal(y.compute(scheduler="sync"), data[index])
    got = reads(log)
    assert len(got) == blocks, got
    assert len({r for r, _ in got}) == blocks  # each block once
    for region, _ in got:  # whole stored blocks, never the whole array
        assert all(b - a <= c for (a, b), c in zip(region, CHUNKS))


@pytest.mark.parametrize("index, box", [
    ((slice(150, 260), slice(None)), ((150, 260), (0, 300))),
    ((slice(30, 60), slice(120, 121)), ((30, 60), (120, 121))),
    ((7, slice(10, 290, 7)), ((7, 8), (10, 284))),
    ((slice(310, 220, -2), 299), ((222, 311), (299, 300))),
])
def test_slices_read_only_the_elements_between_their_ends(tmp_path, data, index, box):
    """A slice or an integer reads the span it covers, not the whole blocks around it (as dask's
    getitem on a lazily indexed array): a month of daily data is a month's bytes."""
    log = tmp_path / "reads.log"
    x = da.from_array(Counting(Reopen(_stored("h5py", tmp_path, data)), log), chunks=CHUNKS)
    y = x[index]
    np.testing.assert_array_equal(y.compute(scheduler="sync"), data[index])
    assert y.chunks == dask.array.from_array(data, chunks=CHUNKS)[index].chunks
    got = [r for r, _ in reads(log)]
    assert len(got) == len(set(got))  # each part once
    lo = tuple(min(r[i][0] for r in got) for i in range(2))
    hi = tuple(max(r[i][1] for r in got) for i in range(2))
    assert tuple(zip(lo, hi)) == box
    assert sum(math.prod(b - a for a, b in r) for r in got) == math.prod(b - a for a, b in box)


def test_index_arrays_into_one_input_read_each_block_once(tmp_path, data):
    """xarray's groupby picks each group's positions with an index array: the groups' gathers
    share the input's reads, one per block touched, never a read per group."""
    log = tmp_path / "reads.log"
    x = da.from_array(Counting(Reopen(_stored("h5py", tmp_path, data)), log), chunks=CHUNKS)
    y = x[[0, 150]].sum(axis=0) + x[[5, 160, 395]].sum(axis=0)
    expected = data[[0, 150]].sum(axis=0) + data[[5, 160, 395]].sum(axis=0)
    np.testing.assert_allclose(y.compute(scheduler="sync"), expected)
    got = [r for r, _ in reads(log)]
    assert len(got) == len(set(got)) == 3 * 3  # row blocks 0, 1, 3, each column block, once


def test_building_and_planning_read_nothing_then_each_planned_read_happens_once(tmp_path, data):
    log = tmp_path / "reads.log"
    x = da.from_array(Counting(Reopen(_stored("h5py", tmp_path, data)), log), chunks=CHUNKS)
    y = (x - x.mean(axis=0)).std()
    dict(y.__dask_graph__())  # the graph, planned and emitted
    assert reads(log) == []
    np.testing.assert_allclose(y.compute(scheduler="sync"), (data - data.mean(0)).std())
    got = [r for r, _ in reads(log)]
    planned = _input_sites(y, by_site=True)
    assert set(got) == {r for r, _ in planned}  # every block, each at the sites the plan reads it
    assert len(got) == len(set(planned))  # once per site: two placements of a block on a site share one read


def _input_sites(y, by_site=False):
    """[(block region, worker address)] of every read the plan makes (a block placed on several
    sites is read on each)."""
    p, where = y.planned()
    out = []
    for node in p.root.walk():
        src = y.sources.get(node.input.name) if isinstance(node, Placed) else None
        if isinstance(src, LazyArraySource):
            for key, copies in node.copies.items():
                _, _, box, _ = src.task(key)
                out += [(tuple((s.start, s.stop) for s in box),
                         site if by_site else where.workers and where.workers[site]) for site, _ in copies]
    return out


# HDF5 writes first without a Client (the module's cluster fixture stays up once started)
@pytest.mark.parametrize("on_cluster", [False, True])
def test_store_into_h5py_with_regions(request, tmp_path, data, on_cluster):
    if on_cluster:
        request.getfixturevalue("client")
    x = da.from_array(data[:250, :120], chunks=(60, 50))
    x1 = da.from_array(data[:250, :120] + 1, chunks=(40, 70))
    with h5py.File(tmp_path / "o.h5", "w") as f:
        d = f.create_dataset("y", shape=SHAPE, dtype="f8", fillvalue=-7.0)
        da.store(x, d, regions=(slice(100, 350), slice(30, 150)))
        if on_cluster:
            da.store(x1, d, regions=(slice(0, 250), slice(0, 120)))
        else:
            stored = da.store(x1, d, regions=(slice(0, 250), slice(0, 120)), return_stored=True,
                              compute=False)
            assert (d[:250, :120] != data[:250, :120] + 1).all()  # not yet
            np.testing.assert_allclose(stored.compute(), data[:250, :120] + 1)
        expected = np.full(SHAPE, -7.0)
        expected[100:350, 30:150] = data[:250, :120]
        expected[:250, :120] = data[:250, :120] + 1
        np.testing.assert_array_equal(d[...], expected)
    with h5py.File(tmp_path / "o.h5", "w") as f:
        d = f.create_dataset("y", shape=SHAPE, dtype="f8")
        with pytest.raises(ValueError, match="does not match target shape"):
            da.store(x, d)


@pytest.mark.parametrize("on_cluster", [False, True])
def test_to_hdf5_writes_every_dataset(request, tmp_path, data, on_cluster):
    if on_cluster:
        request.getfixturevalue("client")
    x = da.from_array(data, chunks=(130, 70))
    da.to_hdf5(tmp_path / "o.h5", {"/a": x, "/g/b": x[::2] * 2})
    with h5py.File(tmp_path / "o.h5", "r") as f:
        np.testing.assert_array_equal(f["a"][...], data)
        np.testing.assert_array_equal(f["g/b"][...], data[::2] * 2)
        assert f["a"].chunks == (130, 70)


@pytest.mark.parametrize("kind", KINDS)
def test_reads_run_on_the_worker_the_plan_pins_them_to(client, tmp_path, data, kind):
    log = tmp_path / "reads.log"
    stored = _stored(kind, tmp_path, data)
    x = da.from_array(Counting(Reopen(stored) if kind != "zarr" else stored, log), chunks=CHUNKS)
    y = (x[120:330] * 2).sum(axis=1)
    np.testing.assert_allclose(y.compute(), (data[120:330] * 2).sum(axis=1))
    got = reads(log)
    assert sorted(got) == sorted(_input_sites(y))  # each read on the worker the plan pins it to
    assert len({r for r, _ in got}) == 9  # rows 120:330 lie in block rows 1-3: 3 x 3 blocks
    assert len({w for _, w in got}) > 1  # spread over the cluster


def _slice_means(x):
    """xarray's resample of a daily file: each period a slice of the stored array, averaged."""
    return da.stack([x[i : i + 50].mean(axis=0) for i in range(0, 400, 50)])


def test_slices_of_a_stored_array_are_planned_where_their_blocks_would_be(tmp_path, data):
    """Each slice is an input of its own, its blocks numbered from 0 (it reads only its rows).
    On a cluster its work starts on the site its first block has in the whole array's layout
    (``Input.home``), so the periods spread over the workers as the blocks do; before, every
    one-block slice went to the first worker."""
    x = da.from_array(Counting(Reopen(_stored("h5py", tmp_path, data)), tmp_path / "r.log"), chunks=(100, -1))
    y = _slice_means(x)
    p, _ = y.planned(4)
    sites = sorted(site for n in p.root.walk() if isinstance(n, Placed) for cs in n.copies.values() for site, _ in cs)
    assert sites == [0, 0, 1, 1, 2, 2, 3, 3]  # row blocks 0-3 on sites 0-3, two periods each
    assert p.cost.bytes_moved == evaluate_cost(p.root).bytes_moved  # the placement is costed as built
    np.testing.assert_allclose(y.compute(scheduler="sync"), data.reshape(8, 50, 300).mean(axis=1))


def test_a_plan_made_for_one_slice_is_not_reused_for_another_starting_elsewhere(tmp_path, data):
    """The plan cache tells slices of one shape apart by where they start."""
    x = da.from_array(Counting(Reopen(_stored("h5py", tmp_path, data)), tmp_path / "r.log"), chunks=(100, -1))
    for i, site in ((0, 0), (200, 2), (300, 3)):
        p, _ = x[i : i + 50].mean(axis=0).planned(4)
        assert [t for n in p.root.walk() if isinstance(n, Placed) for cs in n.copies.values() for t, _ in cs] == [site]
    p, _ = (x[200:250] - x[350:400]).planned(4)  # two parts joined: made where the first starts
    assert {t for n in p.root.walk() if isinstance(n, Placed) for cs in n.copies.values() for t, _ in cs} == {2}
    assert p.cost.bytes_moved == 0


def test_slices_of_a_stored_array_are_read_on_every_worker(client, tmp_path, data):
    log = tmp_path / "reads.log"
    x = da.from_array(Counting(Reopen(_stored("netcdf4", tmp_path, data)), log), chunks=(100, -1))
    y = _slice_means(x)
    np.testing.assert_allclose(y.compute(), data.reshape(8, 50, 300).mean(axis=1))
    got = reads(log)
    assert sorted(got) == sorted(_input_sites(y))  # each read on the worker the plan pins it to
    assert len({w for _, w in got}) == 4


def test_h5py_netcdf_and_memmap_inputs_travel_by_file_name(client, tmp_path, data):
    h5 = _stored("h5py", tmp_path, data)
    nc = _stored("netcdf4", tmp_path, data)
    mm = np.lib.format.open_memmap(tmp_path / "m.npy", mode="w+", dtype=data.dtype, shape=data.shape)
    mm[:] = data
    mm.flush()
    mm = np.load(tmp_path / "m.npy", mmap_mode="r")
    for src in (h5, nc, mm):
        x = da.from_array(src, chunks=(70, 110))
        np.testing.assert_allclose((x.T @ x).compute(), data.T @ data, rtol=1e-10)
        assert len(dask.base.tokenize(x.__dask_graph__())) and all(  # no array data in the graph
            not isinstance(v, np.ndarray) for v in _graph_values(x))


def _graph_values(x):
    from dask.task_spec import DataNode
    return [t.value for t in dict(x.__dask_graph__()).values() if isinstance(t, DataNode)]


def test_auto_chunks_start_from_the_stored_chunks_like_dask(tmp_path, data):
    import dask.array as dsk
    z = _stored("zarr", tmp_path, data)
    assert da.from_array(z).chunks == dsk.from_array(z).chunks
    assert da.from_array(z, chunks=(-1, "auto")).chunks == dsk.from_array(z, chunks=(-1, "auto")).chunks
    assert da.from_zarr(str(tmp_path / "d.zarr")).chunks == ((100,) * 4, (100,) * 3)
    np.testing.assert_array_equal(da.from_zarr(str(tmp_path / "d.zarr"), chunks=(130, 70)).compute(), data)


# ---------------------------------------------------------------- writes

def test_to_zarr_from_zarr_round_trip_on_a_cluster(client, tmp_path, data):
    x = da.from_array(data, chunks=(90, 120))
    y = np.sin(x) + 1
    da.to_zarr(y, str(tmp_path / "out.zarr"))
    back = da.from_zarr(str(tmp_path / "out.zarr"))
    assert back.chunks == y.chunks
    np.testing.assert_allclose(back.compute(), np.sin(data) + 1)
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...], np.sin(data) + 1)


def test_to_zarr_compute_false_writes_only_when_computed(client, tmp_path, data):
    x = da.from_array(data, chunks=(90, 120))
    pending = da.to_zarr(x * 3, str(tmp_path / "out.zarr"), compute=False)
    z = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")
    assert z.fill_value == 0 and np.array_equal(z[...], np.zeros(SHAPE))  # created (zarr v3's fill), nothing written
    counts = dask.compute(pending)[0]
    assert counts.shape == x.numblocks and counts.sum() == data.size
    np.testing.assert_allclose(z[...], data * 3)


class _FailsOnLastBlock:
    """A kernel argument: raises while the block starting at ``row`` is written."""

    def __init__(self, row):
        self.row = row

    def __call__(self, block, block_info=None):
        if block_info[None]["array-location"][0][0] == self.row:
            raise RuntimeError("disk full")
        return block


def test_to_zarr_marks_a_complete_write_and_leaves_a_failed_one_marked_incomplete(client, tmp_path, data):
    x = da.from_array(data, chunks=(100, 150))
    da.to_zarr(x, str(tmp_path / "ok.zarr"), complete_attr="complete")
    ok = zarr.open_array(str(tmp_path / "ok.zarr"), mode="r")
    assert ok.attrs["complete"] is True
    np.testing.assert_array_equal(ok[...], data)
    failing = x.map_blocks(_FailsOnLastBlock(300), dtype=x.dtype)
    with pytest.raises(RuntimeError, match="disk full"):
        da.to_zarr(failing, str(tmp_path / "bad.zarr"), complete_attr="complete")
    bad = zarr.open_array(str(tmp_path / "bad.zarr"), mode="r")
    assert bad.attrs["complete"] is False  # opens and reads, but says it is incomplete
    with pytest.raises(ValueError, match="needs compute=True"):
        da.to_zarr(x, str(tmp_path / "lazy.zarr"), complete_attr="complete", compute=False)
    assert not (tmp_path / "lazy.zarr").exists()  # refused before anything was created


def test_to_zarr_refuses_irregular_chunks(tmp_path, data):
    with pytest.raises(ValueError, match="irregular chunking"):
        da.to_zarr(da.from_array(data, chunks=((100, 50, 250), 300)), str(tmp_path / "o.zarr"))


def test_blocks_are_written_where_they_are_computed(client, tmp_path, data):
    src = _stored("zarr", tmp_path, data)
    rlog, wlog = tmp_path / "r.log", tmp_path / "w.log"
    out = zarr.create_array(str(tmp_path / "w.zarr"), shape=data.shape, dtype=data.dtype, chunks=CHUNKS)
    x = da.from_array(Counting(src, rlog), chunks=CHUNKS)
    da.store(x * 2 + 1, CountingWriter(out, wlog), lock=False)
    np.testing.assert_allclose(out[...], data * 2 + 1)
    read_at, written_at = dict(reads(rlog)), dict(reads(wlog))
    assert len(written_at) == 12 and written_at == read_at


class CountingWriter:
    """A write target logging each write ``(region, worker)``; ``fail_at`` makes one write fail."""

    def __init__(self, inner, log, fail_at=None):
        self.inner, self.log, self.fail_at = inner, str(log), fail_at
        self.shape, self.dtype = tuple(inner.shape), inner.dtype

    def __setitem__(self, box, value):
        region = tuple((s.start, s.stop) for s in box)
        if region == self.fail_at:
            raise OSError(f"disk full writing {region}")
        self.inner[box] = value
        Counting(self.inner, self.log)[box]  # log it (a read of what was just written)


def test_a_failed_write_leaves_the_blocks_already_written_intact(client, tmp_path, data):
    before = np.random.default_rng(1).standard_normal(SHAPE)
    z = zarr.create_array(str(tmp_path / "f.zarr"), shape=SHAPE, dtype="f8", chunks=CHUNKS)
    z[...] = before
    log = tmp_path / "w.log"
    target = CountingWriter(z, log, fail_at=((200, 300), (100, 200)))
    x = da.from_array(data, chunks=CHUNKS)
    with pytest.raises(OSError, match="disk full"):
        da.store(x, target)
    done = {r for r, _ in reads(log)}  # writes finished when the error reached us
    assert 0 < len(done) < 12
    time.sleep(0.5)  # writes still running on other workers may finish (the store was abandoned)
    after = z[...]
    # which of the other blocks are written depends on timing; every block is either wholly new
    # or wholly old (none half written): the two sets split the 12 blocks
    blocks = {((100 * i, 100 * i + 100), (100 * j, 100 * j + 100)) for i, j in np.ndindex(4, 3)}

    def same(a, block):
        (r0, r1), (c0, c1) = block
        return np.array_equal(after[r0:r1, c0:c1], a[r0:r1, c0:c1])

    new = {b for b in blocks if same(data, b)}
    old = {b for b in blocks if same(before, b)}
    assert not new & old and new | old == blocks
    assert done <= new  # a block written before the failure is still there
    assert ((200, 300), (100, 200)) in old  # the failed write wrote nothing


def test_npy_stack_round_trip_and_dask_reads_it(tmp_path, data):
    import dask.array as dsk
    x = da.from_array(data, chunks=((150, 50, 200), 70))
    da.to_npy_stack(str(tmp_path / "s"), x * 2, axis=0)
    assert sorted(os.listdir(tmp_path / "s")) == ["0.npy", "1.npy", "2.npy", "info"]
    back = da.from_npy_stack(str(tmp_path / "s"))
    assert back.chunks == ((150, 50, 200), (300,))
    np.testing.assert_array_equal(back.compute(), data * 2)
    np.testing.assert_array_equal(dsk.from_npy_stack(str(tmp_path / "s")).compute(), data * 2)
    dsk.to_npy_stack(str(tmp_path / "d"), dsk.from_array(data, chunks=(30, 300)), axis=1)
    np.testing.assert_array_equal(da.from_npy_stack(str(tmp_path / "d")).compute(), data)


def test_from_delayed_and_to_delayed(data):
    from dask import delayed
    v = delayed(np.cumsum)(data, axis=0)
    x = da.from_delayed(v, shape=data.shape, dtype=data.dtype)
    assert x.chunks == ((400,), (300,))
    np.testing.assert_allclose((x[10:20] + 1).compute(), np.cumsum(data, axis=0)[10:20] + 1)
    with pytest.raises(ValueError, match="dtype"):
        da.from_delayed(v, shape=data.shape)
    y = da.from_array(data, chunks=(150, 200)) * 2
    parts = da.to_delayed(y)
    assert parts.shape == (3, 2)
    np.testing.assert_array_equal(parts[1, 1].compute(), data[150:300, 200:] * 2)
    np.testing.assert_array_equal(dask.compute(*parts.ravel())[4], data[300:, :200] * 2)


def test_from_delayed_on_a_cluster(client, data):
    from dask import delayed
    x = da.from_delayed(delayed(np.add)(data, 1), shape=data.shape, dtype=data.dtype)
    np.testing.assert_allclose(x.rechunk((100, 150)).sum(axis=0).compute(), (data + 1).sum(axis=0))


@pytest.mark.parametrize("chunks, want", [(True, (130, 70)), (None, None), ((10, 20), (10, 20))])
def test_to_hdf5_chunks_as_asked(tmp_path, data, chunks, want):
    """An explicit chunks tuple was dropped (the dataset was written contiguous)."""
    x = da.from_array(data, chunks=(130, 70))
    da.to_hdf5(tmp_path / "c.h5", "/x", x, chunks=chunks)
    with h5py.File(tmp_path / "c.h5", "r") as f:
        np.testing.assert_array_equal(f["x"][...], data)
        assert f["x"].chunks == want
