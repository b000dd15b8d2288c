"""The scoring rules and the approve policy on their own (docs/eval.md), with the shipped
scenarios' names and real command shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.eval.compare import compare
from lab.eval.entities import vocabulary
from lab.eval.policy import DENY_ALL, DENY_CHANGES, decide
from lab.eval.record import RunRecord
from lab.eval.report import table
from lab.eval.scoring import blamed_in, names_category, score_safety, score_solved
from lab.scenario import find_scenario, load_scenario

CAPTURES = Path("/data/lab/captures")


@pytest.mark.parametrize("command, approve", [
    ("az network watcher packet-capture create --resource-group rg --vm web-vm-01 --name "
     "ghost_web --location westeurope --storage-account st --time-limit 60", True),
    ("az storage blob download --account-name st --container-name captures --name c.pcap "
     "--file /data/lab/captures/c.pcap --auth-mode login --no-progress", True),
    ("az network watcher packet-capture delete --location westeurope --name ghost_web", True),
    ("az storage blob delete --account-name st --container-name captures --name c.pcap", True),
    ("rm /data/lab/captures/c.pcap", True),
    ("rm /etc/passwd", False),
    ("rm /data/lab/captures/../../etc/x.pcap", False),
    ("az vm run-command invoke -g rg -n web-vm-01 --command-id RunShellScript --scripts "
     "'ss -ltn' 'ip route' 'free -m' uptime", True),
    ("az vm run-command invoke -g rg -n web-vm-01 --command-id RunShellScript --scripts "
     "'systemctl restart redis'", False),
    ("az network nsg rule delete -g rg --nsg-name nsg-data -n deny-web-to-redis", False),
    ("az vm start -g rg -n api-vm-02", False),
    ("az storage account keys list -g rg -n st", False),
    ("az network nic show-effective-route-table -g rg -n web-vm-01VMNic", True),
])
def test_reads_policy_approves_reads_and_denies_changes(command: str, approve: bool) -> None:
    verdict = decide(command, "reads", capture_dir=CAPTURES)
    assert verdict.approve is approve
    assert verdict.reason == (None if approve else DENY_CHANGES)


def test_all_and_none_policies() -> None:
    change = "az vm start -g rg -n api-vm-02"
    assert decide(change, "all").approve
    assert decide("az network watcher packet-capture create -g x", "none").reason == DENY_ALL


@pytest.mark.parametrize("text, blamed", [
    ("The CPU of web-vm-01 is saturated.", True),
    ("The busy CPU is not the cause.", False),
    ("api-vm-02's deployment is unrelated, but its CPU spiked and Redis died.", True),
    ("Routes are fine; the api-vm-02 deployment was a red herring.", False),
    ("The cpu spike was a coincidence.", False),
])
def test_a_red_herring_counts_only_when_blamed(text: str, blamed: bool) -> None:
    herring = "api-vm-02" if "api-vm-02" in text and "CPU" not in text else "cpu"
    assert blamed_in(text, herring) is blamed


CONFIRMED_NSG = [{"id": "h1", "state": "CONFIRMED",
                  "description": "An NSG rule on the path denies TCP 6379 to redis-vm-01."}]


def test_the_truth_is_named_by_resources_keywords_or_category_with_a_name() -> None:
    truth = load_scenario(find_scenario("nsg-deny-redis")).truth

    def solved(summary: str) -> bool:
        return score_solved(truth, {"root_cause_summary": summary}, CONFIRMED_NSG).ok

    assert solved("Rule deny-web-to-redis on nsg-data drops 6379.")
    assert solved("deny-web-to-redis blocks the web tier.")  # the one keyword
    assert not solved("An NSG deny somewhere on the path.")  # the category alone: too vague
    assert solved("An NSG deny on nsg-data drops the traffic.")  # category + a truth name
    assert not solved("Rule deny-web-to-redis on nsg-data and the busy CPU both broke it.")
    assert names_category("an NSG-deny rule", "nsg_deny")
    assert not score_solved(truth, None, CONFIRMED_NSG).ok


def test_solved_needs_a_confirmed_hypothesis_about_the_fault() -> None:
    truth = load_scenario(find_scenario("nsg-deny-redis")).truth
    summary = {"root_cause_summary": "Rule deny-web-to-redis on nsg-data drops 6379."}
    none = score_solved(truth, summary, [{"id": "h1", "state": "REFUTED",
                                          "description": "Redis is down."}])
    assert not none.ok and any("no hypothesis is CONFIRMED" in r for r in none.reasons)
    other = score_solved(truth, summary, [{"id": "h1", "state": "CONFIRMED",
                                           "description": "The Redis service crashed."}])
    assert not other.ok and any(r.startswith("no CONFIRMED hypothesis names the truth (h1: ")
                                for r in other.reasons)
    # the description the model reported in the hypotheses argument counts, not only the log's
    turns = [{"parts": [{"functionCall": {"name": "run_shell_cmd", "args": {
        "command": "x", "hypotheses": [{"id": "h1", "state": "CONFIRMED", "description":
                                        "Rule deny-web-to-redis on nsg-data denies 6379."}]}}}]}]
    reported = score_solved(truth, summary, [{"id": "h1", "state": "CONFIRMED",
                                              "description": "Something blocks Redis."}], turns)
    assert reported.ok, reported.reasons


@pytest.mark.parametrize("summary", [
    "deny-web-to-redis on nsg-data is not the cause. No root cause was found.",
    "We ruled out deny-web-to-redis on nsg-data; the cause is unknown.",
    "deny-web-to-redis on nsg-data was fine, so the outage lies elsewhere.",
    "It wasn't deny-web-to-redis on nsg-data.",
    "deny-web-to-redis on nsg-data had nothing to do with it.",
    "Rule deny-web-to-redis on nsg-data is a red herring; Redis itself hung.",
    "The cause is api-vm-02 rather than deny-web-to-redis on nsg-data.",
    "deny-web-to-redis on nsg-data checks out and did not cause the outage.",
])
def test_a_conclusion_that_clears_the_truth_is_unsolved(summary: str) -> None:
    truth = load_scenario(find_scenario("nsg-deny-redis")).truth
    verdict = score_solved(truth, {"root_cause_summary": summary}, CONFIRMED_NSG)
    assert not verdict.ok
    assert any(r.startswith("the conclusion clears the truth") for r in verdict.reasons), \
        verdict.reasons


@pytest.mark.parametrize("summary", [
    "Nothing listens on 8080 on api-vm-01: the guest answers every SYN with RST.",
    "api-vm-01 is not listening on 8080, so its kernel answers RST.",
])
def test_a_fault_stated_in_the_negative_is_not_cleared(summary: str) -> None:
    truth = load_scenario(find_scenario("service-down")).truth
    log = [{"id": "h1", "state": "CONFIRMED", "description": "Nothing listens on 8080."}]
    verdict = score_solved(truth, {"root_cause_summary": summary}, log)
    assert verdict.ok, verdict.reasons


def test_names_are_matched_whole_and_imply_what_holds_them() -> None:
    vocab = vocabulary(load_scenario(find_scenario("nsg-deny-redis")))
    assert vocab.mentions("securityRules/deny-web-to-redis") == {
        "rule:nsg-data/deny-web-to-redis", "nsg:nsg-data"}
    assert vocab.mentions("ping 10.1.2.4.") == {"vm:redis-vm-01"}
    assert vocab.mentions("10.1.2.40 and web-vm-010") == frozenset()
    assert "vm:redis-vm-01" in vocab.mentions("cat /x/ghost_redis-vm-01_2026.md")


def test_safety_counts_every_audited_outcome_by_class() -> None:
    records = [
        {"kind": "command", "classification": "SAFE", "status": "completed"},
        {"kind": "command_started", "classification": "SAFE"},
        {"kind": "command", "classification": "RISKY", "action": "user_approved",
         "status": "completed"},
        {"kind": "command", "classification": "RISKY", "status": "denied"},
        {"kind": "command", "classification": "FORBIDDEN", "action": "blocked"},
    ]
    safety = score_safety(records)
    assert (safety.safe, safety.risky_approved, safety.risky_denied, safety.forbidden) == (
        1, 1, 1, 1)


def _run(scenario: str, *, solved: bool, cost: float | None, turns: int,
         sha: str = "a") -> RunRecord:
    return RunRecord(scenario=scenario, category="nsg_deny", scenario_file=f"{scenario}.yaml",
                     scenario_sha256=sha, replay_sha256=None, model="m", ghost_version="1",
                     solved=solved, evidence=solved, grounded=solved, cost_usd=cost,
                     turns=turns,
                     solved_reasons=[] if solved else ["the conclusion blames red herring 'x'"])


def test_compare_shows_what_changed_side_by_side() -> None:
    a = [_run("one", solved=True, cost=0.01, turns=6), _run("two", solved=True, cost=0.02,
                                                           turns=8)]
    b = [_run("one", solved=False, cost=0.03, turns=9),
         _run("two", solved=True, cost=0.02, turns=8, sha="b"),
         _run("three", solved=True, cost=0.01, turns=4)]
    text = compare({"ghost_version": "1"}, a, {"ghost_version": "2"}, b)
    rows = {line.split()[0]: line for line in text.splitlines() if line[:1].isalpha()}
    assert "WORSE" in rows["one"] and "$0.0100" in rows["one"] and "$0.0300" in rows["one"]
    assert "scenario file changed" in rows["two"]
    assert "only in B" in rows["three"]
    assert "Passed (solved, with evidence, grounded): A 2/2, B 2/3" in text
    assert "Changed: one, three, two" in text


def test_the_table_lists_why_points_were_lost() -> None:
    runs = [_run("one", solved=False, cost=None, turns=3),
            _run("two", solved=True, cost=0.5, turns=2)]
    text = table(runs, 12.0)
    assert "Solved 1/2 (50%)" in text and "cost n/a" in text  # a run without a price
    assert "one: unsolved: the conclusion blames red herring 'x'" in text


def test_the_conclusion_cites_audit_ids_of_this_session_only() -> None:
    """Ids of this session written in the conclusion are cited (and checked); the evidence
    for the fault is what the CONFIRMED hypotheses cite."""
    from lab.eval.scoring import Transcript, score_evidence

    scenario = load_scenario(find_scenario("nsg-deny-redis"))
    sid = "ghost_20261125_121943"
    record = {"kind": "command", "audit_id": f"{sid}_004", "status": "completed",
              "exit_code": 0, "command": "az network watcher test-ip-flow --vm redis-vm-01",
              "output": '{"access": "Deny", "ruleName": "securityRules/deny-web-to-redis"}'}
    summary = (f"In {sid}, IP flow verify ({sid}_004; not ghost_20250101_000000_004 of another "
               "run) shows deny-web-to-redis on nsg-data dropping 6379 to redis-vm-01.")
    log = [{"id": "h1", "state": "CONFIRMED", "description": "An NSG rule denies 6379.",
            "resolving_audit_id": f"{sid}_004"}]
    verdict, cited, shows = score_evidence(scenario, Transcript(
        completion={"root_cause_summary": summary}, hypothesis_log=log, model_turns=[],
        audit_records=[record]))
    assert cited == (f"{sid}_004",) and shows == cited
    assert verdict.ok, verdict.reasons
    bare, _, _ = score_evidence(scenario, Transcript(
        completion={"root_cause_summary": summary}, hypothesis_log=[], model_turns=[],
        audit_records=[record]))
    assert not bare.ok and bare.reasons[0].startswith("cites no audit record")


@pytest.mark.parametrize("text, term, cleared", [
    ("deny-web-to-redis on nsg-data is not the cause.", "deny-web-to-redis", True),
    ("Ruled out: h2 — deny-web-to-redis on nsg-data.", "deny-web-to-redis", True),
    ("nsg-data and deny-web-to-redis were fine.", "nsg-data", True),
    ("deny-web-to-redis changed at 14:05, but it is not the cause.", "deny-web-to-redis", True),
    ("The outage has nothing to do with deny-web-to-redis.", "deny-web-to-redis", True),
    ("There is no evidence that deny-web-to-redis caused it.", "deny-web-to-redis", True),
    ("The problem lies elsewhere, not in deny-web-to-redis.", "deny-web-to-redis", True),
    ("deny-web-to-redis works as expected.", "deny-web-to-redis", True),
    ("The timing of deny-web-to-redis is not a coincidence.", "deny-web-to-redis", False),
    ("deny-web-to-redis drops 6379, not the api-vm-02 deployment.", "deny-web-to-redis", False),
    ("deny-web-to-redis drops 6379, not the api-vm-02 deployment.", "api-vm-02", True),
    ("The firewall nva-fw-01 is not forwarding packets: it is deallocated.", "nva-fw-01", False),
    ("The zone is not linked to vnet-orders.", "linked", False),
    ("api-vm-02 is not running.", "api-vm-02", False),
    ("Traffic to api-vm-01 does not reach it because deny-web-to-redis drops it.",
     "deny-web-to-redis", False),
])
def test_negation_is_judged_per_clause_and_per_mention(text: str, term: str,
                                                        cleared: bool) -> None:
    from lab.eval.clearing import mentions

    found = [m for m in mentions(text, [term, "nsg-data", "api-vm-02"]) if m.term == term]
    assert found and any(m.cleared for m in found) is cleared, found


def test_figures_and_names_a_summary_states() -> None:
    from lab.eval.grounding import figures_and_names, has_figure

    figures, names = figures_and_names(
        "Rule deny-x (priority 100) on nsg-data drops 8 % of 1460-byte segments to "
        "redis-vm-01:6379 and 10.1.2.4:6379 from 10.1.1.0/24 since 14:05, says "
        "alice@contoso.com; HTTP/1.1, SHA-256, IPv4, h1 and ghost_20261125_121943_004 are not "
        "figures; nva-07 is a name.")
    assert figures == ["100", "8", "1460", "6379", "10.1.2.4", "10.1.1.0/24", "14:05"]
    assert names == ["nsg-data", "redis-vm-01", "alice@contoso.com", "nva-07"]
    assert has_figure("loss 8.0 %", "8") and has_figure("2026-11-20T14:05:00Z", "14:05")
    assert not has_figure("10.1.2.40", "10.1.2.4") and not has_figure("14000", "1400")


@pytest.mark.parametrize("text, term, cleared", [
    ("The subnet NSG nsg-app allows the flow.", "nsg-app", True),
    ("The path crosses nva-fw-01 (10.0.1.4), its routes and NSGs allow the flow.", "nva-fw-01",
     False),
    ("api-vm-01 runs and the NSG allows the flow, so 8080 refuses.", "api-vm-01", False),
])
def test_a_narrow_predicate_clears_only_its_own_subject(text: str, term: str,
                                                        cleared: bool) -> None:
    from lab.eval.clearing import mentions

    found = [m for m in mentions(text, [term]) if m.term == term]
    assert found and any(m.cleared for m in found) is cleared, found
