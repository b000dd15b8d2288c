"""The ``cli`` fixture: `ghost ARGS` in this process against the test database."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

Run = Callable[..., tuple[int, Any]]


@pytest.fixture
def cli(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Run]:
    """`ghost ARGS` in this process against the test database: (exit, parsed JSON or text)."""
    for var in [v for v in os.environ if v.startswith(("GHOST_", "SLACK_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("GHOST_DATABASE_URL", migrated_url)
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)

    def run(*argv: str) -> tuple[int, Any]:
        capsys.readouterr()
        code = main(list(argv))
        out = capsys.readouterr().out
        if "--jsonl" in argv:
            return code, [json.loads(ln) for ln in out.splitlines() if ln.strip()]
        if "--json" in argv:
            return code, json.loads(out)
        return code, out

    yield run
