"""The time objective's rates: no surprise work (planning runs no task), calibration only when
asked, stored on the scheduler and reused by every client of the cluster (issue 31 item 4);
the demo's dashboard link only when the dashboard works (item 5).

One LocalCluster for the module (processes, random ports, a dashboard on a random port).
"""
import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
from dask.utils import key_split
from distributed import Client, LocalCluster, get_task_stream

import dask_tra as dt
from dask_tra.runtime import plugin, rates, session
from dask_tra.runtime.sites import current_sites
from dask_tra.optimizer import Rates
from dask_tra.demo import dashboard_link


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="2GiB") as c:
        yield c


def _transitions(dask_scheduler):
    return dask_scheduler.transition_counter


def _quiet(client):
    """Wait until the scheduler holds no task (earlier tests' keys released and forgotten)."""
    client.sync(_until_empty, client)


async def _until_empty(client):
    import asyncio

    for _ in range(600):
        if not await client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
            return
        await asyncio.sleep(0.05)


def _calibrations(ts) -> list:
    return [t for t in ts.data if key_split(t["key"]) == rates.PREFIX]


def test_explain_on_a_fresh_client_runs_no_task(cluster):
    """A new Client, nothing kept in this process: explain() asks the scheduler (no task), and
    the scheduler makes no transition at all; nor does a compute start a background probe."""
    rates.forget()
    with Client(cluster, set_as_default=False) as c, c.as_current():
        _quiet(c)
        before = c.run_on_scheduler(_transitions)
        x = dt.random.random((400, 400), chunks=100, seed=4)
        y = dt.from_array(np.arange(160_000.0).reshape(400, 400), chunks=100)
        text = str((x @ y).sum(0).explain())
        assert "dask_tra plan on 4 workers" in text
        assert c.run_on_scheduler(_transitions) == before  # not one task created, run or released
        with get_task_stream(c) as ts:
            np.testing.assert_allclose((x @ x).compute(), x.compute() @ x.compute())
        assert ts.data and not _calibrations(ts)  # no probe after the first compute either
        assert rates.PREFIX not in c.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))


def test_a_second_client_reuses_the_stored_rates(cluster):
    """Client A calibrates (one dashboard prefix, its transfers no plan's bytes); client B, a new
    Client with this process's cache cleared, and a new Python process plan with A's rates and
    run no calibration task."""
    with Client(cluster, set_as_default=False) as a:
        with dt.diagnostics.measure(a) as m, get_task_stream(a) as ts:
            measured = dt.calibrate(a)
        assert set(measured) == set(rates.MEASURED)
        assert len(_calibrations(ts)) > 300 and len(_calibrations(ts)) == len(ts.data)  # every key: one prefix
        assert m.bytes_moved > 0 and m.other_bytes == m.bytes_moved  # the rings' 16 MiB blocks, no plan's
        rates.forget()
        with Client(cluster, set_as_default=False) as b, b.as_current(), get_task_stream(b) as ts:
            x = dt.random.random((400, 400), chunks=100, seed=4)
            report = (x @ x).explain()
            breakdown = report.breakdown
            assert "estimated for an idle cluster, from this cluster's calibration\n" in str(report)
            assert rates.current_rates(current_sites()) == Rates(**measured)
            assert rates.rate_sources(current_sites()) == dict.fromkeys(rates.MEASURED, "calibrated")
        assert not _calibrations(ts) and not ts.data
        assert breakdown["transfer_s"] == pytest.approx(breakdown["busiest_site_bytes"] / measured["bandwidth"])
        assert breakdown["scheduling_s"] == pytest.approx(breakdown["tasks"] * measured["task_overhead"])
        assert breakdown["compute_s"] == pytest.approx(breakdown["busiest_site_flops"] / measured["flop_rate"])
        # a new Python process connecting to the same cluster
        script = textwrap.dedent(f"""
            import json
            from distributed import Client, get_task_stream
            import dask_tra as dt
            from dask_tra.runtime import rates
            from dask_tra.runtime.sites import current_sites
            with Client({cluster.scheduler_address!r}) as c, get_task_stream(c) as ts:
                (dt.random.random((400, 400), chunks=100, seed=4) @ dt.ones((400, 4), chunks=100)).explain()
                r = rates.current_rates(current_sites())
            print(json.dumps([r.bandwidth, r.task_overhead, r.flop_rate, len(ts.data)]))
        """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240,
                             env={**os.environ, "PYTHONWARNINGS": "ignore"})
        assert out.returncode == 0, out.stderr
        *got, tasks = json.loads(out.stdout.strip().splitlines()[-1])
        assert got == pytest.approx([measured[k] for k in rates.MEASURED]) and tasks == 0


