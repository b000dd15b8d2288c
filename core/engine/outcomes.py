"""What a diagnostic's answer means, beside its exit code.

``dig`` exits 0 on NXDOMAIN and ``curl`` exits 0 on an HTTP 503: an exit code alone makes a
failed lookup read as "succeeded". ``meaning`` reads the real tools' output formats (pure string
parsing, no I/O) and returns one short phrase for the audit record and the RCA's evidence table,
or None for commands it does not know.

Formats read:
- dig: ``;; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 4179`` and
  ``;; flags: qr rd ra; QUERY: 1, ANSWER: 0, …``; ``;; connection timed out; no servers could be
  reached``; ``+short`` output (one record per line)
- nslookup: ``** server can't find x: NXDOMAIN``, ``*** Can't find x: No answer``,
  ``Name:``/``Address:`` answer lines, ``;; connection timed out``
- host: ``Host x not found: 3(NXDOMAIN)``, ``x has address 10.0.0.4``
- ping (iputils and busybox): ``4 packets transmitted, 0 received, 100% packet loss``
- curl: ``curl: (7) Failed to connect …`` (its exit codes), ``HTTP/1.1 503 …`` status lines
  (``-i``, ``-I``, ``-v``), a bare status from ``-w '%{http_code}'``
- az network watcher test-ip-flow: ``{"access": "Deny", "ruleName": "…"}`` (json, tsv, table)
- ghost-forensics flowlogs: the key line under each finding, ``id flow_denied; rule R (aclID
  A); window 2026-11-22T13:02Z to 2026-11-22T13:40Z`` (forensics.flowlogs_report.finding_key);
  the first is the top-ranked finding
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

_DIG_STATUS = re.compile(r"->>HEADER<<-.*?\bstatus:\s*([A-Z]+)")
_DIG_ANSWER = re.compile(r";; flags:[^;]*;.*?\bANSWER:\s*(\d+)")
_NO_SERVER = re.compile(r"connection timed out|no servers could be reached|"
                        r"communications error", re.IGNORECASE)
_NSLOOKUP_FAIL = re.compile(r"\*\* server can't find [^:]+:\s*([A-Z]+)")
_NSLOOKUP_NODATA = re.compile(r"\*\*\* Can't find [^:]+:\s*No answer", re.IGNORECASE)
_HOST_FAIL = re.compile(r"not found:\s*\d+\(([A-Z]+)\)")
_PING = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received"
                   r"(?:, \+\d+ errors)?(?:, \+\d+ duplicates)?, ([\d.]+)% packet loss")
_CURL_ERROR = re.compile(r"curl: \((\d+)\)\s*([^\n]*)")
_HTTP_STATUS = re.compile(r"^(?:< )?HTTP/[\d.]+\s+(\d{3})\b", re.MULTILINE)
_BARE_STATUS = re.compile(r"(?:^|\n)(\d{3})\s*$")
_ACCESS_JSON = re.compile(r'"access"\s*:\s*"(Allow|Deny)"', re.IGNORECASE)
_RULE_JSON = re.compile(r'"ruleName"\s*:\s*"([^"]*)"')
_FLOW_KEY = re.compile(r"^[ \t]+id ([a-z_]+)((?:; [^\n]*)?)[ \t]*$", re.MULTILINE)
_ACL = re.compile(r" \(aclID [^)]*\)$")
_ACCESS_WORD = re.compile(r"^[ \t]*(Allow|Deny)\b[ \t]*(\S*)", re.MULTILINE)

#: curl's exit codes for the failures an engineer meets most (man curl, "EXIT CODES")
CURL_EXIT = {
    6: "could not resolve host", 7: "failed to connect", 28: "timed out",
    35: "TLS handshake failed", 47: "too many redirects", 52: "empty reply from server",
    56: "connection reset or receive failure", 60: "certificate not trusted",
}


def _argv(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _dig(argv: list[str], exit_code: int | None, out: str, err: str) -> str | None:
    text = out + "\n" + err
    status = _DIG_STATUS.search(text)
    if status:
        code = status.group(1)
        answers = _DIG_ANSWER.search(text)
        if code == "NOERROR" and answers is not None:
            count = int(answers.group(1))
            return (f"DNS NOERROR, {count} answer(s)" if count
                    else "DNS NOERROR, no answer (NODATA)")
        return f"DNS {code}"
    if _NO_SERVER.search(text):
        return "DNS: no server reached (timed out)"
    if "+short" in argv and exit_code == 0:
        records = [line for line in out.splitlines() if line.strip()]
        return f"DNS: {len(records)} record(s) (+short)" if records else \
            "DNS: no answer (+short; NXDOMAIN or NODATA)"
    return None


def _nslookup(argv: list[str], exit_code: int | None, out: str, err: str) -> str | None:
    text = out + "\n" + err
    failed = _NSLOOKUP_FAIL.search(text)
    if failed:
        return f"DNS {failed.group(1)}"
    if _NSLOOKUP_NODATA.search(text):
        return "DNS NOERROR, no answer (NODATA)"
    if _NO_SERVER.search(text):
        return "DNS: no server reached (timed out)"
    # the first Address line is the server's own (``Address: 127.0.0.53#53``)
    answers = [line for line in out.split("Name:", 1)[-1].splitlines()
               if line.strip().startswith("Address")] if "Name:" in out else []
    if answers:
        return f"DNS NOERROR, {len(answers)} answer(s)"
    return None


def _host(argv: list[str], exit_code: int | None, out: str, err: str) -> str | None:
    text = out + "\n" + err
    failed = _HOST_FAIL.search(text)
    if failed:
        return f"DNS {failed.group(1)}"
    if _NO_SERVER.search(text):
        return "DNS: no server reached (timed out)"
    found = len(re.findall(r" has (?:IPv6 )?address ", out))
    return f"DNS NOERROR, {found} answer(s)" if found else None


def _ping(argv: list[str], exit_code: int | None, out: str, err: str) -> str | None:
    stats = _PING.search(out + "\n" + err)
    if stats:
        sent, got, loss = stats.groups()
        return f"{float(loss):g}% packet loss ({got}/{sent} received)"
    if re.search(r"unknown host|Name or service not known|Temporary failure in name "
                 r"resolution|bad address", err + out, re.IGNORECASE):
        return "name not resolved"
    return None


def _curl(argv: list[str], exit_code: int | None, out: str, err: str) -> str | None:
    failed = _CURL_ERROR.search(err)
    statuses = _HTTP_STATUS.findall(out + "\n" + err)
    if failed and int(failed.group(1)) != 22:
        number = int(failed.group(1))
        return f"connection error: {CURL_EXIT.get(number, failed.group(2).strip()[:80])} " \
               f"(curl {number})"
    if statuses:
        return f"HTTP {statuses[-1]}"  # the last one: after redirects (-L), the final answer
    if failed:  # -f: "The requested URL returned error: 503"
        code = re.search(r"error:?\s*(\d{3})", failed.group(2))
        return f"HTTP {code.group(1)}" if code else "HTTP error (curl 22)"
    bare = _BARE_STATUS.search(out) if any("http_code" in a for a in argv) else None
    if bare:
        return f"HTTP {bare.group(1)}"
    if exit_code not in (0, None) and exit_code in CURL_EXIT:
        return f"connection error: {CURL_EXIT[exit_code]} (curl {exit_code})"
    return None


def _az(argv: list[str], exit_code: int | None, out: str, err: str) -> str | None:
    words = [a for a in argv[1:] if not a.startswith("-")][:3]
    if words[:3] != ["network", "watcher", "test-ip-flow"]:
        return None
    access = _ACCESS_JSON.search(out)
    rule = _RULE_JSON.search(out)
    if access is None:
        plain = _ACCESS_WORD.search(out)
        if plain is None:
            return None
        verdict, rule_text = plain.group(1).capitalize(), plain.group(2)
    else:
        verdict, rule_text = access.group(1).capitalize(), rule.group(1) if rule else ""
    return f"IP flow {verdict}" + (f" by {rule_text}" if rule_text else "")


def _forensics(argv: list[str], exit_code: int | None, out: str, err: str) -> str | None:
    """The flow-log analyser's top finding: its id, first flow, deciding rule and window, so
    the RCA's evidence table shows them beside the run that found them."""
    if argv[1:2] != ["flowlogs"] or exit_code != 0:
        return None
    keys = _FLOW_KEY.findall(out)
    if not keys:
        return None
    finding, rest = keys[0]
    fields = dict(part.partition(" ")[::2] for part in rest.split("; ")[1:])
    said = f"flow logs: {finding}"
    if fields.get("flows"):
        first, _, others = fields["flows"].partition(", ")
        said += f" of {first}" + (" and others" if others else "")
    if fields.get("rule"):
        said += f" by {_ACL.sub('', fields['rule'])}"
    if fields.get("window"):
        said += f", {fields['window']}"
    return said + (f" (+{len(keys) - 1} more)" if len(keys) > 1 else "")


