"""explain()'s HTML form: the text as HTML that wraps, and a picture of which worker holds each
block of each input, where a contraction sends its operands' blocks, and which worker computes
each output block (``dask_tra.array.planview`` on ``dask.array.svg``); ``visualize()`` writes it
to a file. Rendered in headless Chromium where one is installed."""
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

import dask_tra as dt
from dask_tra.backends.cluster import workers_info
from dask_tra.array.planview import palette
from dask_tra.optimizer import plan
from dask_tra.optimizer.blocks import block_grids
from dask_tra.optimizer.explain import register_html
from dask_tra.tra import Aggregate, Input, Join, split
from dask_tra.tra import kernels as K


@pytest.fixture(scope="module")
def matmul_sum():
    a = dt.random.uniform(-1, 1, (4000, 4000), chunks=(1000, 500), seed=1)
    b = dt.from_array(np.random.default_rng(0).random((4000, 2000)), chunks=(500, 500))
    return (a @ b).sum(0).explain(sites=4)


class _Figures(HTMLParser):
    """Each ``<figure class="dask-tra-grid">``: its role, caption text and block rects' attributes."""

    def __init__(self):
        super().__init__()
        self.figures, self.legend, self._in_caption, self._in_legend = [], [], False, 0
        self.patterns, self._pattern = {}, None  # pattern id -> its stripes' fills

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure" and a.get("class") == "dask-tra-grid":
            self.figures.append({"role": a["data-role"], "blocks": [], "caption": ""})
        elif tag == "pattern":
            self._pattern = self.patterns.setdefault(a["id"], [])
        elif tag == "rect" and self._pattern is not None:
            self._pattern.append(_fill(a))
        elif tag == "rect" and a.get("class") == "block":
            self.figures[-1]["blocks"].append(a)
        elif tag == "figcaption":
            self._in_caption = True
        elif tag == "div" and a.get("class") == "dask-tra-legend":
            self._in_legend = 1
        elif self._in_legend and tag == "span" and "background" in a.get("style", ""):
            self.legend.append(re.search(r"background: ([^;\"]+)", a["style"]).group(1))

    def handle_endtag(self, tag):
        if tag == "pattern":
            self._pattern = None
        elif tag == "figcaption":
            self._in_caption = False
        elif tag == "div" and self._in_legend:
            self._in_legend = 0

    def handle_data(self, data):
        if self._in_caption:
            self.figures[-1]["caption"] += data


def _parse(page):
    p = _Figures()
    p.feed(page)
    return p


def _fill(rect):
    return re.search(r"fill:([^;]+)", rect["style"]).group(1)


def test_one_coloured_cell_per_block_coloured_by_its_worker(matmul_sum):
    page = matmul_sum._repr_html_()
    p = _parse(page)
    colours = palette(4)
    assert p.legend == colours  # one colour per worker, named in the legend
    assert all(f"worker {i}" in page for i in range(4))
    by_role = {}
    for f in p.figures:
        by_role.setdefault(f["role"], []).append(f)
    # A is 4×8 blocks, B 8×4, the result 4: every block one rect, filled with its worker's colour
    assert [len(f["blocks"]) for f in by_role["input"]] == [32, 32]
    assert [len(f["blocks"]) for f in by_role["output"]] == [4]
    for f in p.figures:
        for rect in f["blocks"]:
            workers = [int(w) for w in rect["data-workers"].split(",")]
            if len(workers) == 1:
                assert _fill(rect) == colours[workers[0]]
            else:  # a stripe of each worker's colour
                assert p.patterns[re.fullmatch(r"url\(#(.+)\)", _fill(rect)).group(1)] == [colours[w] for w in workers]
            assert 0 < float(rect["width"]) and 0 < float(rect["height"])
    # the result's 4 blocks are computed on the 4 workers, one each
    assert sorted(_fill(r) for r in by_role["output"][0]["blocks"]) == sorted(colours)
    # the 3-D split copies each of B's blocks to 2 workers: one stripe per extra copy
    sent = by_role["sent"]
    assert len(sent) == 1 and "matmul: where array's blocks go" in sent[0]["caption"]
    assert all(len(r["data-workers"].split(",")) == 2 for r in sent[0]["blocks"])
    assert len(p.patterns) == 2  # B's rows go to workers {0, 2} or {1, 3}: one pattern each
    # A stays where it is made: said once, under its grid
    assert "matmul reads it where it is" in by_role["input"][0]["caption"]


