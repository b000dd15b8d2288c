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
    # the activity log lists the change and evaluates nothing
    assert not run.evidence and any(r.startswith("no record cited by a CONFIRMED hypothesis "
                                                 "shows the fault") for r in run.evidence_reasons)


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
    assert not run.evidence and any(r.startswith("no record cited by a CONFIRMED hypothesis "
                                                 "shows the fault") for r in run.evidence_reasons)


def test_the_right_endpoint_on_a_record_that_shows_it_healthy_has_no_evidence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conclusion is right, but the only record cited is the endpoint's own show, which
    names pe-sql-prod and shows it Approved: naming the faulty thing is not showing the fault
    (an empty zone group, NXDOMAIN)."""
    claim = "pe-sql-prod lost its DNS zone group, so sql-orders no longer resolves (NXDOMAIN)."
    run = _play(tmp_path, monkeypatch, "private-endpoint-dns", [
        shell("az network private-endpoint show -g rg-data -n pe-sql-prod -o json",
              hypotheses=[hyp("h1", "ACTIVE", claim)]),
        complete("The private endpoint pe-sql-prod was re-created without its DNS zone group, "
                 "so the zone group no longer writes sql-orders and the name answers NXDOMAIN.",
                 confirmed=["h1"], hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])],
                 text="H1 CONFIRMED ({{audit:0}})."),
    ])
    assert run.error is None and run.solved
    assert not run.evidence and any(r.startswith("no record cited by a CONFIRMED hypothesis "
                                                 "shows the fault") for r in run.evidence_reasons)
