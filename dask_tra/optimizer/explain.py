"""explain(): the chosen plan, the alternatives with their predicted costs, and measurements.

Two vocabularies. The default text speaks dask's: workers, what each step moves and why
("broadcast array to every worker", "3-D split (2×2×1 workers)"), byte counts as dask writes
them, the predicted time as an estimate for an idle cluster. ``detail="algebra"`` gives the
papers' terms (sites, ``Join``/``Aggregate``, ``PART[..]``, partition vectors ``d=[..]``) and
the IA plan step by step. Repeated identical sub-plans are folded (``× 12``); the default shows
the steps that move data, ``full=True`` every step and every alternative.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..tra import expr as tra
from ..tra.dag import tree_lines
from .cost import TERMS
from .operators.registry import ALL_KINDS, CONTRACTION_KINDS, Bmm, EinDecomp, Strategy, kinds_named, parse

DETAILS = ("dask", "algebra")
_CONTRACTIONS = CONTRACTION_KINDS  # always listed: the plan's main choice
SHOWN = 25  # the default text lists at most this many (folded) steps that move data
OTHERS = 1  # and at most this many alternatives per step


def format_bytes(n: float) -> str:
    """Bytes as dask writes them (``dask.utils.format_bytes``, reproduced exactly: the optimizer
    imports no dask; ``tests/test_explain.py`` checks the two agree)."""
    for prefix, k in (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("ki", 2**10)):
        if n >= k * 0.9:
            return f"{n / k:.2f} {prefix}B"
    return f"{n} B"


def fmt_bytes(n: float | None) -> str:
    """``format_bytes``, with "-" for an unknown count."""
    return "-" if n is None else format_bytes(n)


def ia_tree(root) -> str:
    """The IA plan as an indented tree, root first; a sub-plan used twice is shown once."""
    return "\n".join(tree_lines(root))


# ---------------------------------------------------------------- names a dask user reads


_PLUMBING = {"rekey", "filter", "tile", "reshape", "squeeze", "expand_dims"}


def _word(label: str) -> str:
    """The operation's word: the leading letters of a kernel name (``"sum[0]"`` -> ``"sum"``)."""
    m = re.match(r"[a-z_]*", label.lower())
    return (m.group(0).strip("_") if m else "") or label


def input_name(name: str) -> str:
    """An input's short name, as its tasks are named on the dashboard (``"random-uniform-7b2…"``
    -> ``"random_uniform"``): its words before the token."""
    words: list[str] = []
    for w in name.split("-"):
        if not w.isalpha() or (words and len(w) == 8 and re.fullmatch(r"[a-f]+", w)):
            break
        words.append(w)
    return "_".join(words) or name


def operation(node) -> str:
    """What a TRA node does, in the words of the array operation that made it: a kernel's name,
    ``sum`` for an aggregation with add, a relabelling named after what it relabels."""
    for _ in range(16):
        if isinstance(node, tra.Input):
            return input_name(node.name)
        if isinstance(node, tra.Aggregate):
            if isinstance(node.child, tra.Join) and node.child.kernel.name == "matmul":
                return "matmul"
            if isinstance(node.child, tra.Join) and _word(node.child.kernel.name) == "einsum":
                return "einsum"
            return f"{operation(node.child)} across blocks"
        if isinstance(node, (tra.Join, tra.Transform)):
            word = _word(node.kernel.name)
            if word not in _PLUMBING:
                return word
        elif isinstance(node, tra.Concat):
            return "concatenate"
        node = node.children[0]
    return "step"


ALIAS_DEPTH = 16  # operations ``operand`` looks through to name what they relabel


