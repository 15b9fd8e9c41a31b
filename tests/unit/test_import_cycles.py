"""No import circle among the product's modules (app, workers, client).

The graph counts every import statement a module holds: at module level, under `if
TYPE_CHECKING:` and inside functions. A function-level import is how the CLI and the roles keep
start-up cheap (pydantic-settings, hcl2, the database stack load in the command that needs
them), and that stays allowed: it is only an edge. What it may not do is close a circle, since
that only hides from the interpreter a pair of modules that need each other; such a pair shares
a third module below both instead (as app/cli/support/settings.py and app/cli/support/deployment_view.py do).

`import a.b` and `from a import b` are edges to the module `a.b`; the parent packages that
Python runs first are not counted, or every package whose __init__ imports its submodules
would be a circle with each of them."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "workers", "client")

Graph = Mapping[str, frozenset[str]]


def modules_under(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the packages under root."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of a `from ... import` target, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path, known: Iterable[str]) -> frozenset[str]:
    """The known modules `module` (read from `path`) imports anywhere in its body."""
    names = set(known)
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node)
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if target in names:
                    out.add(target)
                elif source in names:
                    out.add(source)
    out.discard(module)
    return frozenset(out)


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, frozenset[str]]:
    found = modules_under(root, packages)
    return {name: imports_of(name, path, found) for name, path in found.items()}


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative
    so that a long import chain cannot reach Python's recursion limit), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _describe(graph: Graph, component: list[str]) -> str:
    members = set(component)
    return "\n".join(f"  {m} -> {', '.join(sorted(graph[m] & members))}" for m in component)


def test_the_product_has_no_import_circle() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert len(graph) > 300  # the walk found the product, not an empty tree
    found = circles(graph)
    assert found == [], "import circles:\n" + "\n\n".join(_describe(graph, c) for c in found)


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "probe"
    package.mkdir()
    (package / "__init__.py").write_text("from probe import top\n")
    (package / "top.py").write_text("import probe.a\n")
    (package / "a.py").write_text("from probe.b import helper\n")
    # A function-level import still closes the circle.
    (package / "b.py").write_text("def helper() -> None:\n    from . import a\n")
    (package / "c.py").write_text("from probe import a, b\n")  # imports both, is part of no circle
    graph = import_graph(tmp_path, ["probe"])
    assert graph["probe.b"] == {"probe.a"}
    assert graph["probe.c"] == {"probe.a", "probe.b"}
    assert circles(graph) == [["probe.a", "probe.b"]]
    (package / "b.py").write_text("def helper() -> None:\n    pass\n")
    assert circles(import_graph(tmp_path, ["probe"])) == []


def test_circles_are_found_however_long_the_chain() -> None:
    chain = {f"m{i}": frozenset({f"m{i + 1}"}) for i in range(5000)}
    assert circles(chain) == []
    looped = {**chain, "m5000": frozenset({"m0"})}
    assert circles(looped) == [sorted(looped)]
