"""Walking and printing expression DAGs (TRA and IA nodes alike: anything with ``children``),
and what the two share: declared operands (``Operands``) and, per layer that interprets
nodes, one registry of their meaning by type (``Registry``).

Every function here is iterative and visits a shared node once, so deep expressions (a
chain of thousands of operators) never hit Python's recursion limit, and a DAG whose
nodes are reused (iterative code: ``w = w - lr * grad(w)``) costs its size, not the size
of the tree it unfolds to.
"""

from __future__ import annotations

from collections import Counter
from operator import attrgetter
from typing import Any, Callable, Iterable, TypeVar

from .errors import TRAError

N = TypeVar("N", bound="Operands")


class Operands:
    """Declared operands, as dask's ``Expr._parameters``: ``_parameters`` names the constructor's
    arguments, children first, each kept as an attribute of that name (TRA and IA nodes)."""

    children: tuple = ()
    _parameters: tuple[str, ...] | None = None
    _get: Callable[[Any], tuple] | None = None  # the class's operands getter, from _parameters

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_parameters" in cls.__dict__:
            cls._get = None if cls._parameters is None else _getter(cls._parameters)

    def describe(self) -> str:
        raise NotImplementedError

    @property
    def operands(self) -> tuple:
        """The constructor's arguments, as ``_parameters`` names them."""
        get = type(self)._get
        if get is None:
            raise TRAError(
                f"{self.describe()}: {type(self).__name__} declares no operands "
                "(_parameters: its constructor's argument names, children first)"
            )
        return get(self)

    @property
    def params(self) -> tuple:
        """The operands after the children."""
        return self.operands[len(self.children) :]

    def over(self: N, *children: Any) -> N:
        """The same operator over other inputs, of the same types as its own."""
        get = type(self)._get
        operands = get(self) if get is not None else self.operands  # (the property says what is missing)
        return type(self)(*children, *operands[len(children) :])


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """node -> the tuple of its attributes ``names`` (one C call for two or more)."""
    if len(names) > 1:
        return attrgetter(*names)
    return lambda node: tuple(getattr(node, n) for n in names)


def rebuilt(node: N, children: Iterable[Any], layer: str) -> N:
    """``node.over(*children)`` for ``layer``, which names itself if ``node`` declares no operands."""
    if type(node)._get is None:
        raise TRAError(
            f"{layer}: {node.describe()}: cannot rebuild {type(node).__name__} over new inputs; "
            "declare its operands (_parameters: its constructor's argument names, children first)"
        )
    return node.over(*children)


class Registry:
    """One layer's meaning of each node type: a function per class, registered once
    (``@REGISTRY.register(TheNode)``) and found along the node's MRO, so a subclass (a new
    ``TupleMap``) inherits its base's entry. A node no class of which is registered gets
    ``error``, naming the layer, the node and how to register it."""

    def __init__(self, layer: str, what: str, how: str, error: type[Exception] = TRAError) -> None:
        self.layer, self.what, self.how, self.error = layer, what, how, error
        self._own: dict[type, Callable] = {}
        self._found: dict[type, Callable | None] = {}  # class -> its entry along the MRO

    def register(self, *types: type) -> Callable[[Callable], Callable]:
        """A decorator registering its function for ``types``."""

        def add(fn: Callable) -> Callable:
            for t in types:
                self._own[t] = fn
            self._found.clear()
            return fn

        return add

    def get(self, cls: type) -> Callable | None:
        """The entry of ``cls`` or of its nearest registered base; None if there is none."""
        try:
            return self._found[cls]
        except KeyError:
            fn = self._found[cls] = next((self._own[c] for c in cls.__mro__ if c in self._own), None)
            return fn

    def __call__(self, node: Any) -> Callable:
        """The entry for ``node``; ``error`` when its type has none."""
        fn = self.get(type(node))
        if fn is None:
            raise self.missing(node)
        return fn

    def missing(self, node: Any) -> Exception:
        """The error saying ``node``'s type has no entry."""
        name = type(node).__name__
        return self.error(
            f"{self.layer}: {node.describe()}: no {self.what} for {name}; register one with {self.how.format(name)}"
        )


def walk(root: Any) -> list:
    """Every node reachable from ``root`` once, children before parents."""
    return walk_many((root,))


def walk_many(roots: Iterable[Any]) -> list:
    """Every node reachable from any of ``roots`` once, children before parents."""
    seen: set[int] = set()
    order: list = []
    stack = [(r, False) for r in reversed(tuple(roots))]
    pop, push, emit, mark = stack.pop, stack.append, order.append, seen.add  # every planning pass walks
    while stack:
        node, expanded = pop()
        if expanded:
            emit(node)
            continue
        if id(node) in seen:
            continue
        mark(id(node))
        push((node, True))
        for c in reversed(node.children):
            if id(c) not in seen:
                push((c, False))
    return order


def fill(root: Any, done: Callable[[Any], bool], compute: Callable[[Any], None]) -> None:
    """``compute(node)`` for ``root`` and every node below it that is not ``done``, children
    first, each once, iteratively; nothing below a ``done`` node is entered. ``compute`` must
    leave its node ``done`` (it records a fact about it)."""
    stack = [root]
    while stack:
        node = stack[-1]
        if done(node):
            stack.pop()
            continue
        todo = [c for c in node.children if not done(c)]
        if todo:
            stack.extend(todo)
            continue
        compute(node)
        stack.pop()


TOKEN = "_dask_tra_token"  # a node's content token, where its builder named it (``cached``; array names)


def cached(root: Any, attr: str, compute: Callable[[Any, list], Any]) -> Any:
    """A fact of ``root`` kept on its nodes: ``compute(node, [the children's facts])`` for
    ``root`` and every node below it that lacks ``attr``, stored there (``fill``). A node built
    over children that have it costs one call, however deep the DAG: facts are computed once
    per node, as it is first asked for, never by walking what is below it again; nodes are
    immutable, so a fact never goes stale."""

    def store(node: Any) -> None:
        node.__dict__[attr] = compute(node, [c.__dict__[attr] for c in node.children])

    fill(root, lambda node: attr in node.__dict__, store)
    return root.__dict__[attr]


def shared_nodes(order: Iterable[Any]) -> set:
    """ids of the nodes of ``order`` (a walk) that have more than one consumer."""
    uses = Counter(id(c) for n in order for c in n.children)
    return {i for i, n in uses.items() if n > 1}


def render(root: Any) -> str:
    """``describe()(children...)`` nested, with a node used more than once written in full the
    first time as ``#n=...`` and as ``#n`` after that (so the text is linear in the DAG's size)."""
    shared = shared_nodes(walk(root))
    labels: dict = {}
    out = []
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if id(item) in labels:
            out.append(f"#{labels[id(item)]}")
            continue
        if id(item) in shared:
            labels[id(item)] = len(labels) + 1
            out.append(f"#{labels[id(item)]}=")
        out.append(item.describe())
        if item.children:
            out.append("(")
            stack.append(")")
            for i, c in enumerate(reversed(item.children)):
                stack.append(c)
                if i < len(item.children) - 1:
                    stack.append(", ")
    return "".join(out)


def tree_lines(root: Any) -> list:
    """One line per node, root first, indented by depth; a shared node's sub-plan is shown
    once and marked ``(shared, above)`` where it is used again."""
    lines, seen = [], set()
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            lines.append("  " * depth + node.describe() + " (shared, above)")
            continue
        seen.add(id(node))
        lines.append("  " * depth + node.describe())
        stack.extend((c, depth + 1) for c in reversed(node.children))
    return lines