def operand(node) -> str:
    """What moves, named for a dask user: an input by its name, else ``the <operation> result``."""
    below = node
    for _ in range(ALIAS_DEPTH):  # bounded: a chain of 2,000 same-named operations is no alias
        if isinstance(below, (tra.Input, tra.Join, tra.Aggregate, tra.Concat)):
            break
        if operation(below) != operation(below.children[0]):
            break
        below = below.children[0]  # relabels and reshapes: named as what they relabel
    if isinstance(below, tra.Input):
        return input_name(below.name)
    while isinstance(node, tra.Aggregate) and not isinstance(node.child, tra.Join):
        node = node.child
    return f"the {operation(node)} result"


@dataclass
class Move:
    """One move of an operator's sub-plan: ``what`` in the algebra's words ("broadcast",
    "replicate to PART[0, 1]/d=[2, 2]", "shuffle by PART[1]", "aggregate partials"), what
    moves (``source``: the algebra's description, ``name``: a dask user's), and its bytes."""

    what: str
    source: str
    name: str
    nbytes: int

    def words(self) -> str:
        """The move in dask's words."""
        for start, words in _MOVE_WORDS:
            if self.what.startswith(start):
                return words.format(self.name)
        return f"{self.what} {self.name}"


_MOVE_WORDS = (  # a move's words in the algebra (their start) -> in dask's
    ("broadcast", "broadcast {} to the workers that need it"),
    ("replicate", "copy {} to every worker of its split"),
    ("shuffle", "shuffle {}"),
    ("send to partners", "send {} to the workers holding the blocks it pairs with"),
    ("send to join groups", "send {} to the workers that multiply it"),
    ("aggregate partials", "send partial results to the worker that sums them"),
)


@dataclass
class OperatorReport:
    """One planned TRA operator: what it is, the strategy chosen, and every candidate's bytes.

    Candidate bytes are for the whole sub-plan up to and including this operator (with the
    inputs as the chosen plan has them), so they compare directly. ``label``: the operation in
    dask's words; ``operands``: what it reads, named for a dask user; ``moves``: what this
    operator alone moves (``Move``); ``facts``: the chosen strategy's particulars (the side a
    broadcast sends, a two-phase placement's name and balance).
    """

    kind: str
    strategy: str
    candidates: dict
    operator: str
    predicted_bytes: int
    predicted_peak_memory: int
    candidate_seconds: dict = field(default_factory=dict)
    predicted_seconds: float = 0.0
    label: str = ""
    operands: tuple = ()
    moves: list = field(default_factory=list)
    facts: dict = field(default_factory=dict)

    @property
    def moved(self) -> int:
        return sum(m.nbytes for m in self.moves)

    def strategy_words(self, strategy: str | None = None) -> str:
        """A strategy named by what it does, for this operator's operands."""
        s = self.strategy if strategy is None else strategy
        a, b = (tuple(self.operands) + ("the left input", "the right input"))[:2]
        if s in _STRATEGY_WORDS:
            return _STRATEGY_WORDS[s].format(a=a, b=b)
        st = _strategy(s, self.kind)
        if isinstance(st, Bmm):
            side = self.facts.get("bside") if s == self.strategy else st.side
            return f"broadcast {b if side == 'right' else a if side == 'left' else 'the smaller input'} to every worker"
        if isinstance(st, EinDecomp):
            d = st.d
            axes = " (rows × summed axis × columns)" if self.kind == "matmul" and len(d) == 3 else ""
            return f"{len(d)}-D split: {'×'.join(map(str, d))} workers{axes}"
        if s == "two-phase":
            if self.kind in _CONTRACTIONS:
                return "two-phase placement (each block product placed by where its inputs are)"
            return "two-phase: combine on each worker, then across workers"
        return s


_STRATEGY_WORDS = {  # the algebra's strategy names -> what they do ({a}, {b}: the operands)
    "local": "runs where its blocks are",
    "cmm": "co-partition {a} and {b} on the summed axis, then sum across workers",
    "rmm": "replicate {a} and {b} onto the workers of the output blocks (3-D)",
    "copart": "co-partition {a} and {b} on the joined axes",
    "align-left": "send {a} to where {b}'s blocks are",
    "align-right": "send {b} to where {a}'s blocks are",
    "bcast-left": "broadcast {a} to the workers holding {b}",
    "bcast-right": "broadcast {b} to the workers holding {a}",
    "shuffle": "shuffle blocks to where they are combined",
    "gather": "gather on one worker",
}


