"""`ghost eval --replay` over every shipped scenario: each one played through the real engine,
gate, lab orchestrator and forensics, scored solved with cited evidence, and the report written.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.commands.eval import run_suite
from lab.eval.record import file_sha256, read_json
from lab.scenario import load_scenario, shipped_scenarios
from tests.eval.helpers import isolate, settings


def test_replay_suite_solves_every_shipped_scenario_with_cited_evidence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(monkeypatch, tmp_path)
    report = tmp_path / "report"
    out, progress = io.StringIO(), io.StringIO()
    paths = shipped_scenarios()
    code = run_suite(settings(tmp_path), paths, replay=True, repeat=1, parallel=2,
                     report=report, policy="reads", out=out, progress=progress)
    text = out.getvalue()
    assert code == 0, text

    header, runs = read_json(report / "eval.json")
    print(f"\nreplay suite: {len(runs)} scenarios, wall time {header['wall_s']}s")
    assert header["wall_s"] < 180, "the replay suite must stay under 3 minutes"
    assert sorted(r.scenario for r in runs) == sorted(p.stem for p in paths)
    for run in runs:
        path = next(p for p in paths if p.stem == run.scenario)
        scenario = load_scenario(path)
        assert run.error is None, run.error
        assert run.solved and run.evidence, (run.scenario, run.solved_reasons,
                                             run.evidence_reasons)
        assert run.model == f"replay:{run.scenario}"
        assert run.category == scenario.truth.category
        assert run.scenario_sha256 == file_sha256(path)
        assert run.replay_sha256 == file_sha256(scenario.replay_path())
        assert run.ghost_version and run.session_id
        assert run.fault_audit_ids and set(run.fault_audit_ids) <= set(run.cited_audit_ids)
        assert run.turns > 0 and run.commands > 0 and run.safe > 0
        assert run.forbidden == 0 and run.risky_denied == 0  # the replays only read
        assert run.tokens == 0 and run.cost_usd == 0.0  # a replay costs nothing
        replay = json.loads((scenario.replay_path() or Path()).read_text(encoding="utf-8"))
        captures = [p for t in replay for p in t["parts"]
                    if p.get("functionCall", {}).get("name") == "capture_traffic"]
        if captures and run.category != "extension_missing":
            # the capture's steps are RISKY and the reads policy approved them
            assert run.captures >= 1 and run.risky_approved >= 3
    assert f"Solved {len(paths)}/{len(paths)} (100%)" in text
    assert f"with cited evidence {len(paths)}/{len(paths)}" in text
    assert "Suite wall time:" in text
    lines = progress.getvalue().splitlines()
    assert lines[0].startswith(f"ghost eval: {len(paths)} scenario(s) x 1, their replays")
    assert len(lines) == 1 + len(paths) and lines[-1].startswith(f"[{'#' * 20}] {len(paths)}/")
    md = (report / "eval.md").read_text(encoding="utf-8")
    assert f"Solved {len(paths)}/{len(paths)}" in md and "| nsg-deny-redis | yes | yes |" in md
    for run in runs:  # each run keeps its own database and transcript for inspection
        assert (report / "runs" / f"{run.scenario}-1" / "ghost.db").is_file()
        assert "RCA REPORT WRITTEN" in (report / "runs" / f"{run.scenario}-1" /
                                        "transcript.txt").read_text(encoding="utf-8")