def test_the_grids_are_where_the_plan_puts_each_block(matmul_sum):
    grids = {(g.role, g.label): g for g in matmul_sum.block_grids()}
    a, b, sent = grids["input", "random_uniform"], grids["input", "array"], grids["sent", "array"]
    assert a.numblocks == (4, 8) and a.shape == (4000, 4000) and a.chunks == ((1000,) * 4, (500,) * 8)
    assert b.numblocks == (8, 4) and b.shape == (4000, 2000)
    # every block on one worker, each worker holding a quarter of A
    assert all(len(s) == 1 for s in a.sites) and sorted(s[0] for s in a.sites) == [0] * 8 + [1] * 8 + [2] * 8 + [3] * 8
    for held, copies in zip(b.sites, sent.sites):  # B's blocks are copied from where they are
        assert set(held) < set(copies) and len(copies) == 2
    assert grids["output", "result"].sites == ((0,), (1,), (2,), (3,))


def test_the_html_text_wraps_and_says_what_the_text_says(matmul_sum):
    page = matmul_sum._repr_html_()
    assert "<pre" not in page and "white-space: pre" not in page
    words = re.sub(r"<[^>]+>", " ", page.split('<div style="margin-top')[0])
    import html

    for line in str(matmul_sum).splitlines():  # each line of the text, its spaces collapsed
        assert " ".join(line.split()) in " ".join(html.unescape(words).split()), line
    assert "<pre" in matmul_sum.view(detail="algebra")._repr_html_()  # the tree keeps its columns


def test_a_huge_grid_shows_its_first_blocks_and_says_so():
    x = dt.random.random((2000, 2000), chunks=10, seed=3)  # 200×200 blocks
    e = (x + 1).sum(0).explain(sites=3)
    grids = e.block_grids(limit=16)
    assert grids[0].numblocks == (200, 200) and len(grids[0].sites) == 16 * 16
    assert "the first 16×16 of 200×200 blocks" in grids[0].note
    page = e._repr_html_()
    assert "of 200×200 blocks" in page and page.count('<rect class="block"') < 2000


def test_workers_are_named_by_their_addresses():
    e = dt.random.random((40, 40), chunks=10, seed=3).sum(0).explain(sites=2)
    assert e.worker_names() == ["worker 0", "worker 1"]
    named = e.view(full=True)
    named.workers = ("tcp://10.0.0.1:4001", "tcp://10.0.0.2:4001")
    page = named._repr_html_()
    assert "tcp://10.0.0.1:4001" in page and "worker 0" not in page


def test_without_the_renderer_the_html_is_the_text():
    """The optimizer alone (no dask): the text as HTML, no picture."""
    t, _ = split(np.ones((4, 4)), (2, 2))
    p = plan(Aggregate(Join(Input("A", t), Input("B", t), [1], [0], K.matmul), [0, 2], K.add), 2)
    from dask_tra.array import planview

    register_html(None)
    try:
        page = p.explain._repr_html_()
        assert "dask-tra-explain-text" in page and "<svg" not in page
    finally:
        register_html(planview.render)
    page = p.explain._repr_html_()
    grids = block_grids(p)
    assert [g.label for g in grids if g.role == "input"] == ["A", "B"] and grids[-1].role == "output"
    assert page.count('<rect class="block"') == sum(g.nblocks for g in grids) == 4 * len(grids)


def test_visualize_writes_the_html_as_dask_does(matmul_sum, tmp_path):
    out = matmul_sum.visualize(str(tmp_path / "plan"))  # dask's convention: the extension is added
    page = (tmp_path / "plan.html").read_text()
    ids = re.compile(r"dask-tra-[0-9a-f]{12}")  # each drawing's own pattern ids (a page may show several)
    assert page.startswith("<!DOCTYPE html>") and ids.sub("", matmul_sum._repr_html_()) in ids.sub("", page)
    assert out is None or type(out).__name__ == "HTML"
    matmul_sum.visualize(str(tmp_path / "other.html"))
    assert (tmp_path / "other.html").exists() and not (tmp_path / "other.html.html").exists()
    with pytest.raises(ValueError, match="html"):
        matmul_sum.visualize(str(tmp_path / "plan"), format="png")
    assert not list(tmp_path.glob("*.png"))


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium installed")


_MEASURE = """<script>
document.title = JSON.stringify({
  width: document.documentElement.scrollWidth,
  blocks: document.querySelectorAll("svg rect.block").length,
  filled: Array.from(document.querySelectorAll("svg rect.block")).filter(
    r => !["none", "rgb(0, 0, 0)", ""].includes(getComputedStyle(r).fill)).length,
  svgs: document.querySelectorAll("figure.dask-tra-grid svg").length,
});
</script>"""