def _strategy(name: str, kind: str | None = None) -> Strategy | None:
    """The strategy object a candidate's name stands for (``registry.parse``), or None."""
    try:
        return parse(name, ALL_KINDS if kind is None else kinds_named(kind))
    except ValueError:
        return None


def short_strategy(name: str) -> str:
    """A strategy's name for a table column: ``"d=[2, 1, 2]"`` -> ``"split 2×1×2"``."""
    st = _strategy(name)
    if isinstance(st, EinDecomp):
        return "split " + "×".join(map(str, st.d))
    return {"bmm": "broadcast", "cmm": "co-partition", "rmm": "replicate 3-D", "local": "in place"}.get(name, name)


@dataclass
class Explain:
    expression: str
    sites: int
    operators: list
    predicted_bytes: int
    predicted_peak_memory: dict  # site -> bytes
    gather_bytes: int = 0  # moved when computing: dask gathers the result blocks on one worker
    measured_bytes: int | None = None
    ia_plan: str = ""
    notes: list = field(default_factory=list)
    predicted_seconds: float = 0.0
    breakdown: dict = field(default_factory=dict)  # the time objective's terms (``Rates.breakdown``)
    measured_seconds: float | None = None  # the ``measure()`` block's wall time, when it ran this plan alone
    measured_gather: bool = False  # the measured bytes include gathering the result (it was computed)
    detail: str = "dask"  # "dask" or "algebra": the words of ``str()``
    full: bool = False  # every step and alternative, not only the steps that move data
    workers: tuple = ()  # each site's worker (dask addresses on a Client); empty: "worker 0", ...
    rates_from: str = "the rates in use"  # where the time objective's rates came from, in words
    local: str = ""  # a local plan (no Client, no sites set): the scheduler that runs it, in words
    # limit -> the picture's ``blocks.BlockGrid``s (who holds each block), read from the plan on request
    grids: Callable | None = field(default=None, repr=False, compare=False)

    def view(self, detail: str | None = None, full: bool | None = None) -> Explain:
        """The same report, shown in ``detail``'s words (``"dask"`` or ``"algebra"``), in ``full``."""
        detail = self.detail if detail is None else detail
        if detail not in DETAILS:
            raise ValueError(f"detail={detail!r}: expected one of {DETAILS}")
        full = self.full if full is None else bool(full)
        if (detail, full) == (self.detail, self.full):
            return self  # the report itself: a later ``measure()`` still fills it in
        return replace(self, detail=detail, full=full)

    def text(self, detail: str | None = None, full: bool | None = None) -> str:
        detail = self.detail if detail is None else detail
        full = self.full if full is None else full
        if detail == "algebra":
            return self._algebra(full)
        if detail == "dask":
            return self._dask(full)
        raise ValueError(f"detail={detail!r}: expected one of {DETAILS}")

    def __str__(self):
        return self.text()

    def __repr__(self):
        return self.text()

    def worker_names(self) -> list:
        """Each site's worker: its dask address on a Client, else ``worker i``."""
        if len(self.workers) == self.sites:
            return [str(w) for w in self.workers]
        return [f"worker {i}" for i in range(self.sites)]

    def block_grids(self, limit: int | None = None) -> tuple:
        """Where each block of each input, each contraction's operands and the output is
        (``blocks.BlockGrid``; at most ``limit`` blocks along an axis), or () if unknown."""
        if self.grids is None:
            return ()
        return self.grids() if limit is None else self.grids(limit)

    def _repr_html_(self):
        """The text as HTML that wraps, with the picture when ``dask_tra`` is imported (its
        renderer, ``register_html``); the text alone otherwise."""
        render = _RENDERER.get("html")
        return render(self) if render is not None else self.html_text()

    def html_text(self) -> str:
        """The text as HTML: one list item per line, nested as the text is indented, wrapping."""
        text = self.text()
        if self.detail != "dask":
            return f'<pre style="white-space: pre-wrap; overflow-wrap: anywhere">{html.escape(text)}</pre>'
        return text_html(text)

    def visualize(self, filename: str | None = "explain", format: str | None = None):
        """Write the HTML form (the text and the picture of which worker holds each block) to
        ``filename``, as dask's ``visualize`` writes its graph: ``.html`` is added to a name
        without it; ``filename=None`` writes nothing. Returns an ``IPython.display.HTML`` of it
        (None without IPython)."""
        if format is None and filename is not None and filename.lower().endswith((".html", ".htm")):
            filename, ext = os.path.splitext(filename)
            format = ext[1:].lower()
        format = format or "html"
        if format not in ("html", "htm"):
            raise ValueError(f"format={format!r}: explain().visualize writes html")
        page = (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>dask_tra plan</title>\n'
            "<style>body { font-family: sans-serif; }</style></head>\n"
            f"<body>\n{self._repr_html_()}\n</body></html>\n"
        )
        path = None if filename is None else f"{filename}.{format}"
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        try:
            from IPython.display import HTML
        except ImportError:  # as dask's visualize: no display object without IPython
            return None
        return HTML(data=page) if path is None else HTML(filename=path)

    # ------------------------------------------------------------ dask's words

    def _estimate(self, full: bool) -> list:
        b = self.breakdown
        if not b:
            return []
        busiest = f" ({fmt_bytes(b.get('busiest_site_bytes', 0))} into the busiest worker)" if full else ""
        flops = f" ({b['busiest_site_flops'] / 1e9:.3g} GFLOP on the busiest worker)" if full else ""
        parts = [
            f"{b['transfer_s']:.3g} s moving data{busiest}",
            f"{b['scheduling_s']:.3g} s scheduling {b['tasks']} tasks",
            f"{b['compute_s']:.3g} s computing{flops}",
        ]
        parts += [
            f"{secs:.3g} s for {TERMS[name].words.format(value)}" for name, (value, secs) in b.get("terms", {}).items()
        ]
        return (
            [f"  time:   {b['total_s']:.3g} s estimated for an idle cluster, from {self.rates_from}"]
            + [f"          {'+ ' if i else ''}{p}" for i, p in enumerate(parts)]
            if full
            else [
                f"  time:   {b['total_s']:.3g} s estimated for an idle cluster, from {self.rates_from}",
                f"          ({', '.join(parts)})",
            ]
        )

    def _dask(self, full: bool) -> str:
        if self.local:
            return self._local(full)
        peak = max(self.predicted_peak_memory.values(), default=0)
        tasks = f", {self.breakdown['tasks']} tasks" if self.breakdown else ""
        lines = [
            f"dask_tra plan on {self.sites} workers{tasks}",
            f"  moves:  {fmt_bytes(self.predicted_bytes)} between workers (predicted)"
            + (f", +{fmt_bytes(self.gather_bytes)} to gather the result on one worker" if self.gather_bytes else ""),
            f"  memory: {fmt_bytes(peak)} at most per worker (predicted)",
        ]
        lines += self._estimate(full)
        if self.measured_bytes is not None or self.measured_seconds is not None:
            got = []
            if self.measured_bytes is not None:
                both = self.predicted_bytes + self.gather_bytes
                got.append(
                    f"{fmt_bytes(self.measured_bytes)} moved"
                    + (f" (predicted with the gather: {fmt_bytes(both)})" if self.measured_gather else "")
                )
            if self.measured_seconds is not None:
                got.append(f"{self.measured_seconds:.3g} s")
            lines.append("  measured: " + ", ".join(got) + " (dask_tra.diagnostics.measure)")
        shown = [op for op in self.operators if full or op.moved or op.kind in _CONTRACTIONS]
        hidden = [op for op in self.operators if op not in shown]
        groups = fold([_dask_entry(op, full) for op in shown])
        if groups:
            lines.append("steps:")
        more = 0
        for i, (count, entries, every) in enumerate(groups):
            if not full and i >= SHOWN:
                more += len(every)
                continue
            lines.extend(_group_lines(count, entries, every))
        if more:
            lines.append(f"  … {more} more")
        if hidden:
            words = sorted({op.label or op.kind for op in hidden})
            names = ", ".join(words[:6]) + (", …" if len(words) > 6 else "")
            lines.append(f"{len(hidden)} more step{'s move' if len(hidden) > 1 else ' moves'} nothing ({names})")
        lines.extend(self.notes)
        if not full:
            lines.append(
                'every step and alternative: .view(full=True); in the algebra\'s terms: .view(detail="algebra")'
            )
        return "\n".join(lines)

    def _local(self, full: bool) -> str:
        """A local plan: nothing moves between a local scheduler's threads, so no step's
        strategy is a choice; the text gives the tasks, memory and time."""
        peak = max(self.predicted_peak_memory.values(), default=0)
        tasks = f", {self.breakdown['tasks']} tasks" if self.breakdown else ""
        lines = [
            f"dask_tra local plan ({self.local}): nothing moves{tasks}",
            f"  memory: {fmt_bytes(peak)} at most (predicted)",
        ]
        if self.measured_seconds is not None:
            lines.append(f"  measured: {self.measured_seconds:.3g} s (dask_tra.diagnostics.measure)")
        if full:
            b = self.breakdown
            if b:
                lines.append(
                    f"  time:   {b['total_s']:.3g} s estimated: {b['scheduling_s']:.3g} s scheduling {b['tasks']} tasks"
                    f" + {b['compute_s']:.3g} s computing, from {self.rates_from}"
                )
            words = [f"  {op.label or op.kind} ({op.kind}: {op.strategy})" for op in self.operators]
            lines.extend(["steps:", *words] if words else [])
        elif self.operators:
            names = sorted({op.label or op.kind for op in self.operators})
            listed = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
            n = len(self.operators)
            lines.append(f"{n} step{'s' if n > 1 else ''}, {'none moves' if n > 1 else 'it moves nothing'} ({listed})")
        lines.extend(self.notes)
        if not full:
            lines.append('every step: .view(full=True); in the algebra\'s terms: .view(detail="algebra")')
        return "\n".join(lines)

    # ------------------------------------------------------------ the papers' words

    def _algebra(self, full: bool) -> str:
        peak = fmt_bytes(max(self.predicted_peak_memory.values(), default=0))
        lines = [
            f"TRA local plan ({self.local}) on 1 site: nothing moves, peak {peak}"
            if self.local
            else f"TRA plan on {self.sites} sites: predicted {fmt_bytes(self.predicted_bytes)} moved"
            + f" (+{fmt_bytes(self.gather_bytes)} to gather the result on compute)"
            + ("" if self.measured_bytes is None else f", measured {fmt_bytes(self.measured_bytes)}")
            + f", peak {peak} per site"
        ]
        if self.breakdown:
            b = self.breakdown
            lines.append(
                f"predicted time {b['total_s']:.3g} s = {b['transfer_s']:.3g} s moving data"
                f" ({fmt_bytes(b.get('busiest_site_bytes', 0))} into the busiest site"
                f", {fmt_bytes(b.get('busiest_sender_bytes', 0))} out of the busiest sender)"
                f" + {b['scheduling_s']:.3g} s scheduling {b['tasks']} tasks"
                f" + {b['compute_s']:.3g} s computing on the busiest worker"
                f" ({b['busiest_site_flops'] / 1e9:.3g} GFLOP)"
                + "".join(
                    f" + {secs:.3g} s for {TERMS[name].words.format(value)}"
                    for name, (value, secs) in b.get("terms", {}).items()
                )
            )
        groups = fold([_algebra_entry(op) for op in self.operators])
        for i, (count, entries, _) in enumerate(groups):
            last = i == len(groups) - 1
            pad = "   " if last else "│  "
            mark = "└─" if last else "├─"
            if count > 1:
                lines.append(f"{mark} × {count}:")
                for j, (_, text, extra) in enumerate(entries):
                    lines.append(f"{pad}{'└─' if j == len(entries) - 1 else '├─'} {text}")
                    lines.extend(f"{pad}{'   ' if j == len(entries) - 1 else '│  '}{x}" for x in extra)
                continue
            _, text, extra = entries[0]
            lines.append(f"{mark} {text}")
            lines.extend(f"{pad}{x}" for x in extra)
        if self.ia_plan:
            lines.append("plan steps:")
            steps = _fold_steps(self.ia_plan.splitlines())
            lines.extend("  " + s for s in steps)
        lines.extend(self.notes)
        return "\n".join(lines)


