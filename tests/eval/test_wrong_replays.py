"""Deliberately wrong investigations of nsg-deny-redis, written here as replays: each is played
through the real engine and lab, and scored as the failure it is, with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.eval.runner import EvalOptions, run_scenario
from lab.eval.record import RunRecord
from tests.eval.helpers import complete, hyp, isolate, scenario_with_replay, settings, shell

ACTIVITY = ('az monitor activity-log list --offset 1h --query '
            '"[].[eventTimestamp, operationName.value, resourceId, caller]" -o tsv')
IP_FLOW = ("az network watcher test-ip-flow -g rg-prod-data --vm redis-vm-01 --direction "
           "Inbound --protocol TCP --local 10.1.2.4:6379 --remote 10.1.1.4:49152")
NVA_VIEW = ('az vm get-instance-view -g rg-prod-net -n nva-01 --query '
            '"instanceView.statuses[].displayStatus" -o tsv')
NSG_CLAIM = "An NSG rule on nsg-data denies TCP 6379 to redis-vm-01."
TRUTH = ("NSG rule deny-web-to-redis on nsg-data (priority 100) drops TCP 6379 from snet-web "
         "to redis-vm-01; it overrides allow-web-to-redis.")


def _play(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          turns: list[dict[str, Any]]) -> RunRecord:
    isolate(monkeypatch, tmp_path)
    path = scenario_with_replay(tmp_path, "nsg-deny-redis", turns)
    return run_scenario(path, settings(tmp_path), EvalOptions(replay=True), repeat=0,
                        data_dir=tmp_path / "run")


def test_blaming_the_red_herring_is_unsolved(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    herring = "The CI deployment to api-vm-02 broke the web tier's Redis calls."
    run = _play(tmp_path, monkeypatch, [
        shell(ACTIVITY, hypotheses=[hyp("h1", "ACTIVE", herring)]),
        complete("The CI deployment to api-vm-02 40 minutes ago broke the web tier: its CPU "
                 "is saturated and Redis calls time out.", confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])],
                 text="H1 CONFIRMED ({{audit:0}})."),
    ])
    assert run.error is None
    assert not run.solved and not run.passed
    assert "the conclusion blames red herring 'api-vm-02'" in run.solved_reasons
    assert "the conclusion blames red herring 'cpu'" in run.solved_reasons
    assert "hypothesis h1 blaming red herring 'api-vm-02' is CONFIRMED" in run.solved_reasons
    assert any(r.startswith("the conclusion does not name the truth (nsg_deny: ")
               and "deny-web-to-redis" in r for r in run.solved_reasons)


def test_citing_an_unrelated_record_fails_evidence(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    run = _play(tmp_path, monkeypatch, [
        shell(IP_FLOW, hypotheses=[hyp("h1", "ACTIVE", NSG_CLAIM)]),
        shell(NVA_VIEW, reasoning="Is the NVA up?"),
        complete(TRUTH, confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED",
                                 evidence=["{{audit:0}}", "{{audit:1}}"])],
                 text="H1 CONFIRMED ({{audit:0}}, {{audit:1}})."),
    ])
    assert run.error is None
    assert run.solved, run.solved_reasons  # the right answer…
    assert not run.evidence and not run.passed  # …on a citation that does not support it
    unrelated = [r for r in run.evidence_reasons if "unrelated to its claim" in r]
    assert len(unrelated) == 1 and "nva-01" in unrelated[0], run.evidence_reasons
    assert unrelated[0].startswith("h1 CONFIRMED cites ")
    assert len(run.fault_audit_ids) == 1  # the test-ip-flow Deny still shows the fault


def test_stopping_without_evidence_is_uncited(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    run = _play(tmp_path, monkeypatch, [
        complete(TRUTH, confirmed=["h1"], hypotheses=[hyp("h1", "CONFIRMED", NSG_CLAIM)],
                 text="Hypothesis H1: an NSG rule blocks Redis. It must be that."),
    ])
    assert run.error is None and run.commands == 0
    assert not run.evidence and not run.passed
    assert run.evidence_reasons == ["cites no audit record: no resolved hypothesis names the "
                                    "commands that decided it"]


def test_evidence_that_does_not_show_the_fault_is_uncited(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    route = ("az network watcher show-next-hop -g rg-prod-app --vm web-vm-01 --source-ip "
             "10.1.1.4 --dest-ip 10.1.2.4")
    run = _play(tmp_path, monkeypatch, [
        shell(route, hypotheses=[hyp("h1", "ACTIVE", NSG_CLAIM)]),
        complete(TRUTH, confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])]),
    ])
    assert run.solved and not run.evidence
    assert any(r.startswith("no cited record shows the fault (output naming deny-web-to-redis")
               for r in run.evidence_reasons), run.evidence_reasons


def test_a_run_that_errors_counts_unsolved_with_its_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text-only turn, then nothing: the auto-prompter says Continue and the replay has no
    turn left, so the model call fails."""
    run = _play(tmp_path, monkeypatch, [{"parts": [{"text": "Looking around."}]}])
    assert run.error is not None and "has no turn 2" in run.error
    assert not run.solved and not run.evidence
