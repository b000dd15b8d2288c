"""forensics/ is standalone: it imports nothing else of the project (it parses untrusted bytes)."""

from __future__ import annotations

import ast
from pathlib import Path

FORBIDDEN = {"bot", "core", "storage", "cloud"}
PKG = Path(__file__).resolve().parents[2] / "forensics"


def test_forensics_imports_nothing_of_the_project() -> None:
    offenders = []
    for py in PKG.glob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{py.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []
    assert len(list(PKG.glob("*.py"))) >= 10
