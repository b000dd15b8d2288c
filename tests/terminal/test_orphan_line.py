"""An orphan scan that could not look everywhere never also says "no orphans" (issue 17)."""

from __future__ import annotations

import io

from bot.startup import orphan_check
from bot.terminal import Prompter
from storage.store import Store
from tests.engine.fakes import RecordingOrchestrator


def _check(store: Store, report: dict[str, object]) -> str:
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a").session_id
    out = io.StringIO()
    assert orphan_check(store, RecordingOrchestrator(report), sid,
                        Prompter(io.StringIO(""), out), out) == []
    return out.getvalue()


def test_an_incomplete_scan_does_not_claim_there_are_no_orphans(store: Store) -> None:
    text = _check(store, {"status": "ok", "tasks": [], "orphans": {
        "errors": ["Azure scan failed: AuthenticationFailed: sign in with `az login`"]}})
    assert "[WARN] Orphan scan incomplete: Azure scan failed" in text
    assert "No orphaned resources found" not in text and "[OK]" not in text
    assert "the rest is unknown" in text


def test_a_complete_scan_with_nothing_found_says_so(store: Store) -> None:
    text = _check(store, {"status": "ok", "tasks": [], "orphans": {}})
    assert "[OK] No orphaned resources found." in text and "WARN" not in text
