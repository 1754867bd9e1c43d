"""Reading index notations as NumPy does.

Einsum subscripts: explicit or implicit output, ``...`` broadcasting.
``read_subscripts("...ij,jk", (3, 2))`` gives ``(["aij", "jk"], "aik")``: every operand's
letters with its ellipsis spelled out by letters not used elsewhere (right-aligned, so the
longest ellipsis sets the output's), and the output: after ``->``, or else the ellipsis then
the letters used once, sorted (NumPy's implicit mode).

Generalized-ufunc signatures: ``read_signature("(i,j),(j,k)->(i,k)")`` gives
``([("i", "j"), ("j", "k")], [("i", "k")])``, the core dimensions of every input and output.
"""

from __future__ import annotations

import re
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


_DIM = r"\w+"  # a core dimension's name
_ARG = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"  # one argument: "(i,j)", or "()" for a scalar
_ARGS = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = re.compile(rf"{_ARGS}->{_ARGS}")


def read_signature(signature: str) -> tuple[list, list]:
    """(core dimensions of each input, of each output) of a generalized-ufunc signature, as
    NumPy reads it: whitespace is ignored, ``"()->()"`` has one scalar input and output,
    ``"(i)->(),()"`` two outputs. ValueError (NumPy's message) for a malformed signature."""
    s = re.sub(r"\s+", "", signature)
    if not _SIGNATURE.fullmatch(s):
        raise ValueError(f"not a valid gufunc signature: {s}")
    ins, outs = s.split("->")
    return [tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, ins)], [
        tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, outs)
    ]
