"""Third red team (issue 18) and the playbook reads (issue 22), through the library and the CLI.

The tables live beside this module (tables_red_team_3, tables_redaction_3); tcpdump decoder
output is real (captured on loopback in a network namespace by data/make_tcpdump_decoders.py),
and when this machine can create a namespace the capture is made again, live.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.safety import classify, redact
from core.safety.fast_sub import ci_sub
from core.safety.secret_formats import FORMAT_PATTERNS
from core.safety.secret_patterns import TOKEN_PATTERNS
from tests.fakes.timing import assert_linear
from tests.safety.tables_red_team_3 import ALL_TABLES, AZ_PLAYBOOK, Row
from tests.safety.tables_redaction_3 import INNOCENT, SECRETS

HERE = Path(__file__).parent
DATA = HERE / "data"
ROWS: list[tuple[str, Row]] = [(name, row) for name, rows in ALL_TABLES.items() for row in rows]


@pytest.mark.parametrize(("table", "row"), ROWS, ids=[f"{t}: {r[0][:50]}" for t, r in ROWS])
def test_table_row(table: str, row: Row) -> None:
    command, expected, why = row
    verdict = classify(command)
    assert verdict.classification == expected, (why, verdict.rule, verdict.reason)


def test_playbook_reads_are_safe_as_az_reads() -> None:
    for command, expected, _ in AZ_PLAYBOOK:
        if expected == "SAFE":
            assert classify(command).rule == "T2.az_read", command


def _cli(args: list[str], stdin: str, tmp_path: Path) -> list[dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path)
    res = subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin.encode(),
                         env=env, capture_output=True, timeout=120, cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return [json.loads(line) for line in res.stdout.decode().splitlines()]


def test_tables_through_the_cli(tmp_path: Path) -> None:
    stdin = "".join(json.dumps({"command": row[0]}) + "\n" for _, row in ROWS)
    out = _cli(["classify", "--json", "-"], stdin, tmp_path)
    assert [o["command"] for o in out] == [row[0] for _, row in ROWS]
    wrong = [(o["command"], o["classification"], row[1]) for o, (_, row) in zip(out, ROWS,
                                                                                 strict=True)
             if o["classification"] != row[1]]
    assert not wrong


@pytest.mark.parametrize(("family", "text", "secrets"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_is_removed(family: str, text: str, secrets: list[str]) -> None:
    out = redact(text)
    assert not [s for s in secrets if s in out], out
    assert redact(out) == out  # a second pass leaves markers alone
    try:
        json.loads(text)
    except ValueError:
        return
    json.loads(out)  # JSON stays JSON


@pytest.mark.parametrize(("family", "text"), INNOCENT, ids=[i[0] for i in INNOCENT])
def test_innocent_text_is_untouched(family: str, text: str) -> None:
    assert redact(text) == text


def test_redaction_tables_through_the_cli(tmp_path: Path) -> None:
    texts = [t for _, t, _ in SECRETS] + [t for _, t in INNOCENT]
    stdin = "".join(json.dumps({"text": t}) + "\n" for t in texts)
    out = _cli(["redact", "--jsonl"], stdin, tmp_path)
    assert len(out) == len(texts)
    for (_, _, secrets), row in zip(SECRETS, out, strict=False):
        assert not [s for s in secrets if s in str(row["text"])]
    for (_, text), row in zip(INNOCENT, out[len(SECRETS):], strict=True):
        assert row["text"] == text


SECRETS_IN_CAPTURE = ("S3cretRedis", "AclPassw0rd1", "FtpS3cret!", "AGFsaWNlAFNtdHBTM2NyZXQ=",
                      "YWxpY2U=", "U210cFMzY3JldDI=", "SnmpS3cret", "RespLongS3cret_17")


def _check_capture(text: str) -> None:
    out = redact(text)
    assert not [s for s in SECRETS_IN_CAPTURE if s in out]
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines(), strict=True) if a != b]
    # only the decoder lines that carry a credential change
    assert changed and all("[REDACTED:decoder_secret]" in b for _, b in changed)
    assert len(changed) == len([line for line in text.splitlines()
                                if any(s in line for s in SECRETS_IN_CAPTURE)])


def test_real_tcpdump_decoder_output_is_redacted() -> None:
    _check_capture((DATA / "tcpdump_decoders_default.txt").read_text())


def test_verbose_tcpdump_is_risky_and_its_decoder_lines_are_redacted_where_recognisable() -> None:
    assert classify("tcpdump -v -c 10 -i eth0").rule == "T1.payload_dump"
    out = redact((DATA / "tcpdump_decoders_verbose.txt").read_text())
    assert not [s for s in ("S3cretRedis", "FtpS3cret!", "AGFsaWNlAFNtdHBTM2NyZXQ=",
                            "SnmpS3cret", "HttpS3cret", "CookieS3cret123") if s in out]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("tcpdump")
                    or not shutil.which("unshare"), reason="needs root, tcpdump and unshare")
def test_live_capture_in_a_new_network_namespace(tmp_path: Path) -> None:
    res = subprocess.run(["unshare", "-n", sys.executable,
                          str(DATA / "make_tcpdump_decoders.py")],
                         capture_output=True, timeout=60, check=False, text=True)
    if res.returncode != 0 or "RESP" not in res.stdout:
        pytest.skip(f"no capture on this machine: {res.stderr[-300:]}")
    _check_capture(res.stdout)


@pytest.mark.parametrize("attack", [
    'RESP "AUTH" "' * 50_000, "FTP: PASS " * 100_000, ": PSK " * 100_000,
    "pre-shared-key " * 70_000, "MIIAAAIBAzCC" * 80_000, "A" * 1_000_000 + "=",
    '"id": "https://k.vault.azure.net/secrets/x" "value": "' * 20_000,
    "SMTP: " + "A" * 1_000_000, "C=" * 500_000, "REDIS_KEY=" * 100_000,
    "a:1:b:c:" * 125_000, "xoxd-" * 200_000, "sig%25253D" * 100_000,
])
def test_new_patterns_stay_linear(attack: str) -> None:
    assert_linear(redact, attack)


def _case_insensitive_patterns() -> list[re.Pattern[str]]:
    redact_module = sys.modules["core.safety.redact"]
    found = [p.pattern for p in TOKEN_PATTERNS + FORMAT_PATTERNS]
    found += [v for v in vars(redact_module).values() if isinstance(v, re.Pattern)]
    return [p for p in found if p.flags & re.IGNORECASE]


def test_fast_case_insensitive_sub_is_exactly_pattern_sub() -> None:
    # the speed-up finds match starts on lowercased text; the result must not change
    corpus = [json.loads(line)["text"] for line in
              (HERE / "corpus_secrets.jsonl").read_text(encoding="utf-8").split("\n") if line]
    corpus += [t for _, t, _ in SECRETS] + [t for _, t in INNOCENT]
    corpus += [t.swapcase() for t in corpus] + [t.upper() for t in corpus]
    patterns = _case_insensitive_patterns()
    assert len(patterns) >= 8
    for pattern in patterns:
        for text in corpus:
            assert ci_sub(pattern, _mark, text) == pattern.sub(_mark, text), (pattern, text)


def _mark(match: re.Match[str]) -> str:
    return f"<{match.group(0)[::-1]}>"
