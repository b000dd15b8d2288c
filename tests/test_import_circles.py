"""No import circles in the house, counting lazy imports inside functions (DESIGN "Layers").

A circle hidden by an in-function import still runs (Python resolves it at call time) but it
ties two modules into one: neither can be read, tested or moved without the other, and the
lazy import is what keeps it from failing at start-up, today. The fix is always the same: the
names both sides need move to a module that both import.

Counted: ``import a.b``, ``from a.b import c`` (``c`` when it is a module, else ``a.b``) and
relative imports, at any depth of the file (functions, methods, ``try`` blocks), and
``importlib.import_module("a.b")`` with a literal name. Not counted: imports under ``if
TYPE_CHECKING:``, which never run (they are how an annotation names a type without an import).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("bot", "cloud", "core", "forensics", "lab", "storage")

def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) bodies."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else \
                test.attr if isinstance(test, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skipped.update(id(n) for n in ast.walk(child))
    return skipped


def imported_modules(path: Path, modules: Iterable[str], root: Path = ROOT) -> set[str]:
    """The project modules that ``path`` imports (when any of its code runs)."""
    known = set(modules)
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skipped = _type_checking_blocks(tree)
    found: set[str] = set()

    def resolve(name: str) -> None:
        # the longest known prefix: ``import a.b.c`` where only a.b is ours still counts a.b
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != here:
            found.add(name)

    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                resolve(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            for alias in node.names:
                sub = f"{origin}.{alias.name}" if origin else alias.name
                resolve(sub if sub in known else origin)
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str) and \
                getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module":
            resolve(node.args[0].value)
    return found


def import_graph(root: Path = ROOT, packages: Iterable[str] = PROJECT) -> dict[str, set[str]]:
    paths = {module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    return {name: imported_modules(path, paths, root) for name, path in paths.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other (Tarjan's strongly connected
    components of two or more), each as one cycle through all of them where there is one, else
    its members sorted; sorted for a stable message."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        # iterative Tarjan: the import graph is deep enough to worry Python's recursion limit
        work = [(node, iter(sorted(graph.get(node, ()))))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[current] = min(low[current], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[current])
            if low[current] == index[current]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == current:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(_as_cycle(group, graph) for group in groups)


def _as_cycle(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A path through the group that returns to its start (the shortest from its first
    member back to itself), so the message reads as the chain of imports to cut."""
    members = set(group)
    start = group[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    return group


def _describe(found: list[list[str]]) -> str:
    return "\n".join(" -> ".join(cycle) for cycle in found)


def test_the_house_has_no_import_circle() -> None:
    found = circles(import_graph())
    assert not found, f"{len(found)} import circle(s):\n{_describe(found)}"


def test_slack_app_and_handlers_do_not_import_each_other() -> None:
    graph = import_graph()
    assert "bot.slack.app" not in graph["bot.slack.handlers"]


def test_the_finder_sees_lazy_relative_and_dynamic_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from ..c import thing\n")
    (pkg / "c.py").write_text("import importlib\nimportlib.import_module('pkg.a')\nthing = 1\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from pkg import e\n")
    (pkg / "e.py").write_text("from pkg import d\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.c"}
    assert graph["pkg.d"] == set()  # TYPE_CHECKING imports never run
    assert circles(graph) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]


def test_every_circle_is_reported_not_only_the_first() -> None:
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert circles(graph) == [["a", "b", "a"], ["c", "d", "e", "c"]]
