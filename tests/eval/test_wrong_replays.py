"""Deliberately wrong investigations, written here as replays: each is played through the real
engine and lab, and scored as the failure it is, with the reason (docs/eval.md lists them
beside the rule each one tests)."""

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
          turns: list[dict[str, Any]], shipped: str = "nsg-deny-redis") -> RunRecord:
    isolate(monkeypatch, tmp_path)
    path = scenario_with_replay(tmp_path, shipped, turns)
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
    assert run.evidence_reasons == ["cites no audit record: no CONFIRMED hypothesis names the "
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
    assert any(r.startswith("no record cited by a CONFIRMED hypothesis shows the fault "
                            "(output where nsg-data/deny-web-to-redis")
               for r in run.evidence_reasons), run.evidence_reasons


def test_a_run_that_errors_counts_unsolved_with_its_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text-only turn, then nothing: the auto-prompter says Continue and the replay has no
    turn left, so the model call fails."""
    run = _play(tmp_path, monkeypatch, [{"parts": [{"text": "Looking around."}]}])
    assert run.error is not None and "has no turn 2" in run.error
    assert not run.solved and not run.evidence


RULES = "az network nsg rule list -g rg-prod-net --nsg-name nsg-data -o table"


def test_a_conclusion_that_clears_the_truth_is_a_non_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's example: refute the only hypothesis, say the truth is not the cause."""
    view = ('az vm get-instance-view -g rg-hub-net -n dns-vm-01 --query '
            '"instanceView.statuses[].displayStatus" -o tsv')
    claim = "The custom DNS server dns-vm-01 (10.0.2.4) does not answer queries."
    run = _play(tmp_path, monkeypatch, [
        shell(view, hypotheses=[hyp("h1", "ACTIVE", claim)]),
        complete("The DNS server dns-vm-01 is not the cause: it is running. No root cause was "
                 "found.", confirmed=[], refuted=["h1"],
                 hypotheses=[hyp("h1", "REFUTED", evidence=["{{audit:0}}"])],
                 text="H1 REFUTED ({{audit:0}})."),
    ], shipped="custom-dns-broken")
    assert run.error is None and not run.solved and not run.passed
    assert "no hypothesis is CONFIRMED: the conclusion rests on nothing the investigation " \
        "established" in run.solved_reasons
    assert any(r.startswith("the conclusion clears the truth (dns-vm-01)")
               for r in run.solved_reasons), run.solved_reasons


def test_a_red_herring_citing_a_listing_that_names_the_fault_has_no_evidence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The activity log names nsg-data/deny-web-to-redis (a write), but it evaluates nothing:
    it does not show the fault, whoever cites it."""
    herring = "The CI deployment of api-vm-02 broke the web tier's Redis calls."
    run = _play(tmp_path, monkeypatch, [
        shell(ACTIVITY, hypotheses=[hyp("h1", "ACTIVE", herring)]),
        complete("The CI deployment of api-vm-02 broke Redis for the web tier.",
                 confirmed=["h1"], hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])],
                 text="H1 CONFIRMED ({{audit:0}})."),
    ])
    assert not run.solved and not run.evidence
    assert any(r.startswith("no record cited by a CONFIRMED hypothesis shows the fault")
               for r in run.evidence_reasons), run.evidence_reasons
    assert run.fault_audit_ids == []


def test_the_right_answer_on_a_listing_alone_has_no_evidence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _play(tmp_path, monkeypatch, [
        shell(ACTIVITY, hypotheses=[hyp("h1", "ACTIVE", NSG_CLAIM)]),
        complete(TRUTH, confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])]),
    ])
    assert run.solved and not run.evidence and run.fault_audit_ids == []


def test_figures_and_names_no_cited_record_shows_are_ungrounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _play(tmp_path, monkeypatch, [
        shell(IP_FLOW, hypotheses=[hyp("h1", "ACTIVE", NSG_CLAIM)]),
        shell(RULES),
        complete("NSG rule deny-web-to-redis on nsg-data (priority 150) drops about 37 % of the "
                 "connections from web-vm-01 since 13:58, after nva-07 was rebooted.",
                 confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}", "{{audit:1}}"])],
                 text="H1 CONFIRMED ({{audit:0}}, {{audit:1}})."),
    ])
    assert run.solved and run.evidence, (run.solved_reasons, run.evidence_reasons)
    assert not run.grounded and not run.passed
    why = " | ".join(run.grounded_reasons)
    for figure in ("states 150,", "states 37,", "states 13:58,", "names nva-07,"):
        assert figure in why, why
    assert "deny-web-to-redis" not in why and "100" not in why  # what the records do show


def test_a_grounded_conclusion_may_name_what_the_evidence_implies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """IP flow verify names the rule; the rule names its NSG; 10.1.1.4 is web-vm-01 in
    snet-web: a conclusion built from that is grounded without the rule list."""
    run = _play(tmp_path, monkeypatch, [
        shell(IP_FLOW, hypotheses=[hyp("h1", "ACTIVE", NSG_CLAIM)]),
        complete("Rule deny-web-to-redis on nsg-data drops TCP 6379 from snet-web to "
                 "redis-vm-01.", confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])]),
    ])
    assert run.passed, (run.solved_reasons, run.evidence_reasons, run.grounded_reasons)


def _dns_turns(refuting: str) -> list[dict[str, Any]]:
    """H2 is reported in the hypotheses argument with names; its prose line names none."""
    described = ("orders-vm-01 resolves pg-orders.postgres.database.azure.com to the private "
                 "endpoint 10.0.4.4.")
    links = ("az network private-dns link vnet list -g rg-hub-dns -z "
             "privatelink.postgres.database.azure.com -o table")
    return [
        shell(links, text="Hypothesis H1: the zone is not linked to vnet-orders.\n"
                          "Hypothesis H2: the resolver is fine.",
              hypotheses=[hyp("h1", "ACTIVE", "privatelink.postgres.database.azure.com has no "
                                              "link to vnet-orders."),
                          hyp("h2", "ACTIVE", described)]),
        shell(refuting),
        complete("privatelink.postgres.database.azure.com is not linked to vnet-orders, so the "
                 "name resolves to the public address 20.61.14.5.",
                 confirmed=["h1"], refuted=["h2"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"]),
                             hyp("h2", "REFUTED", evidence=["{{audit:1}}"])],
                 text="H1 CONFIRMED ({{audit:0}}).\nH2 REFUTED ({{audit:1}})."),
    ]


def test_a_refutation_is_judged_against_the_reported_hypothesis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nslookup = ("az vm run-command invoke -g rg-orders-app -n orders-vm-01 --command-id "
                "RunShellScript --scripts \"nslookup pg-orders.postgres.database.azure.com\"")
    run = _play(tmp_path, monkeypatch, _dns_turns(nslookup), shipped="private-dns-link-missing")
    assert run.risky_approved == 1  # the in-VM probe, approved by the reads policy
    assert not any("unrelated" in r for r in run.evidence_reasons), run.evidence_reasons
    assert run.evidence, run.evidence_reasons


def test_a_refutation_citing_another_vm_is_unrelated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = ('az vm get-instance-view -g rg-prod-app -n app-vm-01 --query '
             '"instanceView.statuses[].displayStatus" -o tsv')
    run = _play(tmp_path, monkeypatch, _dns_turns(other), shipped="private-dns-link-missing")
    assert any(r.startswith("h2 REFUTED cites ") and "unrelated to its claim" in r
               for r in run.evidence_reasons), run.evidence_reasons


def test_confirming_something_else_does_not_solve_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    view = ('az vm get-instance-view -g rg-prod-data -n redis-vm-01 --query '
            '"instanceView.statuses[].displayStatus" -o tsv')
    run = _play(tmp_path, monkeypatch, [
        shell(view, hypotheses=[hyp("h1", "ACTIVE", "redis-vm-01 restarted and Redis lost "
                                                    "its data.")]),
        complete(TRUTH, confirmed=["h1"],
                 hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])]),
    ])
    assert not run.solved
    assert any(r.startswith("no CONFIRMED hypothesis names the truth (h1: redis-vm-01 "
                            "restarted") for r in run.solved_reasons), run.solved_reasons
