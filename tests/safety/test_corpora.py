"""The red-team corpora, table-driven: hostile and must-stay-SAFE commands, secrets, innocents.

Data files beside this module (JSON lines, one case per line):
- corpus_hostile.jsonl  {"command", "min", "family"}: the verdict must be at least `min`
  (RISKY < FORBIDDEN); never SAFE.
- corpus_safe.jsonl     {"command"}: everyday diagnostics that must stay SAFE (over-blocking
  is a defect too: Ghost then asks a human for every ping).
- corpus_secrets.jsonl  {"text", "secrets"}: every listed substring must be gone after
  redaction, and JSON input must still parse.
- corpus_innocent.jsonl {"name", "text"}: must come through byte-identical.

The same files also go through the real CLI (`ghost classify --json -`, `ghost redact --jsonl`),
the way an outside corpus runner uses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.safety import classify, redact
from tests.fakes.timing import assert_linear

HERE = Path(__file__).parent
RANK = {"SAFE": 0, "RISKY": 1, "FORBIDDEN": 2}


def _load(name: str) -> list[dict[str, Any]]:
    with (HERE / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


HOSTILE = _load("corpus_hostile.jsonl")
SAFE = _load("corpus_safe.jsonl")
SECRETS = _load("corpus_secrets.jsonl")
INNOCENT = _load("corpus_innocent.jsonl")


def test_corpora_are_large_enough_to_mean_something() -> None:
    assert len(HOSTILE) >= 1000 and len(SECRETS) >= 200 and len(INNOCENT) >= 100
    assert sum(case["min"] == "FORBIDDEN" for case in HOSTILE) >= 250


@pytest.mark.parametrize("case", HOSTILE, ids=[repr(c["command"][:50]) for c in HOSTILE])
def test_hostile_command_is_never_safe(case: dict[str, Any], tmp_path: Path) -> None:
    verdict = classify(case["command"], data_dir=tmp_path)
    assert RANK[verdict.classification] >= RANK[case["min"]], (case, verdict)


@pytest.mark.parametrize("case", SAFE, ids=[c["command"][:50] for c in SAFE])
def test_everyday_diagnostic_stays_safe(case: dict[str, Any]) -> None:
    verdict = classify(case["command"])
    assert verdict.classification == "SAFE", verdict


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("case", SECRETS, ids=[repr(c["text"][:40]) for c in SECRETS])
def test_secret_is_gone(case: dict[str, Any]) -> None:
    out = redact(case["text"])
    for secret in case["secrets"]:
        assert secret not in out, out
    if _parses(case["text"]):
        assert _parses(out), out


@pytest.mark.parametrize("case", INNOCENT, ids=[c["name"] for c in INNOCENT])
def test_innocent_output_is_untouched(case: dict[str, Any]) -> None:
    assert redact(case["text"]) == case["text"]


def _cli(args: list[str], stdin: str, tmp_path: Path) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path)
    res = subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin.encode(),
                         env=env, capture_output=True, timeout=300, cwd=tmp_path, check=False)
    assert res.returncode == 0 and not res.stderr, res.stderr.decode()[-2000:]
    return [json.loads(line) for line in res.stdout.decode().splitlines()]


def test_hostile_and_safe_corpora_through_the_cli(tmp_path: Path) -> None:
    cases = HOSTILE + [dict(c, min="SAFE") for c in SAFE]
    stdin = "".join(json.dumps({"command": c["command"]}) + "\n" for c in cases)
    rows = _cli(["classify", "--json", "-"], stdin, tmp_path)
    assert [r["command"] for r in rows] == [c["command"] for c in cases]
    for case, row in zip(cases, rows, strict=True):
        if case["min"] == "SAFE":
            assert row["classification"] == "SAFE", row
        else:
            assert RANK[row["classification"]] >= RANK[case["min"]], row


def test_secret_and_innocent_corpora_through_the_cli(tmp_path: Path) -> None:
    texts = [c["text"] for c in SECRETS] + [c["text"] for c in INNOCENT]
    stdin = "".join(json.dumps({"text": t}) + "\n" for t in texts)
    rows = _cli(["redact", "--jsonl"], stdin, tmp_path)
    assert len(rows) == len(texts)
    for case, row in zip(SECRETS, rows, strict=False):
        assert not any(s in row["text"] for s in case["secrets"]), row
    assert [r["text"] for r in rows[len(SECRETS):]] == [c["text"] for c in INNOCENT]


MEGABYTE_COMMANDS = [
    "a" * (1 << 20),
    "ping -c 1 x; " * 80_000,
    "x " * (1 << 19),
    " ".join(f"a{i}" for i in range(150_000)),
    "bash " + "-c " * 300_000,
    "bash " + "rm " * 300_000,
    "| sudo -x " * 100_000,
    "\uff43" * (1 << 20),
    "\u00e9 " * (1 << 19),
    "http://a.b/ " * 90_000,
    "%41" * 300_000,
    "'" * (1 << 20),
    "a " * 500_000 + "; rm -rf /",
]


@pytest.mark.parametrize("command", MEGABYTE_COMMANDS,
                         ids=[repr(c[:12]) for c in MEGABYTE_COMMANDS])
def test_megabyte_command_is_classified_quickly_and_never_safe(command: str) -> None:
    assert_linear(classify, command)
    assert classify(command).classification != "SAFE"