def test_a_new_calibration_reaches_other_clients_at_their_next_plan(cluster):
    with Client(cluster, set_as_default=False) as b, b.as_current():
        x = dt.random.random((400, 400), chunks=100, seed=4)
        (x @ x).explain()
        first = rates.current_rates(current_sites())
        with Client(cluster, set_as_default=False) as a:  # another client stores new rates
            session.store_rates(a, {"bandwidth": 1e6, "task_overhead": 0.5, "flop_rate": 1e8}, [])
        assert rates.current_rates(current_sites()) == first  # kept until the next plan asks
        (x @ x.T).explain()  # the placement query's reply carries the new calibration
        assert rates.current_rates(current_sites()) == Rates(1e6, 0.5, 1e8)
        with dt.config.set(bandwidth=1e3, task_overhead=1e-3, flop_rate=1e9):  # config still wins
            assert rates.current_rates(current_sites()) == Rates(1e3, 1e-3, 1e9)
            assert set(rates.rate_sources(current_sites()).values()) == {"config"}
        with dt.config.set(probe_rates=False):  # the cluster's rates not used: defaults
            assert rates.current_rates(current_sites()) == Rates()


def test_forged_rates_are_refused_and_change_nothing(cluster):
    with Client(cluster, set_as_default=False) as c:
        session.ensure_installed(c)
        ask = getattr(c.scheduler, plugin.RATES_OP)
        before = c.sync(ask)
        for bad in [
            dict(store={"bandwidth": -1.0}),
            dict(store={"bandwidth": float("nan")}),
            dict(store={"bandwidth": True}),
            dict(store={"bandwidth": "fast"}),
            dict(store={"evil": 1.0}),
            dict(store=[1.0]),
            dict(store={}),
            dict(store={"bandwidth": 1e9}, workers=5),
            dict(store={"bandwidth": 1e9}, workers=[1, 2]),
            dict(store={"bandwidth": 1e9}, workers=["w"] * (plugin.MAX_WORKERS + 1)),
            dict(client="someone-else"),
        ]:
            assert "error" in c.sync(ask, **bad), bad
        assert c.sync(ask) == before
        with pytest.raises(ValueError, match="refused the rates"):
            session.store_rates(c, {"flop_rate": 0}, [])


def test_the_scheduler_bandwidth_estimate_is_used_when_nothing_is_calibrated():
    """Without a calibration, the median of what workers measured on their transfers; kept as
    first seen (a plan explained is the plan computed), replaced by a calibration."""
    sched = types.SimpleNamespace(id="Scheduler-test", bandwidth_workers={})
    p = plugin.DaskTraPlugin()
    p.scheduler, p.calibration, p.generation = sched, None, 0
    assert p.rates_reply()["bandwidth"] is None  # no transfer measured: nothing known
    sched.bandwidth_workers.update({("a", "b"): 2e8, ("b", "a"): 3e8, ("a", "c"): 9e8})
    client = types.SimpleNamespace(scheduler=types.SimpleNamespace(address="tcp://test:1"), status="running")
    where = types.SimpleNamespace(client=client)
    try:
        rates.learn("tcp://test:1", p.rates_reply())
        assert rates.current_rates(where) == Rates(bandwidth=3e8)
        assert rates.rate_sources(where)["bandwidth"] == "scheduler"
        sched.bandwidth_workers[("c", "a")] = 1e9
        rates.learn("tcp://test:1", p.rates_reply())  # drifted: still the first estimate
        assert rates.current_rates(where).bandwidth == 3e8
        assert "error" not in p.handle_rates(store={"task_overhead": 2e-3}, workers=["a", "b"])
        rates.learn("tcp://test:1", p.rates_reply())  # a calibration: taken
        assert rates.current_rates(where) == Rates(bandwidth=p.rates_reply()["bandwidth"],
                                                                task_overhead=2e-3)
        rates.learn("tcp://test:1", {"scheduler": "x", "generation": 9, "calibrated": {"bandwidth": -1}})
        assert rates.current_rates(where).task_overhead == 2e-3  # a malformed reply is not kept
    finally:
        rates.forget(client)


def test_the_demo_shows_the_dashboard_link_only_when_it_works(cluster):
    with Client(cluster, set_as_default=False) as c:
        link = dashboard_link(c)
        try:
            import distributed.dashboard.scheduler  # noqa: F401
        except ImportError:  # no bokeh (or too old): distributed serves "Dask needs bokeh>=3.1.0"
            assert link is None
        else:
            assert link == c.dashboard_link
    served = types.SimpleNamespace(dashboard_link="http://127.0.0.1:1/status", run_on_scheduler=lambda f: True)
    assert dashboard_link(served) is None  # the link does not answer from here
    unserved = types.SimpleNamespace(dashboard_link=c.dashboard_link, run_on_scheduler=lambda f: False)
    assert dashboard_link(unserved) is None  # the scheduler serves no dashboard (or no bokeh)


def test_a_scheduler_that_cannot_answer_gives_the_defaults(monkeypatch):
    """A plugin of an older dask_tra registered first (the scheduler keeps it): no rates handler.
    Planning goes on with the defaults, asking once."""
    asked = []

    def refuse(client):
        asked.append(client)
        raise OSError("No handler dask_tra_rates found")
    monkeypatch.setattr(rates, "query_rates", refuse)
    client = types.SimpleNamespace(scheduler=types.SimpleNamespace(address="tcp://old:1"), status="running")
    where = types.SimpleNamespace(client=client)
    try:
        assert rates.current_rates(where) == Rates() and rates.current_rates(where) == Rates()
        assert len(asked) == 1
    finally:
        rates.forget(client)
