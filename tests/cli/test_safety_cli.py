"""`ghost classify` and `ghost redact` as the corpus runner uses them: pipes, JSON lines."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from pathlib import Path

KEY = "Zm9vYmFy" * 11 + "=="


def run(args: list[str], stdin: str | bytes, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], input=data, env=env,
                          capture_output=True, timeout=60, cwd=tmp_path, check=False)


def rows(res: subprocess.CompletedProcess[bytes]) -> list[dict[str, object]]:
    return [json.loads(line) for line in res.stdout.decode().splitlines()]


def test_classify_json_stream_keeps_order_and_shape(tmp_path: Path) -> None:
    commands = ["dig +short example.com", "curl -sO http://x/y", "az account get-access-token",
                "ping -c 1 10.0.0.4", "p'in'g -c 1 10.0.0.4 ; id"]
    stdin = "".join(json.dumps({"command": c}) + "\n" for c in commands)
    res = run(["classify", "--json", "-"], stdin, tmp_path)
    assert res.returncode == 0, res.stderr
    out = rows(res)
    assert [r["command"] for r in out] == commands
    assert [r["classification"] for r in out[:4]] == ["SAFE", "RISKY", "FORBIDDEN", "SAFE"]
    assert out[4]["classification"] != "SAFE"  # disguised name and chaining
    assert all(set(r) == {"command", "classification", "tier", "rule", "reason"} for r in out)


def test_every_unreadable_line_gets_a_never_safe_answer_in_place(tmp_path: Path) -> None:
    lines = [b'nope', b'{"command": "ss -tln"}', b'{"cmd": "ls"}', b'{"command": 5}',
             b'["ping"]', b'{"command": null}', b'\xff\xfe{"command": "ls"}',
             b'{"command": "ping -c 1 x\\ud800"}', b'{"command": "ss -s"}\r']
    res = run(["classify", "--json", "-"], b"\n".join(lines) + b"\n\n   \n", tmp_path)
    assert res.returncode == 0 and res.stderr == b"", res.stderr
    out = rows(res)
    assert len(out) == len(lines)  # blank lines are skipped, nothing else is
    assert [r["classification"] for r in out] == [
        "RISKY", "SAFE", "RISKY", "RISKY", "RISKY", "RISKY", "RISKY", "FORBIDDEN", "SAFE"]
    assert out[0]["rule"] == "T3.invalid_input" and "line 1" in str(out[0]["error"])
    assert out[3]["command"] == 5 and "line 4" in str(out[3]["error"])
    assert out[7]["rule"] == "T0.unreadable_text"  # a lone surrogate: retype it in ASCII


def test_classify_explains_a_single_command(tmp_path: Path) -> None:
    res = run(["classify", "ss -K dst 10.0.0.4"], "", tmp_path)
    text = res.stdout.decode()
    assert res.returncode == 0 and text.startswith(("RISKY", "FORBIDDEN"))
    assert "rule" in text


def test_classify_plain_lines_from_stdin(tmp_path: Path) -> None:
    res = run(["classify", "-"], "ping -c 1 10.0.0.4\r\nrm -rf /\n", tmp_path)
    out = rows(res)
    assert [r["classification"] for r in out] == ["SAFE", "FORBIDDEN"]


def test_redact_filters_stdin_and_keeps_every_other_byte(tmp_path: Path) -> None:
    text = (f"DefaultEndpointsProtocol=https;AccountName=sa;AccountKey={KEY};\r\n"
            "10.0.0.4 ok\r\n").encode() + b"latin-1 \xe9 stays\n"
    res = run(["redact"], text, tmp_path)
    assert KEY.encode() not in res.stdout
    assert res.stdout.endswith(b";\r\n10.0.0.4 ok\r\nlatin-1 \xe9 stays\n")
    innocent = b"inet 10.0.0.4/24\r\nlink/ether 00:0d:3a:12:34:56\r\n\x00\xff"
    assert run(["redact"], innocent, tmp_path).stdout == innocent


def test_redact_jsonl_round_trip(tmp_path: Path) -> None:
    innocent = "nic 00:0d:3a:12:34:56 id 6f1c2a9e-3b1d-4f7a-9a55-2c3d4e5f6a7b \u00e9\u2028"
    stdin = "\n".join([json.dumps({"text": f"token=ghp_{'a' * 36}"}), json.dumps(
        {"text": innocent}), "garbage", json.dumps({"text": 3}), json.dumps({"text": "\ud800"})])
    res = run(["redact", "--jsonl"], stdin + "\n", tmp_path)
    assert res.returncode == 0 and res.stderr == b""
    out = rows(res)
    assert len(out) == 5
    assert "ghp_" + "a" * 36 not in str(out[0]["text"])
    assert out[1]["text"] == innocent
    assert out[2]["text"] is None and "line 3" in str(out[2]["error"])
    assert out[3]["text"] is None
    assert out[4]["text"] == "\ud800"


def test_each_line_is_answered_before_the_next_is_sent(tmp_path: Path) -> None:
    """A runner that writes one line and waits for its answer (stdin still open) gets it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path)
    for args, line, key in (
            (["classify", "--json", "-"], {"command": "ss -tln"}, "classification"),
            (["redact", "--jsonl"], {"text": f"AccountKey={KEY}"}, "text")):
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", *args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, env=env, cwd=tmp_path)
        assert proc.stdin is not None and proc.stdout is not None
        waiting = selectors.DefaultSelector()
        waiting.register(proc.stdout, selectors.EVENT_READ)
        try:
            for _ in range(2):
                proc.stdin.write(json.dumps(line).encode() + b"\n")
                proc.stdin.flush()
                assert waiting.select(timeout=30), "no answer while stdin stays open"
                answer = json.loads(proc.stdout.readline())
                assert key in answer and KEY not in json.dumps(answer)
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
        assert proc.returncode == 0


def test_classify_says_the_documented_ip_flow_verify_is_safe(tmp_path: Path) -> None:
    # issue 22: `*` in an az argument is a value (no shell runs the argv); issue 28: quoted,
    # because unquoted it is a glob to a shell (then RISKY, and the reason says to quote it)
    command = ("az network watcher test-ip-flow -g rg --vm vm1 --direction Inbound "
               "--protocol TCP --local '10.0.0.4:*' --remote 10.1.0.4:6379")
    res = run(["classify", command], "", tmp_path)
    assert res.returncode == 0 and res.stdout.decode().startswith("SAFE"), res.stdout
    unquoted = run(["classify", command.replace("'10.0.0.4:*'", "10.0.0.4:*")], "", tmp_path)
    assert unquoted.stdout.decode().startswith("RISKY") and b"Quote" in unquoted.stdout
    res = run(["classify", "--json", "-"], json.dumps({"command": command}) + "\n", tmp_path)
    assert rows(res)[0]["rule"] == "T2.az_read"
