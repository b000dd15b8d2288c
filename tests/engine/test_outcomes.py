"""What an answer meant, beside its exit code: parsers over the real tools' output formats, and
the path from the shell's audit record to the RCA's evidence table (issue 13: `dig` answered
NXDOMAIN and the RCA said "succeeded")."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from core.engine.outcomes import meaning, sdk_meaning
from core.engine.rca import build_rca
from core.safety.approval import Decision
from core.safety.shell import SafeExecShell
from storage.store import Store
from tests.engine.test_loop import Approver

DIG_NXDOMAIN = """
; <<>> DiG 9.18.28-1~deb12u2-Debian <<>> redis.internal
;; global options: +cmd
;; Got answer:
;; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 41792
;; flags: qr rd ra; QUERY: 1, ANSWER: 0, AUTHORITY: 1, ADDITIONAL: 1

;; QUESTION SECTION:
;redis.internal.			IN	A

;; Query time: 12 msec
;; SERVER: 168.63.129.16#53(168.63.129.16) (UDP)
;; WHEN: Wed Jan 15 14:31:05 UTC 2025
;; MSG SIZE  rcvd: 118
"""

DIG_OK = DIG_NXDOMAIN.replace("status: NXDOMAIN", "status: NOERROR").replace(
    "ANSWER: 0", "ANSWER: 1")
DIG_NODATA = DIG_NXDOMAIN.replace("status: NXDOMAIN", "status: NOERROR")
DIG_SERVFAIL = DIG_NXDOMAIN.replace("status: NXDOMAIN", "status: SERVFAIL")
DIG_TIMEOUT = (";; communications error to 10.0.0.2#53: timed out\n"
               ";; communications error to 10.0.0.2#53: timed out\n"
               ";; no servers could be reached\n")

NSLOOKUP_NXDOMAIN = """Server:		127.0.0.53
Address:	127.0.0.53#53

** server can't find redis.internal: NXDOMAIN

"""
NSLOOKUP_OK = """Server:		127.0.0.53
Address:	127.0.0.53#53

Non-authoritative answer:
Name:	redis.privatelink.redis.cache.windows.net
Address: 10.0.2.4

"""
PING_LOST = """PING 10.0.2.4 (10.0.2.4) 56(84) bytes of data.

--- 10.0.2.4 ping statistics ---
4 packets transmitted, 0 received, 100% packet loss, time 3062ms

