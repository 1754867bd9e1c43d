"""The package's import structure, read from the source (nothing is imported), and checked
by importing:

- imports form no cycle among dask_tra's modules. An edge is an import statement anywhere in
  a module (function bodies included; ``if TYPE_CHECKING:`` blocks excepted), plus the
  parent packages it runs: importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``
  first. The importer's own parent packages are left out (Python has run them before the
  importer). Module-level imports alone must form no cycle either
  (``test_no_module_level_import_cycle``);
- the array frontend is layered by a declared rank (``ARRAY_RANKS``, lowest first): an array
  module imports only array modules of lower rank, function bodies included. The plumbing
  ranks lowest, then ``methods`` (RelArray's methods), then ``core`` (RelArray), then the
  relation glue, the function families, NumPy's protocols and the package. RelArray's
  methods call the families (``x.sum()`` is ``sum(x)``) without importing them: the package
  binds them into ``methods`` once it has imported them all (``methods.bind``);
- every module imports on its own in a fresh interpreter (``python -c "import dask_tra.X"``);
- the algebra, the implementation algebra and the optimizer (dask_tra/tra, ia, optimizer)
  import nothing from Dask or distributed, nor from dask_tra's Dask layer (dask_tra.runtime),
  anywhere in their code (function bodies included), and neither does anything they import
  at module level;
- research code and oracles (dask_tra.reference: paper reproductions tests and benchmarks run)
  import only the layers below the Dask layer (tra, ia, optimizer, backends), and nothing
  outside dask_tra.reference imports it (function bodies included): compute never runs it.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "dask_tra"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE
PURE = ("dask_tra.tra", "dask_tra.ia", "dask_tra.optimizer", "dask_tra.reference")
REFERENCE = "dask_tra.reference"
# what the reference package may import of dask_tra (besides itself)
REFERENCE_MAY_IMPORT = ("dask_tra.tra", "dask_tra.ia", "dask_tra.optimizer", "dask_tra.backends")
FORBIDDEN = ("dask", "distributed", "dask_tra.runtime")
ARRAY = "dask_tra.array"
# The array modules by rank, lowest first (``__init__``: the package): each imports only modules
# listed before it (function-level imports and the parent packages they run included). A new
# module goes after everything it imports; an import of a module listed later is an import back
# up: invert it (as ``methods.bind`` does) or move the importer up.
ARRAY_RANKS = (
    # plumbing: imports no array module
    "subscripts", "naming", "planview", "zerofill", "display", "kernels", "linalg.kernels",
    # RelArray's methods (the families reached through ``methods.bind``), then RelArray itself
    "methods", "core",
    # between arrays and relations
    "relations", "joint", "chunk_types", "lazy", "rechunk",
    # the function families
    "creation", "structure", "blocksparse", "distributions", "testing", "elementwise", "random",
    "utils", "contractions", "reductions", "stacking", "manipulation", "nanreductions", "blockwise",
    "linalg.qr", "blocklayout", "gufuncs", "io", "linalg.batched", "linalg.blocked", "padding",
    "quantiles", "treereduce", "indexing", "linalg.norms", "linalg", "datadependent", "fft",
    "routines", "sorting", "namespace_array", "namespace_linalg", "fill", "ma", "namespace_fft", "stats", "overlap",
    "lib.stride_tricks", "lib",
    # NumPy's protocols and the Array API namespace, then the package, which binds the families
    # into ``methods``
    "dispatch", "namespace", "__init__",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, module_level: bool) -> list[ast.Import | ast.ImportFrom]:
    """Import statements; with ``module_level`` only those run at import time (function bodies
    and ``if TYPE_CHECKING:`` blocks skipped; class bodies and other ifs/trys included)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            elif module_level and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            elif module_level and isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]))
            else:
                visit(child)

    visit(tree)
    return found


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Absolute names a statement in ``module`` imports: for ``from X import a``, ``X.a`` when
    that is a module of the package, else ``X`` (a name defined in X)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if _is_package(module) else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        out.append(sub if sub in MODULES else source)
    return out