_RENDERER: dict = {}  # "html" -> the renderer with the picture (``dask_tra.array.planview``)


def register_html(render: Callable | None) -> None:
    """Make ``render(explain) -> str`` the HTML form of every ``Explain`` (None: the text alone).
    The layer above the optimizer draws the picture (with ``dask.array.svg``: the optimizer
    imports no dask) and registers it when ``dask_tra`` is imported."""
    if render is None:
        _RENDERER.pop("html", None)
    else:
        _RENDERER["html"] = render


_LABELS = re.compile(r"^(moves|memory|time|measured|steps):")


def text_html(text: str) -> str:
    """``explain()``'s text as nested HTML lists: a line indented deeper than the one above it
    is its item's child; lines wrap (a long line continues indented under its start)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    out = ['<div class="dask-tra-explain-text" style="overflow-wrap: anywhere; max-width: 100%">']
    if lines:
        out.append(f"<strong>{html.escape(lines[0])}</strong>")
    ul = '<ul style="list-style: none; margin: 0; padding-left: 1.5em; text-indent: -1em">'
    stack: list[int] = []  # the indents of the open lists
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip(" "))
        while stack and indent < stack[-1]:
            out.append("</li></ul>")
            stack.pop()
        if stack and indent == stack[-1]:
            out.append("</li>")
        else:
            out.append(ul)
            stack.append(indent)
        body = html.escape(" ".join(line.split()))
        body = _LABELS.sub(r"<b>\1:</b>", body)
        out.append(f"<li>{body}")
    out.extend("</li></ul>" for _ in stack)
    out.append("</div>")
    return "".join(out)


def _ranked(op):
    secs = op.candidate_seconds
    return sorted(op.candidates.items(), key=lambda kv: (secs.get(kv[0], 0), kv[1]))


def _algebra_entry(op):
    """(the key repeats are folded on, the operator's line, its candidates' line)."""
    text = f"{op.kind}: {op.strategy}   {op.operator}"
    extra = []
    if len(op.candidates) > 1:
        secs = op.candidate_seconds
        shown = ", ".join(
            f"{n}={fmt_bytes(b)}" + (f"/{secs[n]:.3g}s" if n in secs else "") + (" *" if n == op.strategy else "")
            for n, b in _ranked(op)
        )
        extra.append(f"   candidates: {shown}")
    key = (op.kind, op.strategy, re.sub(r"-[0-9a-f]{8,}", "", op.operator))
    return key, text, extra


def _dask_entry(op, full):
    """(the key repeats are folded on, the step's line with what it moves, its detail lines)."""
    what = op.label or op.kind
    if (op.kind in CONTRACTION_KINDS or op.kind == "join") and op.operands:
        what += f" ({(' @ ' if op.kind == 'matmul' else ', ').join(op.operands)})"
    moved = op.moved
    entry = {"what": what, "how": op.strategy_words(), "bytes": moved, "extra": []}
    for m in op.moves:
        if m.nbytes or full:
            entry["extra"].append((m.words(), m.nbytes))
    if op.facts.get("placement"):
        entry["extra"].append(
            (f"placement: {op.facts['placement']}, busiest worker / mean = {op.facts.get('balance', 1):.2f}", None)
        )
    others = [(n, b) for n, b in _ranked(op) if n != op.strategy]
    if others:
        shown = others if full else others[:OTHERS]
        entry["alts"] = [
            f"{'or' if full else 'next best'}: {op.strategy_words(n)} ({_versus(op, n, b)})" for n, b in shown
        ]
        if len(others) > len(shown):
            entry["alts"][-1] += f"; {len(others) - len(shown)} more"
    key = (what, entry["how"], tuple(w for w, _ in entry["extra"]))
    return key, entry, None


def _versus(op, name, nbytes) -> str:
    """An alternative's cost next to the chosen one's (both for the whole sub-plan up to here)."""
    chosen = op.candidates.get(op.strategy, op.predicted_bytes)
    diff = nbytes - chosen
    out = f"{'+' if diff >= 0 else '-'}{fmt_bytes(abs(diff))} moved"
    secs = op.candidate_seconds
    if name in secs and op.strategy in secs:
        out += f", {secs[name] - secs[op.strategy]:+.2g} s"
    return out


def _group_lines(count, entries, every):
    lines = []
    if count > 1:
        total = sum(e["bytes"] for _, e, _ in every)
        lines.append(f"  × {count} (repeated steps, {fmt_bytes(total)} in all; the first time:)")
        indent = "    "
    else:
        indent = "  "
    for _, e, _ in entries:
        lines.append(f"{indent}{e['what']}: {e['how']}  {fmt_bytes(e['bytes'])}")
        lines.extend(f"{indent}  {w}" + ("" if b is None else f"  {fmt_bytes(b)}") for w, b in e["extra"])
        lines.extend(f"{indent}  {a}" for a in e.get("alts", ()))
    return lines


def fold(entries, longest=40):
    """Fold runs of a repeated sub-sequence: entries are (key, ...) tuples; the result is a list of
    (count, [entries of the first repeat], [entries of every repeat]), the repeats those whose
    keys are equal. Repeats are
    chosen greedily, the longest stretch first (``longest``: at most this many entries a repeat)."""
    keys = [e[0] for e in entries]
    n = len(keys)
    runs = []  # (covered, -period, start, period, count)
    for i in range(n):
        for p in range(1, min(longest, (n - i) // 2) + 1):
            c = 1
            while i + (c + 1) * p <= n and keys[i + c * p : i + (c + 1) * p] == keys[i : i + p]:
                c += 1
            if c > 1:
                runs.append((p * c, -p, i, p, c))
    runs.sort(key=lambda r: (-r[0], -r[1], r[2]))
    taken: list[tuple | None] = [None] * n
    for _, _, i, p, c in runs:
        if any(t is not None for t in taken[i : i + p * c]):
            continue
        for j in range(i, i + p * c):
            taken[j] = (i, p, c)
    out, i = [], 0
    while i < n:
        if taken[i] is None:
            out.append((1, [entries[i]], [entries[i]]))
            i += 1
        else:
            _, p, c = taken[i]  # type: ignore[misc]
            out.append((c, entries[i : i + p], entries[i : i + p * c]))
            i += p * c
    return out


def _fold_steps(lines):
    """The IA plan's lines, grouped per operator (a line and its indented moves), repeats folded."""
    ops: list[list[str]] = []
    for line in lines:
        if line.startswith(" ") and ops:
            ops[-1].append(line)
        else:
            ops.append([line])
    entries = [(tuple(re.sub(r"-[0-9a-f]{8,}|: [0-9.]+ \w+$", "", x) for x in op), op) for op in ops]
    out = []
    for count, group, _ in fold(entries):
        if count > 1:
            out.append(f"× {count}:")
            out.extend("  " + x for _, op in group for x in op)
        else:
            out.extend(group[0][1])
    return out
