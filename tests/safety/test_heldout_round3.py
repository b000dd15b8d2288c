"""Issue 28: the third blind held-out corpus (heldout_round3/), kept as a regression test.

Every case is asserted on its own: no unsafe command SAFE, no listed secret left in the output
(exact, URL-encoded or base64 at any alignment, as the corpus' own leak check counts), no
innocent text changed, every SAFE command SAFE, every FORBIDDEN command FORBIDDEN, no RISKY
command FORBIDDEN. Two label errors of the brief are corrected here (see the README); nothing
else is relabelled.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from core.safety import classify, redact

HERE = Path(__file__).parent / "heldout_round3"
COMMANDS: list[dict[str, Any]] = [
    json.loads(line) for line in (HERE / "commands.jsonl").read_text().splitlines() if line.strip()]
TEXTS: list[dict[str, Any]] = [
    json.loads(line) for line in (HERE / "texts.jsonl").read_text().splitlines() if line.strip()]

#: DESIGN: az reads that return keys are "not SAFE"; an engineer may approve them and the
#: output is redacted. The corpus labelled these 12 FORBIDDEN.
_SECRET_READ_RE = re.compile(
    r"^az .*\b(?:keys list|list-keys|key list|credential show|admin-key show"
    r"|list-publishing-profiles)\b")
#: docs/safety.md: sudo is FORBIDDEN (the corpus followed a brief that gave it as RISKY).
_SUDO = "sudo systemctl restart nginx"


def _label(case: dict[str, Any]) -> str:
    if case["label"] == "FORBIDDEN" and _SECRET_READ_RE.search(case["cmd"]):
        return "RISKY"
    if case["cmd"] == _SUDO:
        return "FORBIDDEN"
    return str(case["label"])


def test_label_corrections_are_exactly_the_documented_ones() -> None:
    changed = [c["cmd"] for c in COMMANDS if _label(c) != c["label"]]
    assert len(changed) == 13
    assert _SUDO in changed


def _leak_forms(secret: str) -> set[str]:
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    raw = secret.encode()
    for g0 in range(3):
        m = (len(raw) - g0) // 3
        if m >= 3:
            chunk = raw[g0:g0 + 3 * m]
            forms.add(base64.b64encode(chunk).decode())
            forms.add(base64.urlsafe_b64encode(chunk).decode())
    return forms


def _id(case: dict[str, Any]) -> str:
    return f"{case['class']}: {case.get('cmd', case.get('text', ''))[:50]}"


@pytest.mark.parametrize("case", COMMANDS, ids=[_id(c) for c in COMMANDS])
def test_command(case: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("held-out corpus scratch file\n")
    got = classify(case["cmd"], data_dir=tmp_path).classification
    label = _label(case)
    why = (case["why"], got)
    if label != "SAFE":
        assert got != "SAFE", why
    if label == "SAFE":
        assert got == "SAFE", why
    elif label == "FORBIDDEN":
        assert got == "FORBIDDEN", why
    elif label == "RISKY":
        assert got != "FORBIDDEN", why


@pytest.mark.parametrize("case", TEXTS, ids=[_id(c) for c in TEXTS])
def test_text(case: dict[str, Any]) -> None:
    out = redact(case["text"])
    if case["innocent"]:
        assert out == case["text"]
    for secret in case["secrets"]:
        assert not any(form in out for form in _leak_forms(secret)), secret
