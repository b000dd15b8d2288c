"""GHOST_LOG_FORMAT=json: one JSON object per line, the session id on every line of a step."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from bot.logging_setup import configure, session_context
from bot.worker import Worker


@pytest.fixture
def json_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    monkeypatch.setenv("GHOST_LOG_FORMAT", "json")
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    configure(stream=stream)
    try:
        yield stream
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_every_line_is_json_with_the_session_id(json_log: io.StringIO) -> None:
    log = logging.getLogger("ghost.test")
    log.info("outside %s", "any investigation")
    with session_context("gh-123"):
        log.warning("inside", extra={"audit_id": 7})
        try:
            raise ValueError("bad")
        except ValueError:
            log.exception("failed")
    first, second, third = _lines(json_log)
    assert first["session_id"] is None and first["message"] == "outside any investigation"
    assert second["session_id"] == "gh-123" and second["audit_id"] == 7
    assert second["level"] == "WARNING" and second["logger"] == "ghost.test"
    assert third["session_id"] == "gh-123" and "ValueError: bad" in third["exc"]
    assert {"ts", "process", "thread"} <= set(first)


class _Store:
    """The few store calls a worker makes around one step."""

    def get_investigation(self, session_id: str) -> Any:
        return type("Investigation", (), {"status": "running"})()

    def release_lease(self, session_id: str, owner: str) -> None:
        logging.getLogger("ghost.store").info("released %s", session_id)

    def renew_lease(self, *args: Any, **kwargs: Any) -> bool:
        return True


class _Shell:
    def recover_interrupted(self) -> None:
        logging.getLogger("ghost.shell").info("nothing to recover")


class _Engine:
    def advance(self, session_id: str) -> Any:
        raise RuntimeError("Gemini exploded")


def test_a_workers_lines_carry_the_investigation(json_log: io.StringIO) -> None:
    reported: list[str] = []
    worker = Worker(store=_Store(), engine=_Engine(),  # type: ignore[arg-type]
                    shell_for=lambda sid: _Shell(), after=lambda sid, outcome: None,
                    failed=lambda sid, exc: reported.append(sid))
    worker.work("gh-abc")
    lines = _lines(json_log)
    assert reported == ["gh-abc"]
    assert [ln["message"] for ln in lines] == ["nothing to recover",
                                               "investigation gh-abc failed", "released gh-abc"]
    assert {ln["session_id"] for ln in lines} == {"gh-abc"}
    assert "RuntimeError: Gemini exploded" in lines[1]["exc"]


def test_text_format_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GHOST_LOG_FORMAT", raising=False)
    stream = io.StringIO()
    root = logging.getLogger()
    saved = list(root.handlers)
    try:
        configure(stream=stream)
        with session_context("gh-9"):
            logging.getLogger("ghost.x").info("hello")
    finally:
        root.handlers[:] = saved
    assert stream.getvalue().rstrip().endswith("INFO ghost.x [gh-9]: hello")
