"""Walking expression DAGs (TRA and IA nodes alike: anything with ``children``)."""
from __future__ import annotations


def walk(root) -> list:
    """Every node reachable from ``root`` once, children before parents (iterative: deep
    expressions do not hit Python's recursion limit)."""
    seen, order = set(), []
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(node.children) if id(c) not in seen)
    return order
