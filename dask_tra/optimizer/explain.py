"""explain(): the chosen plan, the alternatives with their predicted costs, and measurements."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from ..tra.dag import tree_lines
from .cost import TERMS


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def ia_tree(root) -> str:
    """The IA plan as an indented tree, root first; a sub-plan used twice is shown once."""
    return "\n".join(tree_lines(root))


@dataclass
class OperatorReport:
    """One planned TRA operator: what it is, the strategy chosen, and every candidate's bytes.

    Candidate bytes are for the whole sub-plan up to and including this operator (with the
    inputs as the chosen plan has them), so they compare directly.
    """

    kind: str
    strategy: str
    candidates: dict
    operator: str
    predicted_bytes: int
    predicted_peak_memory: int
    candidate_seconds: dict = field(default_factory=dict)
    predicted_seconds: float = 0.0


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

    def __str__(self):
        lines = [
            f"TRA plan on {self.sites} sites: predicted {fmt_bytes(self.predicted_bytes)} moved"
            + f" (+{fmt_bytes(self.gather_bytes)} to gather the result on compute)"
            + ("" if self.measured_bytes is None else f", measured {fmt_bytes(self.measured_bytes)}")
            + f", peak {fmt_bytes(max(self.predicted_peak_memory.values(), default=0))} per site"
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
        for i, op in enumerate(self.operators):
            last = i == len(self.operators) - 1
            lines.append(f"{'└─' if last else '├─'} {op.kind}: {op.strategy}   {op.operator}")
            pad = "   " if last else "│  "
            if len(op.candidates) > 1:
                secs = op.candidate_seconds
                ranked = sorted(op.candidates.items(), key=lambda kv: (secs.get(kv[0], 0), kv[1]))
                shown = ", ".join(
                    f"{n}={fmt_bytes(b)}"
                    + (f"/{secs[n]:.3g}s" if n in secs else "")
                    + (" *" if n == op.strategy else "")
                    for n, b in ranked
                )
                lines.append(f"{pad}   candidates: {shown}")
        if self.ia_plan:
            lines.append("plan steps:")
            lines.extend("  " + l for l in self.ia_plan.splitlines())
        lines.extend(self.notes)
        return "\n".join(lines)

    def _repr_html_(self):
        return f"<pre>{html.escape(str(self))}</pre>"