def _parents(name: str) -> list[str]:
    """The packages above ``name``: ``a.b.c`` -> ``["a", "a.b"]``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(module_level: bool = True, parents: bool = False) -> dict[str, set[str]]:
    """module -> the dask_tra modules it imports (and, for outside names, the names themselves).
    ``parents``: also the parent packages an import runs, except the importer's own."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        nodes = _import_nodes(tree, module_level)
        targets = {t for node in nodes for t in _targets(name, node)}
        if parents:
            own = set(_parents(name))
            targets |= {p for t in targets if t.startswith(PACKAGE + ".") for p in _parents(t) if p not in own}
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle among the graph's own nodes (edges to names outside it are ignored), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def dfs(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if w not in graph or w == v:
                continue
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = dfs(w)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = dfs(v)
            if found:
                return found
    return None


def _forbidden(target: str) -> bool:
    return any(_within(target, f) for f in FORBIDDEN)


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c", "numpy"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_import_graph_resolves_relative_imports():
    graph = import_graph()
    assert "dask_tra.tra.relation" in graph["dask_tra.tra.expr"]
    assert "dask_tra.backends" in graph["dask_tra.tra.kernels"]  # from .. import backends: a module
    assert "dask_tra.ia.nodes" in graph["dask_tra.optimizer.layout"]


def test_import_graph_adds_parent_packages():
    graph = import_graph(parents=True)
    # dask_tra.array.io imports dask_tra.runtime.sources: that runs the dask_tra.runtime package first
    # (a namespace package here, listed all the same) but not dask_tra, io's own parent
    assert {"dask_tra.runtime.sources", "dask_tra.runtime"} <= graph["dask_tra.array.io"]
    assert "dask_tra" not in graph["dask_tra.array.io"]
    # dask_tra.core imports dask_tra.array.core: that runs dask_tra.array's __init__
    assert "dask_tra.array" in graph["dask_tra.core"]
    assert "dask_tra.array" not in import_graph()["dask_tra.core"]


def test_no_module_level_import_cycle():
    cycle = find_cycle(import_graph(module_level=True, parents=True))
    assert cycle is None, "module-level import cycle: " + " -> ".join(cycle or ())


