"""The fresh red team written after the issue-18 fixes, with its figures.

Figures (asserted): commands judged SAFE that should not be: 0; commands judged below their
least verdict: 0; everyday reads over-blocked: 0; secrets left: 0; innocent texts changed: 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from core.safety import classify, redact
from tests.safety.tables_fresh_red_team import INNOCENT, NOT_SAFE, SECRETS, STAY_SAFE

RANK = {"SAFE": 0, "RISKY": 1, "FORBIDDEN": 2}


def _figures(verdicts: Mapping[str, str], redacted: list[str]) -> dict[str, int]:
    secrets_out = redacted[:len(SECRETS)]
    innocent_out = redacted[len(SECRETS):]
    return {
        "judged SAFE, should not be": sum(verdicts[c] == "SAFE" for c, _, _ in NOT_SAFE),
        "below the least verdict": sum(RANK[verdicts[c]] < RANK[least]
                                       for c, least, _ in NOT_SAFE),
        "everyday reads over-blocked": sum(verdicts[c] != "SAFE" for c in STAY_SAFE),
        "texts with a secret left": sum(any(s in out for s in secrets)
                                        for (_, _, secrets), out in zip(SECRETS, secrets_out,
                                                                        strict=True)),
        "innocent texts changed": sum(out != text for (_, text), out in zip(INNOCENT,
                                                                          innocent_out,
                                                                          strict=True)),
    }


ZERO = {"judged SAFE, should not be": 0, "below the least verdict": 0,
        "everyday reads over-blocked": 0, "texts with a secret left": 0,
        "innocent texts changed": 0}


def test_fresh_red_team_through_the_library() -> None:
    commands = [c for c, _, _ in NOT_SAFE] + STAY_SAFE
    verdicts = {c: classify(c).classification for c in commands}
    redacted = [redact(t) for _, t, _ in SECRETS] + [redact(t) for _, t in INNOCENT]
    assert _figures(verdicts, redacted) == ZERO
    assert len(NOT_SAFE) >= 100 and len(STAY_SAFE) >= 40


def test_fresh_red_team_through_the_cli(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path)

    def run(args: list[str], lines: list[dict[str, str]]) -> list[dict[str, object]]:
        stdin = "".join(json.dumps(line) + "\n" for line in lines).encode()
        res = subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin, env=env,
                             capture_output=True, timeout=120, cwd=tmp_path, check=False)
        assert res.returncode == 0, res.stderr.decode()[-2000:]
        return [json.loads(line) for line in res.stdout.decode().splitlines()]

    commands = [c for c, _, _ in NOT_SAFE] + STAY_SAFE
    rows = run(["classify", "--json", "-"], [{"command": c} for c in commands])
    verdicts = {str(r["command"]): str(r["classification"]) for r in rows}
    texts = [t for _, t, _ in SECRETS] + [t for _, t in INNOCENT]
    redacted = [str(r["text"]) for r in run(["redact", "--jsonl"], [{"text": t} for t in texts])]
    assert _figures(verdicts, redacted) == ZERO
