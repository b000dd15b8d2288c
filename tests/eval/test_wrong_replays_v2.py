"""Deliberately wrong investigations of two format-2 scenarios, played through the real engine
and lab: each is scored unsolved, with the reason (issue 32's done-when)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.eval.runner import EvalOptions, run_scenario
from lab.eval.record import RunRecord
from tests.eval.helpers import complete, hyp, isolate, scenario_with_replay, settings, shell

ACTIVITY = ('az monitor activity-log list --offset 2h --query '
            '"[].[eventTimestamp, operationName.value, resourceId, caller]" -o tsv')


def _play(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shipped: str,
          turns: list[dict[str, Any]]) -> RunRecord:
    isolate(monkeypatch, tmp_path)
    path = scenario_with_replay(tmp_path, shipped, turns)
    return run_scenario(path, settings(tmp_path), EvalOptions(replay=True), repeat=0,
                        data_dir=tmp_path / "run")


def test_snat_exhaustion_blamed_on_the_nsg_change_is_unsolved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claim = "olga's rule nsg-web/allow-partner-out drops a third of the partner calls."
    run = _play(tmp_path, monkeypatch, "snat-exhaustion", [
        shell(ACTIVITY, hypotheses=[hyp("h1", "ACTIVE", claim)]),
        complete("olga's change to nsg-web/allow-partner-out at 13:40 drops part of the calls "
                 "from web-vm-01 and web-vm-02 to 203.0.113.50:443.", confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])],
                 text="H1 CONFIRMED ({{audit:0}})."),
    ])
    assert run.error is None and not run.solved
    assert "the conclusion blames red herring 'allow-partner-out'" in run.solved_reasons
    assert any(r.startswith("the conclusion does not name the truth (snat_exhaustion: ")
               for r in run.solved_reasons)


def test_a_probe_blocked_outage_blamed_on_maintenance_is_unsolved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claim = "The platform maintenance redeploy of orders-vm-01 took the orders API down."
    run = _play(tmp_path, monkeypatch, "lb-probe-blocked", [
        shell(ACTIVITY, hypotheses=[hyp("h1", "ACTIVE", claim)]),
        complete("The platform maintenance redeploy of orders-vm-01 at 12:55 took the orders "
                 "API behind ilb-orders down until it recovered.", confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])],
                 text="H1 CONFIRMED ({{audit:0}})."),
    ])
    assert run.error is None and not run.solved
    assert "the conclusion blames red herring 'maintenance'" in run.solved_reasons
    assert "the conclusion blames red herring 'redeploy'" in run.solved_reasons
