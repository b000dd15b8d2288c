"""The import rules of DESIGN.md "Layers", checked on the source, not remembered.

Arrows point down: bot → cloud | storage | forensics | lab → core. core imports no chat SDK, no
SQLAlchemy, no Azure SDK, no scapy, and only its executor may import subprocess; forensics
imports nothing else of the project; lab (the simulated estate) may use core and forensics, and
no SDK: it must run on a fresh machine with no Azure, no chat and no database.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("bot", "cloud", "core", "forensics", "lab", "storage")
SDKS = ("slack_bolt", "slack_sdk", "botbuilder", "botframework", "sqlalchemy", "alembic",
        "azure", "scapy", "google", "aiohttp", "apscheduler", "psycopg", "pydantic_settings")
ALLOWED = {
    "core": set(),
    "forensics": set(),
    "storage": {"core"},
    "cloud": {"core"},
    "lab": {"core", "forensics"},
    "bot": set(PROJECT),
}
SUBPROCESS_OK = {"core/safety/executor.py"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                node.func, "id", None)) in ("import_module", "__import__"):
            if node.args and isinstance(node.args[0], ast.Constant):
                names.append(str(node.args[0].value))
    return names


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PROJECT)
def test_arrows_point_down(package: str) -> None:
    bad = []
    for path in _sources(package):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in PROJECT and top != package and top not in ALLOWED[package]:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_core_imports_no_sdk_and_no_subprocess_outside_the_executor() -> None:
    bad = []
    for path in _sources("core"):
        rel = path.relative_to(ROOT).as_posix()
        for name in _imports(path):
            top = name.split(".")[0]
            if top in SDKS:
                bad.append(f"{rel} imports {name}")
            if top in ("subprocess", "os.system", "pty") and rel not in SUBPROCESS_OK:
                bad.append(f"{rel} imports {name} (only the executor may run processes)")
    assert not bad, "\n".join(bad)


def test_lab_imports_no_sdk_and_runs_no_process() -> None:
    """The lab answers from its scenario: no Azure/chat SDK, no database, no subprocess (the
    capture analysis it needs runs through the shell's executor, in core)."""
    bad = []
    for path in _sources("lab"):
        rel = path.relative_to(ROOT).as_posix()
        for name in _imports(path):
            top = name.split(".")[0]
            if top in SDKS or top in ("subprocess", "pty", "socket", "requests", "httpx"):
                bad.append(f"{rel} imports {name}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text("import subprocess\nfrom sqlalchemy import text\nfrom bot import cli\n")
    assert _imports(bad) == ["subprocess", "sqlalchemy", "bot"]


def test_botbuilder_is_imported_only_under_bot_teams() -> None:
    """botbuilder-python is in maintenance: the move to the Microsoft 365 Agents SDK must stay
    a change to ``bot/teams/`` alone."""
    bad = []
    for package in PROJECT:
        for path in _sources(package):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("bot/teams/"):
                continue
            bad += [f"{rel} imports {name}" for name in _imports(path)
                    if name.split(".")[0] in ("botbuilder", "botframework")]
    assert not bad, "\n".join(bad)
