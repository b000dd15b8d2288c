"""tc, ethtool, nft, date, openssl s_client: read-only views of the host and of a TLS peer.

Each is SAFE only in its read form: `tc -s qdisc show`, `ethtool -i|-S|-k ... IFACE`, `nft list
...`, `date -u`, and `openssl s_client -connect HOST:PORT` (stdin is /dev/null in the executor,
so s_client completes the handshake, prints the chain and exits). Every other subcommand or option
changes state, reads files or waits forever, and is RISKY.
"""

from __future__ import annotations

import re
from typing import Final

from core.safety.hosts import word_hits_local
from core.safety.options import is_host
from core.safety.rules.base import Context, allowed, risky
from core.safety.verdict import Verdict

_WORD_RE: Final = re.compile(r"^[A-Za-z0-9_.:@/-]{1,64}$")
_IFACE_RE: Final = re.compile(r"^[A-Za-z0-9_.:@-]{1,32}$")
_VERBS_THAT_WRITE: Final = frozenset({"add", "del", "delete", "change", "replace", "link",
                                      "flush", "reset", "destroy", "create", "insert", "rename",
                                      "set", "exec", "monitor"})

_TC_FLAGS: Final = frozenset({"-s", "-stats", "-statistics", "-d", "-details", "-j", "-json",
                              "-p", "-pretty", "-i", "-iec", "-g", "-graph", "-r", "-raw",
                              "-h", "-human", "-t", "-timestamp"})
_TC_OBJECTS: Final = frozenset({"qdisc", "class", "filter", "chain", "action", "actions"})


