"""The system prompt of ghost-design §2: every section present, adapted to Ghost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.engine.models import DEFAULT_MODEL
from core.engine.prompt import SECTION_TITLES, build_system_prompt
from core.engine.tools import TOOL_NAMES
from tests.fakes.gemini_server import FakeGemini, text_turn


def _section_start(prompt: str, title: str) -> int:
    """Where the section begins (a title may also be mentioned inside another section)."""
    match = re.search(rf"^{re.escape(title)}\b", prompt, re.MULTILINE)
    assert match is not None, title
    return match.start()


FRESH = build_system_prompt(is_resume=False, audit_dir="/srv/ghost/audit/")
RESUMED = build_system_prompt(is_resume=True, audit_dir="/srv/ghost/audit")


@pytest.mark.parametrize("title", SECTION_TITLES)
def test_each_named_section_is_present_once(title: str) -> None:
    for prompt in (FRESH, RESUMED):
        assert len(re.findall(rf"^{re.escape(title)}\b", prompt, re.MULTILINE)) == 1, title


def test_the_spec_sections_are_all_named() -> None:
    spec = {"INVESTIGATION FRAMEWORK", "HYPOTHESIS MANAGEMENT", "RESUME RE-VALIDATION PROTOCOL",
            "TOOL DECISION RULES", "FILE READ RESTRICTION", "LOCAL PROBE CONTEXT WARNING",
            "TARGETED QUERY RULE", "JMESPATH SAFETY RULES", "DENIAL RECOVERY RULES",
            "SPECIFIC PIVOTS", "EVIDENCE HIERARCHY", "CONFLICT RESOLUTION PROTOCOL",
            "COMMON CONTRADICTION PATTERNS"}
    assert spec <= set(SECTION_TITLES)
    positions = [_section_start(FRESH, t) for t in SECTION_TITLES]
    assert positions == sorted(positions), "sections keep the spec's order"


def test_sections_carry_their_rules() -> None:
    p = FRESH
    assert "LOCAL DIAGNOSTICS FIRST" in p and "_executive_summary.md" in p
    assert "Form 2-4 specific, falsifiable hypotheses" in p and "up to 3 hypotheses" in p
    assert "output_metadata.truncation_applied = true" in p
    assert "JMESPATH SYNTAX ERROR" in p and "-o table" in p
    assert "_meta.denial_reason" in p and "_meta.denial_threshold_reached = true" in p
    assert 'confidence="low"' in p and "unverifiable_hypotheses" in p
    assert "sudo tcpdump" in p and "az vm stop" in p and "ip route add" in p
    assert "A [LOCAL] probe result NEVER overrides a [CLOUD] API or PCAP finding" in p
    assert "contradicted_hypotheses" in p and "Trust PCAP" in p
    assert "from the engineer's local machine." in p
    for name in TOOL_NAMES:
        assert name in p, name


def test_hypotheses_are_reported_through_the_argument_with_the_text_fallback() -> None:
    section = FRESH[FRESH.index("HYPOTHESIS REPORTING"):FRESH.index("RESUME RE-VALIDATION")]
    assert '"hypotheses" argument' in section
    for state in ("ACTIVE", "CONFIRMED", "REFUTED", "CONTRADICTED", "UNVERIFIABLE"):
        assert state in section
    assert '"Hypothesis H1: <description>"' in section
    assert '"H1 CONFIRMED"' in section
    assert "evidence_audit_ids" in section


def test_file_read_restriction_names_the_audit_dir_and_the_database() -> None:
    section = FRESH[FRESH.index("FILE READ RESTRICTION"):FRESH.index("LOCAL PROBE CONTEXT")]
    assert "/srv/ghost/audit" in section and "result.report_path" in section
    assert "database" in section
    assert "./audit/" not in FRESH, "the spec's fixed ./audit/ is replaced by the real directory"
    for forbidden in ("~/.ssh/*", ".env", "/etc/*", "/proc/*"):
        assert forbidden in section


def test_resume_is_stated_at_the_end_and_only_the_end_differs() -> None:
    assert FRESH.rstrip().endswith("start with the INVESTIGATION FRAMEWORK.")
    assert "is_resume = False" in FRESH and "is_resume = True" in RESUMED
    assert "apply the RESUME RE-VALIDATION PROTOCOL" in RESUMED
    head = FRESH[:FRESH.index("SESSION CONTEXT")]
    assert RESUMED.startswith(head)


def test_no_template_placeholders_leak() -> None:
    for prompt in (FRESH, RESUMED):
        assert "{audit_dir}" not in prompt and "{is_resume}" not in prompt
    odd = build_system_prompt(is_resume=False, audit_dir="/tmp/{x}")
    assert "/tmp/{x}" in odd


# ── issue 22: the Azure-native diagnostics playbook, as sent to Gemini ──────────────────────

PLAYBOOK_ORDER = ("az monitor activity-log list", "az network watcher show-next-hop",
                  "az network watcher test-ip-flow", "az network private-dns link vnet list",
                  "az vm get-instance-view", "Capture (LEVEL 4)")


def _sent_prompt(fake_gemini: FakeGemini) -> str:
    """The system instruction the real google-genai client sent for a first turn."""
    from bot.gemini_brain import GeminiBrain
    from core.engine.tools import TOOL_DECLARATIONS

    fake_gemini.enqueue(text_turn("Forming hypotheses."))
    GeminiBrain(DEFAULT_MODEL, "test-key").generate(
        system_prompt=FRESH, tools=TOOL_DECLARATIONS,
        history=[{"role": "user", "parts": [{"text": "vm1 cannot reach redis on 6379"}]}])
    return fake_gemini.last_request.system_text


def test_the_sent_prompt_has_the_azure_native_level_between_probes_and_captures(
        fake_gemini: FakeGemini) -> None:
    sent = _sent_prompt(fake_gemini)
    assert sent.strip() == FRESH.strip()
    ladder = sent[_section_start(sent, "ESCALATION LADDER"):
                  _section_start(sent, "AZURE-NATIVE DIAGNOSTICS PLAYBOOK")]
    levels = [ladder.index(f"LEVEL {n}") for n in range(1, 6)]
    assert levels == sorted(levels)
    assert "local non-privileged reads" in ladder[levels[0]:levels[1]]
    assert "Azure-native diagnostics" in ladder[levels[2]:levels[3]]
    assert "managed packet capture" in ladder[levels[3]:levels[4]]
    framework = sent[_section_start(sent, "INVESTIGATION FRAMEWORK"):
                     _section_start(sent, "HYPOTHESIS MANAGEMENT")]
    assert framework.index("AZURE-NATIVE DIAGNOSTICS") < framework.index("PACKET CAPTURE")


def test_the_sent_playbook_keeps_the_order_and_says_what_answers_mean(
        fake_gemini: FakeGemini) -> None:
    sent = _sent_prompt(fake_gemini)
    book = sent[_section_start(sent, "AZURE-NATIVE DIAGNOSTICS PLAYBOOK"):
                _section_start(sent, "TOOL DECISION RULES")]
    positions = [book.index(step) for step in PLAYBOOK_ORDER]
    assert positions == sorted(positions), "activity log → path → filters → DNS → endpoints"
    for meaning in ("nextHopType None", "VirtualAppliance", "access Deny names the NSG rule",
                    "ruleName", "no link", "look right"):
        assert meaning in book, meaning
    assert "--local '<src-ip>:*'" in book  # the documented form, quoted: SAFE at the gate
    assert "[CLOUD]" in book and "[LOCAL]" in book


def test_the_sent_prompt_has_the_pivots_between_the_reads(fake_gemini: FakeGemini) -> None:
    sent = _sent_prompt(fake_gemini)
    pivots = sent[_section_start(sent, "SPECIFIC PIVOTS"):
                  _section_start(sent, "EVIDENCE HIERARCHY")]
    run_command = pivots[pivots.index("az vm run-command invoke"):]
    assert run_command.index("test-ip-flow") < run_command.index("list-effective-nsg")
    assert "capture_traffic denied" in pivots and "show-next-hop" in pivots
    taxonomy = sent[_section_start(sent, "TOOL DECISION RULES"):
                    _section_start(sent, "FILE READ RESTRICTION")]
    assert "test-ip-flow" in taxonomy and "activity-log list" in taxonomy
    assert "A [LOCAL] probe result NEVER overrides a [CLOUD] API or PCAP finding" in sent


#: The playbook's commands as the prompt spells them, filled in: each must be SAFE at the gate,
#: or the model would be sent to a read that needs an engineer.
PLAYBOOK_COMMANDS = (
    'az monitor activity-log list -g rg --offset 24h '
    '--query "[].{op:operationName.value,who:caller,when:eventTimestamp}"',
    "az network watcher show-next-hop -g rg --vm vm1 --source-ip 10.0.0.4 --dest-ip 10.1.0.4",
    "az network nic show-effective-route-table -g rg -n vm1-nic",
    "az network watcher test-ip-flow -g rg --vm vm1 --direction Outbound --protocol TCP "
    "--local '10.0.0.4:*' --remote 10.1.0.4:6379",
    "az network nic list-effective-nsg -g rg -n vm1-nic",
    "az network private-dns link vnet list -g rg -z privatelink.redis.cache.windows.net",
    'az vm get-instance-view -g rg -n vm1 --query "instanceView.statuses[1].displayStatus" '
    "-o tsv",
    "az network watcher test-connectivity -g rg --source-resource vm1 --dest-address 10.1.0.4 "
    "--dest-port 6379",
    "az network vnet peering list -g rg --vnet-name hub",
)


@pytest.mark.parametrize("command", PLAYBOOK_COMMANDS)
def test_every_playbook_command_is_in_the_prompt_and_safe_at_the_gate(command: str) -> None:
    from core.safety import classify

    head = " ".join(command.split()[:4])
    assert head in " ".join(FRESH.split()), head
    assert classify(command).rule == "T2.az_read", command


# ── issue 32: load balancers, private endpoints, firewalls, NAT gateways, flow logs ─────────

#: the format-2 reads the playbook names, filled in: SAFE at the gate (no engineer needed)
PLAYBOOK_COMMANDS_V2 = (
    "az network lb show -g rg -n ilb-app",
    "az monitor metrics list --resource /subscriptions/s/resourceGroups/rg/providers/"
    "Microsoft.Network/loadBalancers/ilb-app --metric DipAvailability --offset 1h "
    "--filter \"BackendIPAddress eq '*'\"",
    "az network watcher test-ip-flow -g rg --vm vm1 --direction Inbound --protocol TCP "
    "--local 10.1.3.4:8080 --remote 168.63.129.16:54321",
    "az network private-endpoint show -g rg -n pe-sql",
    "az network vnet subnet show -g rg --vnet-name vnet-hub -n snet-pe",
    "az network firewall show -g rg -n afw-hub",
    "az network firewall policy rule-collection-group list -g rg --policy-name afwp-hub",
    "az network nat gateway show -g rg -n ngw-prod",
    "az monitor metrics list --resource /subscriptions/s/resourceGroups/rg/providers/"
    "Microsoft.Network/natGateways/ngw-prod --metric SNATConnectionCount "
    "--filter \"ConnectionState eq '*'\"",
    "az network watcher flow-log list --location westeurope",
)


@pytest.mark.parametrize("command", PLAYBOOK_COMMANDS_V2)
def test_every_new_playbook_read_is_in_the_prompt_and_safe(command: str) -> None:
    from core.safety import classify

    head = " ".join(command.split()[:4])
    assert head in " ".join(FRESH.split()), head
    assert classify(command).classification == "SAFE", command


def test_the_playbook_teaches_the_new_parts_what_their_answers_mean(
        fake_gemini: FakeGemini) -> None:
    sent = _sent_prompt(fake_gemini)
    book = " ".join(sent[_section_start(sent, "AZURE-NATIVE DIAGNOSTICS PLAYBOOK"):
                         _section_start(sent, "TOOL DECISION RULES")].split())
    for meaning in ("168.63.129.16", "AllowAzureLoadBalancerInBound (65001)",
                    "drops every new flow silently", "closed unless the backends' NSGs",
                    "must be Approved", "answers NXDOMAIN, it never falls back",
                    "privateEndpointNetworkPolicies", "nothing matched = denied by default",
                    "Network rules first, then application rules", "Failed > 0 = SNAT",
                    "flow-log list", "D = denied", "an outage that is over"):
        assert meaning in book, meaning
    taxonomy = sent[_section_start(sent, "TOOL DECISION RULES"):
                    _section_start(sent, "FILE READ RESTRICTION")]
    for row in ("Load balancer frontend", "Private endpoint", "Internet calls fail",
                "Outage over"):
        assert row in taxonomy, row


# ── issue 33: reading VNet flow logs between IP flow verify and a capture ───────────────────

def test_flow_logs_come_after_ip_flow_verify_and_before_a_capture() -> None:
    book = FRESH[_section_start(FRESH, "AZURE-NATIVE DIAGNOSTICS PLAYBOOK"):
                 _section_start(FRESH, "TOOL DECISION RULES")]
    steps = [book.index(s) for s in ("3. Filters", "6. What did the network record?",
                                     "7. Capture (LEVEL 4)")]
    assert steps == sorted(steps)
    recipe = " ".join(book[steps[1]:steps[2]].split())
    order = [recipe.index(c) for c in ("az network watcher flow-log list",
                                       "az storage blob list", "az storage blob download",
                                       "ghost-forensics flowlogs")]
    assert order == sorted(order)
    for said in ("--auth-mode login", "--out is required", "window", "rule"):
        assert said in recipe, said


def test_the_decision_table_says_what_each_flow_log_finding_means() -> None:
    taxonomy = FRESH[_section_start(FRESH, "TOOL DECISION RULES"):
                     _section_start(FRESH, "FILE READ RESTRICTION")]
    for finding, meaning in (("flow_denied", "find its write"),
                             ("flow_one_way", "beyond it"),
                             ("no_flows_seen", "never reached the logged")):
        row = " ".join(taxonomy[taxonomy.index(finding):].split())
        assert meaning in row[:400], finding


def test_the_data_directory_is_in_the_session_context() -> None:
    prompt = build_system_prompt(is_resume=False, audit_dir="/srv/ghost/audit",
                                 data_dir="/srv/ghost")
    assert "data directory = /srv/ghost " in prompt
    assert "data directory = /srv/ghost " in build_system_prompt(
        is_resume=False, audit_dir="/srv/ghost/audit/")


#: the flow-log recipe filled in as the prompt spells it, in a data directory: all SAFE
FLOW_LOG_RECIPE = (
    'az network watcher flow-log list -l westeurope --query "[].[name, targetResourceId, '
    'storageId, enabled]" -o tsv',
    "az storage blob list --account-name sa -c insights-logs-flowlogflowevent --auth-mode login "
    "--prefix flowLogResourceID=/S_NETWORKWATCHERRG/NETWORKWATCHER_WESTEUROPE_FL/y=2026/m=11/"
    'd=22/h=13 --query "[].name" -o tsv',
    "az storage blob download --account-name sa -c insights-logs-flowlogflowevent --auth-mode "
    "login -n x/PT1H.json --file {d}/fl-fl-h13-000D3A31643A.json -o none",
    "ghost-forensics flowlogs {d}/fl-fl-h13-000D3A31643A.json --src 10.1.1.4 --dst 10.1.3.0/24 "
    "--port 8080 --out {d}/flowlogs-orders",
)


@pytest.mark.parametrize("command", FLOW_LOG_RECIPE)
def test_the_flow_log_recipe_is_safe_in_the_data_directory(command: str, tmp_path: Path) -> None:
    from core.safety import classify

    verdict = classify(command.replace("{d}", str(tmp_path)), data_dir=tmp_path)
    assert verdict.classification == "SAFE", verdict.reason
