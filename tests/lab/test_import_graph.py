"""The lab's modules import each other without a circle, counting imports inside functions too.

A lazy in-function import hides a circle from Python but not from the reader: lab/scenario.py
and lab/validate*.py once needed one. Both now import the dataclasses from lab/model.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph(package: str) -> dict[str, set[str]]:
    modules = {_module(p): p for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from pkg import sub`` imports the submodule; ``from m import x`` the module
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                           else node.module for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_lab_has_no_import_circle() -> None:
    cycle = _cycle(_graph("lab"))
    assert cycle is None, " -> ".join(cycle or [])


def test_the_finder_sees_a_lazy_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycle(graph) == ["a", "b", "c", "a"]


def test_scenario_and_validation_share_the_model() -> None:
    graph = _graph("lab")
    assert "lab.validate" in graph["lab.scenario"]
    assert not any(m.startswith("lab.scenario") for v in ("lab.validate", "lab.validate_v2",
                   "lab.validate_sections", "lab.validate_refs", "lab.validate_refs_v2",
                   "lab.validate_ctx") for m in graph[v])