def test_no_import_cycle():
    """Function-level imports count too."""
    cycle = find_cycle(import_graph(module_level=False, parents=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def _array_module(short: str) -> str:
    return ARRAY if short == "__init__" else f"{ARRAY}.{short}"


def test_every_array_module_has_a_rank():
    declared = [_array_module(m) for m in ARRAY_RANKS]
    assert len(set(declared)) == len(declared), "a module listed twice in ARRAY_RANKS"
    found = {m for m in MODULES if _within(m, ARRAY)}
    assert not found - set(declared), f"give these a rank in ARRAY_RANKS: {sorted(found - set(declared))}"
    assert not set(declared) - found, f"no such modules: {sorted(set(declared) - found)}"


def test_array_modules_import_only_lower_ranks():
    """An array module imports only array modules of lower rank (``ARRAY_RANKS``), anywhere in
    its code, the parent packages an import runs included: so the array core imports no
    function family, and RelArray's methods reach the families through ``methods.bind``."""
    rank = {_array_module(m): i for i, m in enumerate(ARRAY_RANKS)}
    graph = import_graph(module_level=False, parents=True)
    bad = sorted(f"{m} (rank {rank[m]}) imports {t} (rank {rank[t]})" for m in rank for t in graph[m]
                 if t in rank and t != m and rank[t] >= rank[m])
    assert not bad, "\n".join(bad)


def test_array_core_imports_no_function_family():
    """RelArray's module and its methods' rank below every module that builds RelArrays: what
    they import of the array layer (anywhere in their code) is plumbing, which imports no array
    module; the families are bound into ``methods`` by the package (``methods.bind``)."""
    core, methods = ARRAY_RANKS.index("core"), ARRAY_RANKS.index("methods")
    assert methods == core - 1
    graph = import_graph(module_level=False)
    plumbing = {_array_module(m) for m in ARRAY_RANKS[:methods]}
    assert not [t for m in plumbing for t in graph[m] if _within(t, ARRAY)]
    for m in ("core", "methods"):
        reached = {t for t in graph[_array_module(m)] if _within(t, ARRAY)} - {_array_module("methods")}
        assert reached <= plumbing, sorted(reached - plumbing)


def test_methods_are_bound_once_the_package_is_imported():
    """Importing any array module runs the package first, and the package binds every module of
    ``methods.ABOVE`` (checked in a fresh interpreter: ``import dask_tra.array.core`` alone)."""
    code = ("import sys, types, dask_tra.array.core; m = sys.modules['dask_tra.array.methods']; "
            "assert all(isinstance(getattr(m, n), types.ModuleType) for n in m.ABOVE); "
            "x = sys.modules['dask_tra.array'].ones(3, chunks=2); print(float((x + 1).sum()), x.T.shape)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["6.0", "(3,)"]


def test_every_module_imports_on_its_own():
    """``python -c "import dask_tra.X"`` in a fresh interpreter, for every module X. Importing
    ``dask_tra.X`` runs ``dask_tra/__init__`` first, and that imports most modules in a fixed
    order; so one fresh ``import dask_tra`` covers every module it loads (each one's own
    ``import`` finds it loaded), and every other module gets its own fresh interpreter."""

    def run(code):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{code!r} failed:\n{done.stderr[-3000:]}"
        return done.stdout

    out = run("import sys, dask_tra; print(*sorted(m for m in sys.modules if m.split('.')[0] == 'dask_tra'))")
    loaded = set(out.split())  # (with dask_tra.runtime, a namespace package: no file of its own)
    assert "dask_tra.array.core" in loaded
    for name in sorted(set(MODULES) - loaded):
        run(f"import {name}")


@pytest.mark.parametrize("package", PURE)
def test_pure_layers_import_no_dask(package):
    graph = import_graph(module_level=False)  # function-level imports count here
    bad = sorted(f"{m} imports {t}" for m, targets in graph.items() if _within(m, package)
                 for t in targets if _forbidden(t))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", PURE)
def test_pure_layers_reach_no_dask_when_imported(package):
    """What importing the package runs (its modules' module-level imports, transitively, within
    dask_tra) imports no Dask either. Parent packages' __init__ are not followed: importing
    dask_tra.tra runs dask_tra/__init__ first, which is the whole library by design."""
    graph = import_graph(module_level=True)
    seen: dict[str, str | None] = {m: None for m in graph if _within(m, package)}
    todo = list(seen)
    while todo:
        m = todo.pop()
        for t in graph.get(m, ()):
            if _forbidden(t):
                chain = [t, m]
                while seen[chain[-1]] is not None:
                    chain.append(seen[chain[-1]])
                pytest.fail("dask reached: " + " <- ".join(chain))
            if t in graph and t not in seen:
                seen[t] = m
                todo.append(t)


def test_reference_code_is_imported_by_no_production_module():
    """Research code and oracles run in tests and benchmarks only: no dask_tra module outside
    dask_tra.reference imports it, anywhere in its code (function bodies included)."""
    graph = import_graph(module_level=False)
    assert REFERENCE in graph and f"{REFERENCE}.rules" in graph
    bad = sorted(f"{m} imports {t}" for m, targets in graph.items() if not _within(m, REFERENCE)
                 for t in targets if _within(t, REFERENCE))
    assert not bad, "\n".join(bad)


def test_reference_code_imports_only_the_layers_below_dask():
    """dask_tra.reference sits above the optimizer: it imports tra, ia, optimizer (and the
    backends they use), never the array frontend, autodiff or the Dask layer."""
    graph = import_graph(module_level=False)
    bad = sorted(f"{m} imports {t}" for m, targets in graph.items() if _within(m, REFERENCE)
                 for t in targets if _within(t, PACKAGE)
                 and not any(_within(t, ok) for ok in REFERENCE_MAY_IMPORT + (REFERENCE,)))
    assert not bad, "\n".join(bad)


def test_relarray_lives_in_the_array_layer():
    import dask_tra
    from dask_tra.array.core import RelArray

    assert RelArray.__module__ == "dask_tra.array.core"
    assert dask_tra.RelArray is dask_tra.core.RelArray is dask_tra.array.Array is RelArray  # old home re-exports