def classify_tc(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag not in _TC_FLAGS:
            return risky("T1.unknown_option", argv, f"tc option {flag!r} is not on the "
                         "allowlist (-batch reads a file, -netns switches namespace).")
    if not args or args[0] not in _TC_OBJECTS:
        return risky("T1.state_change", argv, "tc: only the full object words qdisc, class, "
                     "filter, chain or action are read here (tc expands abbreviations).")
    rest = args[1:]
    if rest and rest[0] not in ("show", "list", "ls"):
        return risky("T1.state_change", argv, f"tc {args[0]} {rest[0]!r}: only show/list/ls "
                     "are read-only.")
    for word in rest[1:]:
        if not _WORD_RE.match(word) or word in _VERBS_THAT_WRITE:
            return risky("T1.bad_value", argv, f"tc argument {word[:40]!r} is not a plain "
                         "selector.")
    return allowed(argv, "read traffic-control state")


_ETHTOOL_READS: Final = frozenset({
    "-i", "--driver", "-S", "--statistics", "-k", "--show-features", "--show-offload", "-g",
    "--show-ring", "-a", "--show-pause", "-c", "--show-coalesce", "-l", "--show-channels", "-T",
    "--show-time-stamping", "-P", "--show-permaddr", "--show-eee", "--show-fec",
    "--show-priv-flags", "-m", "--module-info", "--dump-module-eeprom", "--phy-statistics",
})


def classify_ethtool(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    while args and args[0] in ("--json", "-I", "--include-statistics"):
        args.pop(0)
    if args and args[0].startswith("-"):
        if args[0] not in _ETHTOOL_READS:
            return risky("T1.state_change", argv, f"ethtool {args[0]!r} is not one of the "
                         "read options (-i, -S, -k, -g, -a, -c, -l, -T, -P, -m); the others "
                         "change the NIC, flash it or blink it.")
        args.pop(0)
    if len(args) != 1 or not _IFACE_RE.match(args[0]):
        return risky("T1.bad_target", argv, "ethtool reads one interface: ethtool [-i|-S|-k "
                     "...] IFACE.")
    return allowed(argv, "read NIC driver and counters")


_NFT_FLAGS: Final = frozenset({"-a", "--handle", "-n", "--numeric", "-s", "--stateless", "-j",
                               "--json", "-t", "--terse", "-N", "-S", "--service", "-y",
                               "--numeric-priority", "-p", "--numeric-protocol", "-T",
                               "--numeric-time", "-c", "--check"})
_NFT_LISTS: Final = frozenset({"ruleset", "tables", "table", "chain", "chains", "set", "sets",
                               "map", "maps", "counter", "counters", "quota", "quotas",
                               "flowtable", "flowtables", "meter", "meters", "hooks",
                               "element", "ct", "limits", "secmarks", "synproxys"})


def classify_nft(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag not in _NFT_FLAGS:
            return risky("T1.unknown_option", argv, f"nft option {flag!r} is not on the "
                         "allowlist (-f reads a file, -i is interactive).")
    if len(args) < 2 or args[0] != "list" or args[1] not in _NFT_LISTS:
        return risky("T1.state_change", argv, "nft: only `nft list ruleset|tables|table ...` "
                     "is read-only.")
    for word in args[2:]:
        if not _WORD_RE.match(word) or word in _VERBS_THAT_WRITE:
            return risky("T1.bad_value", argv, f"nft argument {word[:40]!r} is not a plain "
                         "name.")
    return allowed(argv, "list nftables rules")


_DATE_FLAGS: Final = frozenset({"-u", "--utc", "--universal", "-R", "--rfc-email", "-I",
                                "--iso-8601", "--debug"})
_DATE_VALUE_RE: Final = re.compile(r"^[A-Za-z0-9 @:+.,/_-]{1,64}$")
_DATE_FORMAT_RE: Final = re.compile(r"^\+[A-Za-z0-9 %:+.,/_-]{0,64}$")


def classify_date(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        name, eq, value = word.partition("=")
        if word in _DATE_FLAGS or re.fullmatch(r"-I(?:date|hours|minutes|seconds|ns)", word):
            continue
        if name in ("--iso-8601", "--rfc-3339") and eq and value in (
                "date", "hours", "minutes", "seconds", "ns"):
            continue
        if name in ("-d", "--date"):
            if not eq:
                if index >= len(args):
                    return risky("T1.bad_value", argv, "date -d needs a value.")
                value = args[index]
                index += 1
            if not _DATE_VALUE_RE.match(value):
                return risky("T1.bad_value", argv, f"date -d {value[:30]!r} is not a plain "
                             "date.")
            continue
        if _DATE_FORMAT_RE.match(word):
            continue
        return risky("T1.state_change" if name in ("-s", "--set") else "T1.unknown_option",
                     argv, f"date {word[:30]!r}: only -u, -R, -I, --iso-8601, --rfc-3339, -d "
                     "and +FORMAT are read-only (-s sets the clock, -f and -r read files).")
    return allowed(argv, "print the time")


_S_CLIENT_FLAGS: Final = frozenset({
    "-showcerts", "-brief", "-status", "-verify_return_error", "-tls1", "-tls1_1", "-tls1_2",
    "-tls1_3", "-no_tls1", "-no_tls1_1", "-no_tls1_2", "-no_tls1_3", "-4", "-6", "-msg",
    "-state", "-no_ticket", "-noservername", "-prexit", "-crlf", "-nbio", "-no_ign_eof",
})
_S_CLIENT_VALUED: Final = frozenset({"-connect", "-servername", "-alpn", "-starttls",
                                     "-verify", "-cipher", "-ciphersuites", "-groups",
                                     "-curves", "-sigalgs", "-name"})
_TOKEN_RE: Final = re.compile(r"^[A-Za-z0-9_.:,+-]{1,200}$")


def _target_problem(value: str) -> str | None:
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535 or not is_host(host):
        return f"-connect {value[:60]!r} must be HOST:PORT"
    if word_hits_local(host):
        return f"-connect {value[:60]!r} reaches a service on Ghost's own host"
    return None


def classify_openssl(argv: tuple[str, ...], ctx: Context) -> Verdict:
    if argv[1:2] != ("s_client",):
        return risky("T3.network_tool", argv, "openssl: only `openssl s_client -connect "
                     "HOST:PORT` is read-only; other commands read keys or write files.")
    args = list(argv[2:])
    index = 0
    connect: str | None = None
    while index < len(args):
        word = args[index]
        index += 1
        if word in _S_CLIENT_FLAGS:
            continue
        if word not in _S_CLIENT_VALUED:
            return risky("T1.unknown_option", argv, f"openssl s_client {word[:30]!r} is not "
                         "on the allowlist (keys, certificates, session files, proxies and "
                         "-quiet/-ign_eof, which waits forever, need approval).")
        if index >= len(args):
            return risky("T1.bad_value", argv, f"openssl s_client {word} needs a value.")
        value = args[index]
        index += 1
        if word == "-connect":
            connect = value
            problem = _target_problem(value)
            if problem:
                rule = "T1.loopback_target" if "own host" in problem else "T1.bad_target"
                return risky(rule, argv, f"openssl s_client {problem}.")
        elif word == "-servername" and not is_host(value):
            return risky("T1.bad_target", argv, "openssl s_client -servername takes a host "
                         "name.")
        elif not _TOKEN_RE.match(value):
            return risky("T1.bad_value", argv, f"openssl s_client {word} {value[:30]!r} is "
                         "not a plain value.")
    if connect is None:
        return risky("T1.bad_target", argv, "openssl s_client needs -connect HOST:PORT.")
    return allowed(argv, "TLS handshake and certificate chain (stdin closed)")
