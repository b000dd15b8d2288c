"""Issue 28, second round: the class tables of tables_red_team_5, by library and by CLI.

Figures asserted: commands judged otherwise than their row, secrets left (any listed
substring), innocents changed, JSON input that no longer parses; every FORBIDDEN reason says
what to do instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.safety import RULES, classify, redact
from tests.fakes.timing import assert_linear
from tests.safety.cli_run import run_safety_cli
from tests.safety.tables_red_team_5 import ALL_COMMAND_TABLES, ALL_SECRETS, INNOCENTS, Row, Secret

ROWS: list[tuple[str, Row]] = [(n, r) for n, rows in ALL_COMMAND_TABLES.items() for r in rows]
SECRETS: list[tuple[str, Secret]] = [(n, s) for n, rows in ALL_SECRETS.items() for s in rows]


@pytest.mark.parametrize(("table", "row"), ROWS, ids=[f"{t}: {r[0][:50]}" for t, r in ROWS])
def test_command_row(table: str, row: Row, tmp_path: Path) -> None:
    command, expected, why = row
    verdict = classify(command, data_dir=tmp_path)
    assert verdict.classification == expected, (why, verdict.rule, verdict.reason)
    assert RULES[verdict.rule].classification == verdict.classification
    if expected == "FORBIDDEN":
        assert verdict.reason.startswith("Ghost will not offer this for approval: ")
        assert "ask the engineer to run it themselves" in verdict.reason


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("table", "case"), SECRETS, ids=[f"{t}: {c[0]}" for t, c in SECRETS])
def test_secret_is_gone(table: str, case: Secret) -> None:
    _, text, secrets = case
    out = redact(text)
    assert not [s for s in secrets if s in out], out
    assert "[REDACTED:" in out
    if _parses(text):
        assert _parses(out), out


@pytest.mark.parametrize(("name", "text"), INNOCENTS, ids=[n for n, _ in INNOCENTS])
def test_innocent_is_unchanged(name: str, text: str) -> None:
    assert redact(text) == text


def test_every_forbidden_reason_on_the_corpora_says_what_to_do() -> None:
    here = Path(__file__).parent
    commands = [json.loads(line)["command"] for line in
                (here / "corpus_hostile.jsonl").read_text().split("\n") if line.strip()]
    commands += [row[0] for _, row in ROWS]
    for command in commands:
        verdict = classify(command)
        if verdict.classification == "FORBIDDEN":
            assert verdict.reason.startswith("Ghost will not offer this for approval: "), verdict
            assert "ask the engineer to run it themselves" in verdict.reason, verdict


def test_figures_through_therun_safety_cli(tmp_path: Path) -> None:
    verdicts = [r["classification"] for r in run_safety_cli(
        ["classify", "--json", "-"], [{"command": r[0]} for _, r in ROWS], tmp_path)]
    texts = [c[1] for _, c in SECRETS] + [t for _, t in INNOCENTS]
    out = [str(r["text"]) for r in
           run_safety_cli(["redact", "--jsonl"], [{"text": t} for t in texts], tmp_path)]
    figures = {
        "commands judged otherwise": sum(v != r[1] for v, (_, r) in zip(verdicts, ROWS,
                                                                         strict=True)),
        "secrets left": sum(any(s in o for s in c[2]) for o, (_, c) in zip(out, SECRETS,
                                                                         strict=False)),
        "innocents changed": sum(o != t for o, (_, t) in zip(out[len(SECRETS):], INNOCENTS,
                                                             strict=True)),
    }
    assert figures == {"commands judged otherwise": 0, "secrets left": 0,
                       "innocents changed": 0}
    assert len(ROWS) >= 80 and len(SECRETS) >= 60 and len(INNOCENTS) >= 30


@pytest.mark.parametrize("attack", [
    "password x1Y!\n" * 60_000, '\\"a\\":\\"' * 100_000, '\\\\\\"password\\\\\\": ' * 50_000,
    " -p Ab1!" * 100_000, " -pAb1!" * 120_000, "PASSWORD('x') " * 60_000,
    "&quot;k&quot;:&quot;" * 50_000, "identified by 'x' " * 50_000, "password " * 100_000,
    "key 7 " * 150_000,
])
def test_word_passes_stay_linear(attack: str) -> None:
    assert_linear(redact, attack)
