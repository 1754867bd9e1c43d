"""Operators planned by a module of their own.

``base`` defines what a strategy is (a typed ``Strategy`` with a body written once against a
mover, registered as it is defined) and the one loop that runs the bodies (``run``);
``registry`` re-exports every built-in strategy (``Bmm(side)``, ``EinDecomp(d)``, ``Local()``,
…), the operator kinds (``OperatorKind``) and ``force=``'s parser. A module here registers, for
one TRA operator class, its strategies twice over, keyed by the same strategy objects and move
for move: the IA sub-plans (``plans(node, *input Alts)``, built once for the chosen plan) and
their closed-form costs (``costs(node, *input Views, s, only)``, what the search compares; each
``Cand`` tagged with its strategy). A strategy of its own is a ``Strategy`` subclass with
``kinds = {OperatorKind.REGISTERED}``. The search and the plan builder look an operator up
here by its class. Every module of this package is imported (on the first ``lookup``), so a new
one is picked up without editing anything else. The contractions, joins and aggregations alone
are planned by the strategy classes of ``contraction``, ``join_alone`` and ``aggregate_alone``
(their bodies costed and built by the movers of ``movers``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Operator:
    plans: Callable[..., dict]  # (node, *input Alts) -> {registry.Strategy: IA root}
    costs: Callable[..., dict]  # (node, *input Views, s, only) -> {registry.Strategy: Cand}
    # (node, *whether each input is free) -> the strategy ``costs`` ranks first on one site, named
    # without costing (a local plan); None: the local plan costs the operator to choose
    local: Callable[..., Any] | None = None


_REGISTRY: dict[type, Operator] = {}


def register(
    op: type, plans: Callable[..., dict], costs: Callable[..., dict], local: Callable[..., Any] | None = None
) -> None:
    """Plan the TRA operator class ``op`` (and its subclasses) by these strategies."""
    _REGISTRY[op] = Operator(plans, costs, local)


_loaded = False


def _load() -> None:
    """Import every module of this package once (each registers its operator), on the first
    ``lookup``: importing the package, or ``registry`` in it, runs none of them (they import
    ``layout`` and ``symbolic``, which import ``registry``)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")


def lookup(node: Any) -> Operator | None:
    """The strategies registered for ``node``'s class or its nearest base class, or None."""
    _load()
    return next((_REGISTRY[c] for c in type(node).__mro__ if c in _REGISTRY), None)