def test_rendered_in_chromium_it_fits_a_1000_pixel_window(matmul_sum, tmp_path):
    browser = _chromium()
    matmul_sum.visualize(str(tmp_path / "plan"))
    page = (tmp_path / "plan.html").read_text().replace("</body>", _MEASURE + "</body>")
    (tmp_path / "plan.html").write_text(page)
    run = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1000,800",
         "--dump-dom", (tmp_path / "plan.html").as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    found = re.search(r"<title>(.*?)</title>", run.stdout)
    assert found, run.stderr[-2000:]
    got = json.loads(found.group(1).replace("&quot;", '"'))
    assert got["width"] <= 1000, got  # nothing runs past the window: no horizontal scrolling
    assert got["blocks"] == 32 + 32 + 32 + 4 == got["filled"], got  # A, B, B as sent, the result
    assert got["svgs"] == 4


def test_on_a_client_the_picture_names_workers_by_address_and_is_where_blocks_are(client):
    """The legend names the workers by their addresses, and the worker drawn for each result
    block is the worker holding it once persisted (the report of that run, not asked before)."""
    from distributed import futures_of, wait

    a = dt.random.uniform(-1, 1, (400, 400), chunks=(100, 50), seed=1)
    b = dt.from_array(np.random.default_rng(0).random((400, 200)), chunks=(50, 50))
    y = (a @ b).sum(0)
    persisted = y.persist()
    wait(persisted)
    report = y.explain()
    workers = sorted(workers_info(client))
    assert report.worker_names() == workers
    page = report._repr_html_()
    assert all(w in page for w in workers) and "worker 0" not in page
    out = next(g for g in report.block_grids() if g.role == "output")
    who = client.who_has(futures_of(persisted))
    held = {key[1:]: set(sites) for key, sites in who.items()}
    for i, sites in enumerate(out.sites):
        assert {workers[t] for t in sites} == held[(i,)], (i, sites, held)


def test_inputs_of_one_name_are_numbered_and_each_operand_drawn_once():
    x = dt.random.random((40, 40), chunks=10, seed=3)
    w = dt.random.random((40, 40), chunks=10, seed=4)
    grids = (x @ w).explain(sites=2).block_grids()
    assert [g.label for g in grids if g.role == "input"] == ["random_random (1)", "random_random (2)"]
    grids = (x @ x).explain(sites=2).block_grids()  # one input read twice: its two placements
    assert len({(g.label, g.sites) for g in grids}) == len(grids)  # no grid drawn twice
    for g in grids:
        if g.role == "sent":
            assert g.caption.endswith(("(as its left operand)", "(as its right operand)")), g.caption
    x3 = dt.random.random((20, 20, 20), chunks=10, seed=3)
    (g,) = [g for g in x3.sum().explain(sites=2).block_grids() if g.role == "input"]
    assert g.numblocks == (2, 2, 2) and len(g.sites) == 4 and g.note == "blocks [0, :, :] of a 2×2×2 grid"
    assert x3.sum().explain(sites=2)._repr_html_().count('<rect class="block"') == 4 + 1


def test_a_plan_too_large_to_expand_is_drawn_from_its_costing(monkeypatch):
    """Past ``EXPAND`` tuples the IA plan is not built for the picture (a 200×200×200 product
    took minutes): inputs are drawn where their readers have them, exact where that is one
    worker a block, and said to be so where it is not."""
    from dask_tra.optimizer import blocks

    def make():
        a = dt.random.uniform(-1, 1, (400, 400), chunks=(100, 50), seed=1)
        b = dt.from_array(np.random.default_rng(0).random((400, 200)), chunks=(50, 50))
        return (a @ b).sum(0)

    exact = {(g.role, g.label): g for g in make().explain(sites=4).block_grids()}
    monkeypatch.setattr(blocks, "EXPAND", 0)
    y = make()
    costed = {(g.role, g.label): g for g in y.explain(sites=4).block_grids()}
    assert "roots" not in y.planned(4)[0].__dict__  # the IA plan was not built
    assert costed.keys() == exact.keys()
    for key, g in exact.items():
        if key == ("input", "array"):  # made on one worker, copied to another: where it is read
            assert "where it is read (made on one of these workers)" in costed[key].caption
            assert all(set(e) < set(c) for e, c in zip(g.sites, costed[key].sites))
        else:
            assert costed[key] == g, key