"""
PING_ERRORS = ("--- 10.0.2.4 ping statistics ---\n"
               "4 packets transmitted, 1 received, +3 errors, 75% packet loss, time 3049ms\n")
PING_BUSYBOX = ("--- 10.0.2.4 ping statistics ---\n"
                "4 packets transmitted, 4 packets received, 0% packet loss\n"
                "round-trip min/avg/max = 0.061/0.074/0.089 ms\n")
IP_FLOW_DENY = """{
  "access": "Deny",
  "ruleName": "securityRules/deny-redis-6379"
}
"""


@pytest.mark.parametrize(("command", "exit_code", "out", "err", "expected"), [
    ("dig redis.internal", 0, DIG_NXDOMAIN, "", "DNS NXDOMAIN"),
    ("dig redis.internal", 0, DIG_OK, "", "DNS NOERROR, 1 answer(s)"),
    ("dig redis.internal", 0, DIG_NODATA, "", "DNS NOERROR, no answer (NODATA)"),
    ("dig @10.0.0.2 redis.internal", 0, DIG_SERVFAIL, "", "DNS SERVFAIL"),
    ("dig @10.0.0.2 redis.internal", 9, DIG_TIMEOUT, "", "DNS: no server reached (timed out)"),
    ("dig +short redis.internal", 0, "", "", "DNS: no answer (+short; NXDOMAIN or NODATA)"),
    ("dig +short redis.internal", 0, "10.0.2.4\n", "", "DNS: 1 record(s) (+short)"),
    ("nslookup redis.internal", 1, NSLOOKUP_NXDOMAIN, "", "DNS NXDOMAIN"),
    ("nslookup redis.internal", 0, NSLOOKUP_OK, "", "DNS NOERROR, 1 answer(s)"),
    ("host redis.internal", 1, "Host redis.internal not found: 3(NXDOMAIN)\n", "",
     "DNS NXDOMAIN"),
    ("ping -c 4 10.0.2.4", 1, PING_LOST, "", "100% packet loss (0/4 received)"),
    ("ping -c 4 10.0.2.4", 1, PING_ERRORS, "", "75% packet loss (1/4 received)"),
    ("ping -c 4 10.0.2.4", 0, PING_BUSYBOX, "", "0% packet loss (4/4 received)"),
    ("ping -c 1 redis.internal", 2, "", "ping: redis.internal: Name or service not known\n",
     "name not resolved"),
    ("curl -sS http://10.0.2.4:6379/", 7, "",
     "curl: (7) Failed to connect to 10.0.2.4 port 6379 after 3 ms: Couldn't connect to server\n",
     "connection error: failed to connect (curl 7)"),
    ("curl -sS --max-time 5 http://10.0.2.4/", 28, "",
     "curl: (28) Connection timed out after 5001 milliseconds\n",
     "connection error: timed out (curl 28)"),
    ("curl -sI https://web-01/health", 0, "HTTP/2 503 \r\ncontent-type: text/html\r\n\r\n", "",
     "HTTP 503"),
    ("curl -sIL http://web-01/", 0,
     "HTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", "",
     "HTTP 200"),
    ("curl -sf http://web-01/", 22, "", "curl: (22) The requested URL returned error: 502\n",
     "HTTP 502"),
    ("curl -s -o /dev/null -w %{http_code} http://web-01/", 0, "404", "", "HTTP 404"),
    ("az network watcher test-ip-flow --vm web-01 --direction Outbound --protocol TCP "
     "--local 10.0.1.4:60000 --remote 10.0.2.4:6379", 0, IP_FLOW_DENY, "",
     "IP flow Deny by securityRules/deny-redis-6379"),
    ("az network watcher test-ip-flow --vm web-01 -o tsv", 0,
     "Allow\tsecurityRules/AllowVnetInBound\n", "", "IP flow Allow by "
     "securityRules/AllowVnetInBound"),
    ("ss -tln", 0, "State Recv-Q\n", "", None),
    ("az network nsg list", 0, "[]", "", None),
])
def test_meaning_of_common_diagnostics(command: str, exit_code: int, out: str, err: str,
                                       expected: str | None) -> None:
    assert meaning(command, exit_code, out, err) == expected


def test_sdk_meaning_is_the_sdk_answer() -> None:
    assert sdk_meaning(0, "") == "Azure SDK call succeeded"
    assert sdk_meaning(1, "ResourceNotFound: No VM named 'web-01'") == \
        "Azure SDK call failed: ResourceNotFound: No VM named 'web-01'"


# ── through the shell and into the RCA ─────────────────────────────────────────────────────────

@pytest.fixture
def fake_dig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `dig` stand-in on PATH that prints a real NXDOMAIN answer and exits 0, as dig does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "dig"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + DIG_NXDOMAIN + "EOF\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


class _Status503(BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_503() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Status503)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/health"
    finally:
        server.shutdown()
        server.server_close()


def test_nxdomain_and_http_503_are_recorded_and_shown_not_as_success(
        store: Store, tmp_path: Path, fake_dig: None, http_503: str) -> None:
    sid = store.create_investigation(symptom="web-01 cannot reach redis", model="m",
                                     audit_dir="a", requested_by="U_REQ").session_id
    shell = SafeExecShell(sid, audit=store, approvals=store,
                          approver=Approver(Decision.approve("alice")), data_dir=tmp_path,
                          requested_by="U_REQ")
    dig = shell.execute({"command": "dig redis.internal", "reasoning": "resolve redis"})
    curl = shell.execute({"command": f"curl -sI {http_503}", "reasoning": "health"})
    assert dig["exit_code"] == 0 and curl["exit_code"] == 0  # both "succeeded" by exit code
    records = {r["audit_id"]: r for r in store.audit_records(sid) if r["kind"] == "command"}
    assert records[dig["audit_id"]]["details"]["meaning"] == "DNS NXDOMAIN"
    assert records[curl["audit_id"]]["details"]["meaning"] == "HTTP 503"
    report = build_rca(state=store.get_investigation(sid).state,
                       audit_records=store.audit_records(sid), task_events=[],
                       completion=None, read_file=lambda p: {},
                       generated_at=datetime(2025, 1, 15, tzinfo=UTC))
    rows = {line.split(" | ")[0].strip("| "): line for line in report.markdown.splitlines()
            if line.startswith(f"| {sid}_")}
    assert "ran: DNS NXDOMAIN" in rows[dig["audit_id"]]
    assert "ran: HTTP 503" in rows[curl["audit_id"]]
    assert "succeeded" not in rows[dig["audit_id"]] + rows[curl["audit_id"]]


def test_the_console_line_shows_the_meaning(store: Store, tmp_path: Path,
                                            fake_dig: None) -> None:
    """The engineer at the terminal reads "DNS NXDOMAIN", not only "auto-approved"."""
    import io

    from bot.terminal import TerminalNotifier
    from tests.engine.fakes import FakeBrain, call, reply
    from tests.engine.test_loop import Rig

    brain = FakeBrain(reply(call("run_shell_cmd", command="dig redis.internal",
                                 reasoning="resolve")),
                      reply(call("complete_investigation", confidence="low",
                                 root_cause_summary="x")))
    rig = Rig(store, tmp_path, brain)
    out = io.StringIO()
    rig.engine.notifier = TerminalNotifier(out)
    sid = rig.start()
    rig.engine.advance(sid)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("[Shell]"))
    assert "dig redis.internal → DNS NXDOMAIN" in line and f"[{sid}_002]" in line
    [seen] = brain.function_responses(1)
    assert seen["response"]["meaning"] == "DNS NXDOMAIN"  # the model reads it too
