"""`ghost classify` and `ghost redact` as the corpus runner uses them: pipes, JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

KEY = "Zm9vYmFy" * 11 + "=="


def run(args: list[str], stdin: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path)
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)


def test_classify_json_stream_keeps_order_and_shape(tmp_path: Path) -> None:
    commands = ["dig +short example.com", "curl -sO http://x/y", "az account get-access-token",
                "ping -c 1 10.0.0.4", "p'in'g -c 1 10.0.0.4 ; id"]
    stdin = "".join(json.dumps({"command": c}) + "\n" for c in commands)
    res = run(["classify", "--json", "-"], stdin, tmp_path)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["command"] for r in rows] == commands
    assert [r["classification"] for r in rows[:4]] == ["SAFE", "RISKY", "FORBIDDEN", "SAFE"]
    assert rows[4]["classification"] != "SAFE"  # disguised name and chaining
    assert all(set(r) == {"command", "classification", "tier", "rule", "reason"} for r in rows)


def test_classify_stream_reports_bad_lines_and_goes_on(tmp_path: Path) -> None:
    res = run(["classify", "--json", "-"], 'nope\n{"command": "ss -tln"}\n', tmp_path)
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert res.returncode == 1 and "line 1" in rows[0]["error"]
    assert rows[1]["classification"] == "SAFE"


def test_classify_explains_a_single_command(tmp_path: Path) -> None:
    res = run(["classify", "ss -K dst 10.0.0.4"], "", tmp_path)
    assert res.returncode == 0 and res.stdout.startswith(("RISKY", "FORBIDDEN"))
    assert "rule" in res.stdout


def test_redact_filters_stdin(tmp_path: Path) -> None:
    text = f"DefaultEndpointsProtocol=https;AccountName=sa;AccountKey={KEY};\n10.0.0.4 ok\n"
    res = run(["redact"], text, tmp_path)
    assert KEY not in res.stdout and "10.0.0.4 ok" in res.stdout


def test_redact_jsonl_round_trip(tmp_path: Path) -> None:
    innocent = "nic 00:0d:3a:12:34:56 id 6f1c2a9e-3b1d-4f7a-9a55-2c3d4e5f6a7b"
    stdin = json.dumps({"text": f"token=ghp_{'a' * 36}"}) + "\n" + json.dumps(
        {"text": innocent}) + "\n"
    res = run(["redact", "--jsonl"], stdin, tmp_path)
    rows = [json.loads(line)["text"] for line in res.stdout.splitlines()]
    assert "ghp_" + "a" * 36 not in rows[0]
    assert rows[1] == innocent
