"""The held-out real-kernel captures (heldout/README.md): each one's first finding is right and
nothing its ground truth rules out is claimed, judged exactly as the blind check judged them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from forensics.engine import analyze_capture
from forensics.semantic import build_semantic

HELDOUT = Path(__file__).resolve().parent / "heldout"
TRUTH: dict[str, Any] = json.loads((HELDOUT / "truth.json").read_text())
SEVERITY = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}


def _severity(finding: dict[str, Any]) -> int:
    return SEVERITY[str(finding["severity"]).lower()]


def problems(case: dict[str, Any], findings: list[dict[str, Any]]) -> list[str]:
    """Why the findings are wrong for this case (empty: right)."""
    top = findings[0] if findings else None
    expect = case["expect_first"]
    above_info = [f for f in findings if _severity(f) > 0]
    why = []
    if not (top and top["id"] in expect) and not ("no_problem_seen" in expect and not above_info):
        why.append(f"first finding {top and top['id']}, expected one of {expect}")
    for entry in case["forbidden"]:
        fid, _, floor = entry.partition(">")
        limit = SEVERITY[floor or "info"]
        why += [f"{fid} at {f['severity']}" for f in findings
                if f["id"] == fid and _severity(f) > limit]
    if top is not None:
        said = " ".join(str(top.get(k, "")) for k in ("title", "detail", "next_step")).lower()
        why += [f"the first finding says {p!r}" for p in case["forbidden_phrases"] if p in said]
    return why


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_the_first_finding_is_right_and_nothing_ruled_out_is_claimed(name: str) -> None:
    case = TRUTH[name]
    path = HELDOUT / case["capture"]
    doc = build_semantic(analyze_capture(str(path)), str(path))
    findings = list(doc["findings"])
    assert problems(case, findings) == [], (case["what"], [
        (f["id"], f["severity"], f["title"]) for f in findings[:4]])


def test_the_judge_is_not_a_rubber_stamp() -> None:
    """A run that claims loss on a healthy capture, or nothing on a faulty one, is wrong."""
    healthy = next(c for c in TRUTH.values() if c["expect_first"] == ["no_problem_seen"])
    loss = {"id": "tcp_retransmissions", "severity": "medium", "title": "", "detail": ""}
    assert problems(healthy, [loss])
    faulty = next(c for c in TRUTH.values() if "port_scan" in c["expect_first"])
    assert problems(faulty, [{"id": "no_problem_seen", "severity": "info", "title": ""}])
