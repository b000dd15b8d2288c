"""`az vm run-command invoke` of a read-only probe: approvable, never arbitrary remote code.

Running code on a VM is FORBIDDEN (T0.az_remote_exec) because a model that reads attacker-
influenced output must never be able to offer an approver a shell on a production machine. The
playbook still needs to look inside a VM (is the service listening, what does the VM's own
resolver answer), so one narrow form is approvable by a second engineer: `az vm run-command
invoke --command-id RunShellScript --scripts LINE…` where every line is one simple command of a
fixed set of read-only probes (no operators, expansions or redirections) with read-only
arguments. Anything else stays FORBIDDEN; this module only says whether the form fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from core.safety.lexer import shlex_agrees, strict_lex
from core.safety.rules.base import Context
from core.safety.rules.curl import classify_curl
from core.safety.rules.iproute import classify_ip, classify_netstat, classify_ss
from core.safety.rules.probes import (
    classify_dig,
    classify_host,
    classify_mtr,
    classify_nslookup,
    classify_ping,
    classify_tracepath,
    classify_traceroute,
)
from core.safety.verdict import Verdict

#: Probes whose own rule decides: only the options the gate calls SAFE on this machine.
_GATED_PROBES: Final[dict[str, Callable[[tuple[str, ...], Context], Verdict]]] = {
    "ping": classify_ping, "dig": classify_dig, "nslookup": classify_nslookup,
    "host": classify_host, "ss": classify_ss, "ip": classify_ip, "curl": classify_curl,
    "traceroute": classify_traceroute, "tracepath": classify_tracepath, "mtr": classify_mtr,
    "netstat": classify_netstat,
}
#: Probes with no state-changing options at all, given at most these arguments.
_PLAIN: Final = {"uptime": frozenset(), "hostname": frozenset({"-I", "-i", "-f"}),
                 "free": frozenset({"-h", "-m", "-g"}), "df": frozenset({"-h"})}
_READABLE_FILES: Final = frozenset({"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
                                    "/etc/os-release", "/etc/hostname"})
_PROC_NET_RE: Final = re.compile(r"^/proc/net/(?:tcp6?|udp6?|dev|route|snmp|netstat|arp)$")
_UNIT_RE: Final = re.compile(r"^[A-Za-z0-9@._-]{1,100}$")
_NAME_RE: Final = re.compile(r"^[A-Za-z0-9._-]{1,253}$")
_HOST_PORT_RE: Final = re.compile(r"^[A-Za-z0-9._:-]{1,253}$")
#: az options that may accompany the probe (values checked where they matter).
_AZ_OPTIONS: Final = frozenset({"-g", "--resource-group", "-n", "--name", "--command-id",
                                "--scripts", "--ids", "--subscription", "-o", "--output",
                                "--query", "--only-show-errors", "--no-wait"})


def vm_probe_problem(rest: list[str]) -> str | None:
    """None when ``az`` + ``rest`` is `vm run-command invoke` of read-only probes; else why not."""
    if rest[:3] != ["vm", "run-command", "invoke"]:
        return "only `az vm run-command invoke` can run a probe"
    scripts: list[str] = []
    command_id = ""
    index = 3
    in_scripts = False
    while index < len(rest):
        word = rest[index]
        name, eq, value = word.partition("=")
        if word.startswith("-"):
            in_scripts = False
            if name not in _AZ_OPTIONS:
                return f"option {name[:40]} is not allowed with a probe"
            if name == "--scripts":
                in_scripts = True
                if eq:
                    scripts.append(value)
            elif name == "--command-id":
                if eq:
                    command_id = value
                elif index + 1 < len(rest):
                    command_id = rest[index + 1]
                    index += 1
            elif not eq and name not in ("--only-show-errors", "--no-wait") and index + 1 < len(
                    rest):
                index += 1  # the option's value
        elif in_scripts:
            scripts.append(word)
        else:
            return f"unexpected argument {word[:40]!r}"
        index += 1
    if command_id.lower() != "runshellscript":
        return "a probe runs as --command-id RunShellScript"
    lines = [line.strip() for script in scripts for line in script.splitlines() if line.strip()]
    if not lines:
        return "no --scripts given"
    if any(s.startswith("@") for s in scripts):
        return "a script loaded from a file (@file) cannot be read before it runs"
    for line in lines:
        problem = _line_problem(line)
        if problem is not None:
            return f"{line[:60]!r}: {problem}"
    return None


def _line_problem(line: str) -> str | None:
    lex = strict_lex(line)
    if (lex.unbalanced or lex.hazards or not lex.words or lex.patterns or lex.program_quoted
            or not shlex_agrees(line, lex.words)):
        return ("only one simple command per line (no operators, expansions, redirections or "
                "unquoted patterns)")
    program, args = lex.words[0], lex.words[1:]
    rule = _GATED_PROBES.get(program)
    if rule is not None:
        verdict = rule(tuple(lex.words), Context())
        if verdict.classification == "SAFE":
            return None
        return f"{program} with these options is not a read-only probe ({verdict.rule})"
    if program in ("nc", "ncat", "netcat"):
        return _nc_problem(args)
    if program in _PLAIN:
        bad = [a for a in args if a not in _PLAIN[program]]
        return f"{program} takes no argument {bad[0][:30]!r} here" if bad else None
    if program == "top":
        return None if _top_batch(args) else "top runs only in batch mode (top -b -n N)"
    if program == "cat":
        ok = bool(args) and all(a in _READABLE_FILES or _PROC_NET_RE.match(a) for a in args)
        return None if ok else "cat reads only resolver, hosts and /proc/net files here"
    if program == "systemctl":
        words = [a for a in args if a != "--no-pager"]
        ok = (len(words) == 2 and words[0] in ("status", "is-active")
              and _UNIT_RE.match(words[1]) is not None)
        return None if ok else "systemctl only shows a unit's status here"
    if program == "getent":
        ok = len(args) == 2 and args[0] in ("hosts", "ahosts") and bool(_NAME_RE.match(args[1]))
        return None if ok else "getent only looks up hosts here"
    return f"{program[:30]!r} is not one of the in-VM probes"


def _nc_problem(args: list[str]) -> str | None:
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    if any(a.startswith("--") for a in args) or "z" not in flags or set(flags) - set("zvnuw46"):
        return "nc only checks a port here (nc -z, with -v -n -u -w)"
    values = [a for a in args if not a.startswith("-")]
    if not values or not all(_HOST_PORT_RE.match(v) for v in values):
        return "nc takes a host and a port"
    return None


def _top_batch(args: list[str]) -> bool:
    joined = " ".join(args)
    return bool(re.fullmatch(r"-b ?-?n ?[0-9]{1,2}|-bn ?[0-9]{1,2}|-n ?[0-9]{1,2} -b", joined))
