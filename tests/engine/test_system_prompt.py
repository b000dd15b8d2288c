"""The system prompt of ghost-design §2: every section present, adapted to Ghost."""

from __future__ import annotations

import re

import pytest

from core.engine.prompt import SECTION_TITLES, build_system_prompt
from core.engine.tools import TOOL_NAMES

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
    positions = [FRESH.index(t) for t in SECTION_TITLES]
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
