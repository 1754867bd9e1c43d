"""Operators planned by a module of their own.

A module here registers, for one TRA operator class, its strategies twice over, under the
same names and move for move: the IA sub-plans (``plans(node, *input Alts)``, built once for
the chosen plan) and their closed-form costs (``costs(node, *input Views, s, only)``, what the
search compares). The search and the plan builder look an operator up here by its class.
Every module of this package is imported, so a new one is picked up without editing anything
else. The contractions, joins and aggregations keep their strategies in ``strategies`` and
``candidates``, where the matmul strategies share their machinery.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Operator:
    plans: Callable[..., dict]  # (node, *input Alts) -> {strategy: IA root}
    costs: Callable[..., dict]  # (node, *input Views, s, only) -> {strategy: Cand}


_REGISTRY: dict[type, Operator] = {}


def register(op: type, plans: Callable[..., dict], costs: Callable[..., dict]) -> None:
    """Plan the TRA operator class ``op`` (and its subclasses) by these strategies."""
    _REGISTRY[op] = Operator(plans, costs)


def lookup(node: Any) -> Operator | None:
    """The strategies registered for ``node``'s class or its nearest base class, or None."""
    return next((_REGISTRY[c] for c in type(node).__mro__ if c in _REGISTRY), None)


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
