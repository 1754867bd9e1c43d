"""Reading index notations as NumPy does.

Einsum subscripts: explicit or implicit output, ``...`` broadcasting.
``read_subscripts("...ij,jk", (3, 2))`` gives ``(["aij", "jk"], "aik")``: every operand's
letters with its ellipsis spelled out by letters not used elsewhere (right-aligned, so the
longest ellipsis sets the output's), and the output: after ``->``, or else the ellipsis then
the letters used once, sorted (NumPy's implicit mode).
"""

from __future__ import annotations

import string

LETTERS = string.ascii_letters  # NumPy's einsum symbols: a-z then A-Z


def read_subscripts(subscripts: str, ndims) -> tuple[list, str]:
    """(input subscripts per operand, output subscripts) for operands of ``ndims`` dimensions."""
    s = subscripts.replace(" ", "")
    for c in s:
        if c not in LETTERS and c not in ".,->":
            raise ValueError(f"Character {c} is not a valid symbol.")
    if "-" in s or ">" in s:
        if s.count("->") != 1 or s.count("-") > 1 or s.count(">") > 1:
            raise ValueError("Subscripts can only contain one '->'.")
        lhs, out = s.split("->")
    else:
        lhs, out = s, None
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise ValueError("Number of einsum subscripts must be equal to the number of operands.")
    ins, ellipsis = _spell_ellipses(ins, ndims, s)
    if out is None:
        flat = "".join(ins)
        out = ellipsis + "".join(sorted(c for c in set(flat) if flat.count(c) == 1 and c not in ellipsis))
    elif "..." in out or "." in out:
        if out.count(".") != 3 or out.count("...") != 1:
            raise ValueError("Invalid Ellipses.")
        out = out.replace("...", ellipsis)
    elif ellipsis:
        raise ValueError(
            "output has more dimensions than subscripts given in einstein sum, but no '...' "
            "ellipsis provided to broadcast the extra dimensions."
        )
    for c in out:
        if out.count(c) != 1:
            raise ValueError(f"Output character {c} appeared more than once in the output.")
        if not any(c in i for i in ins):
            raise ValueError(f"Output character {c} did not appear in the input")
    return ins, out


def _spell_ellipses(ins, ndims, subscripts):
    """Operand subscripts with ``...`` replaced by unused letters, and the longest ellipsis."""
    if "." not in subscripts:
        return list(ins), ""
    unused = [c for c in LETTERS if c not in subscripts]
    widths = []
    for sub, nd in zip(ins, ndims):
        if "." not in sub:
            widths.append(0)
            continue
        if sub.count(".") != 3 or sub.count("...") != 1:
            raise ValueError("Invalid Ellipses.")
        w = nd - (len(sub) - 3)
        if w < 0:
            raise ValueError("Ellipses lengths do not match.")
        widths.append(w)
    longest = max(widths)
    letters = "".join(unused[:longest])
    spelled = [sub.replace("...", letters[longest - w :]) if "." in sub else sub for sub, w in zip(ins, widths)]
    return spelled, letters