_READERS: dict[str, Callable[[list[str], int | None, str, str], str | None]] = {
    "dig": _dig, "nslookup": _nslookup, "host": _host, "ping": _ping, "ping6": _ping,
    "curl": _curl, "az": _az, "ghost-forensics": _forensics,
}


def meaning(command: str, exit_code: int | None, output: str,
            stderr: str = "") -> str | None:
    """One phrase for what the answer said ("DNS NXDOMAIN", "HTTP 503", "100% packet loss
    (0/4 received)", "IP flow Deny by …"), or None when the command is not one we read."""
    argv = _argv(command)
    if not argv:
        return None
    reader = _READERS.get(argv[0])
    if reader is None:
        return None
    try:
        return reader(argv, exit_code, output or "", stderr or "")
    except Exception:  # noqa: BLE001 - odd output never costs a command its audit record
        return None


def sdk_meaning(exit_code: int | None, stderr: str) -> str:
    """An Azure SDK call (audited as its ``az`` equivalent): what the SDK really answered."""
    if exit_code == 0:
        return "Azure SDK call succeeded"
    code, _, message = (stderr or "").strip().partition(": ")
    if not message or " " in code:
        return f"Azure SDK call failed: {(stderr or 'no detail').strip()[:160]}"
    return f"Azure SDK call failed: {code}: {message[:160]}"
