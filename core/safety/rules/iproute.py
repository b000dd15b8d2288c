"""ip, ss, netstat: read the host's own network state.

`ip` resolves any prefix of an object or command (`ip r a` is `ip route add`), so objects are
resolved the way ip does, and the only commands accepted are the literal words show/list/get.
"""

from __future__ import annotations

import re

from core.safety.options import OptionSpec, any_value, one_of, parse_options
from core.safety.rules.base import Context, allowed, risky
from core.safety.verdict import Verdict

#: ip's object table, in the order ip matches prefixes against it.
_IP_OBJECTS = (
    "address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour", "ntable",
    "ntbl", "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tuntap", "tap", "token",
    "tcpmetrics", "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns", "netconf",
    "vrf", "sr", "nexthop", "mptcp", "ioam", "stats", "help",
)
_IP_READ_OBJECTS = frozenset({"address", "route", "rule", "neighbor", "neighbour", "link",
                              "maddress", "netconf", "tunnel", "tcp_metrics", "tcpmetrics"})
_IP_GLOBAL_FLAGS = frozenset({
    "-4", "-6", "-s", "-stats", "-statistics", "-d", "-details", "-br", "-brief", "-j", "-json",
    "-p", "-pretty", "-o", "-oneline", "-h", "-human", "-human-readable", "-r", "-resolve",
    "-N", "-Numeric", "-c", "-color", "-0", "-family",
})
_IP_DENIED_GLOBAL = {
    "-b": "runs a batch of ip commands from a file", "-batch": "runs a batch of ip commands "
    "from a file", "-force": "keeps going after errors in batch mode",
    "-n": "runs in another network namespace", "-netns": "runs in another network namespace",
    "-a": "acts on all objects", "-all": "acts on all objects",
}
_IP_ARG_RE = re.compile(r"^[A-Za-z0-9_.:/@-]{1,80}$")


def _resolve_object(word: str) -> str | None:
    for name in _IP_OBJECTS:
        if name.startswith(word):
            return name
    return None


def classify_ip(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag in _IP_DENIED_GLOBAL:
            rule = "T1.reads_file" if flag.startswith("-b") else "T1.unknown_option"
            return risky(rule, argv, f"ip {flag}: {_IP_DENIED_GLOBAL[flag]}.")
        if flag in ("-0", "-family"):
            return risky("T1.unknown_option", argv, f"ip {flag} is not on the allowlist.")
        if flag not in _IP_GLOBAL_FLAGS:
            return risky("T1.unknown_option", argv, f"ip option {flag!r} is not on the "
                         "allowlist (ip accepts abbreviations; spell options out).")
    if not args:
        return risky("T1.bad_value", argv, "ip needs an object (address, route, link, ...).")
    obj = _resolve_object(args[0])
    if obj not in _IP_READ_OBJECTS:
        return risky("T1.state_change", argv, f"ip object {args[0]!r} ({obj or 'unknown'}) is "
                     "not one of the read-only objects address/route/rule/neigh/link.")
    rest = args[1:]
    if rest and rest[0] not in ("show", "list") and not (obj == "route" and rest[0] == "get"):
        return risky("T1.state_change", argv, f"ip {obj} {rest[0]!r}: only the full words "
                     "'show', 'list' (and 'route get') are read-only; ip expands abbreviations "
                     "like 'a' to 'add'.")
    for word in rest[1:]:
        if not _IP_ARG_RE.match(word) or word in ("add", "del", "delete", "flush", "change",
                                                  "replace", "set", "exec"):
            return risky("T1.bad_value", argv, f"ip argument {word[:40]!r} is not a plain "
                         "selector.")
    return allowed(argv, f"read {obj} state")


_SS_FAMILIES = one_of("inet", "inet6", "unix", "link", "netlink", "vsock", "tipc", "xdp",
                      "mptcp")
SS = OptionSpec(
    program="ss",
    flags=frozenset({"-t", "-u", "-l", "-a", "-n", "-p", "-e", "-m", "-o", "-i", "-s", "-r",
                     "-4", "-6", "-x", "-w", "-H", "-O", "-b", "-T", "-Z", "-z", "-M", "-S",
                     "-d", "-0"}),
    valued={"-f": _SS_FAMILIES, "-A": lambda v: bool(re.match(r"^[a-z0-9_,!]{1,80}$", v))},
    aliases={"--tcp": "-t", "--udp": "-u", "--listening": "-l", "--all": "-a",
             "--numeric": "-n", "--processes": "-p", "--extended": "-e", "--memory": "-m",
             "--options": "-o", "--info": "-i", "--summary": "-s", "--resolve": "-r",
             "--ipv4": "-4", "--ipv6": "-6", "--unix": "-x", "--raw": "-w",
             "--no-header": "-H", "--oneline": "-O", "--bpf": "-b", "--threads": "-T",
             "--context": "-Z", "--contexts": "-z", "--mptcp": "-M", "--sctp": "-S",
             "--dccp": "-d", "--packet": "-0", "--family": "-f",
             "--query": "-A", "--socket": "-A"},
    denied={"-K": ("T1.state_change", "kills (closes) every matching socket"),
            "--kill": ("T1.state_change", "kills (closes) every matching socket"),
            "-F": ("T1.reads_file", "reads the filter from a local file"),
            "--filter": ("T1.reads_file", "reads the filter from a local file"),
            "-D": ("T1.writes_file", "dumps raw TCP diag data to a file"),
            "--diag": ("T1.writes_file", "dumps raw TCP diag data to a file"),
            "-E": ("T1.unbounded", "prints socket events continuously until killed"),
            "--events": ("T1.unbounded", "prints socket events continuously until killed"),
            "-N": ("T1.unknown_option", "switches network namespace"),
            "--net": ("T1.unknown_option", "switches network namespace")},
)
_SS_FILTER_RE = re.compile(r"^[A-Za-z0-9_.:/=<>!()\[\]*, -]{1,120}$")


def classify_ss(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(SS, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    for word in parsed.positionals:
        if not _SS_FILTER_RE.match(word):
            return risky("T1.bad_value", argv, f"ss filter word {word[:40]!r} is not a plain "
                         "filter expression.")
    return allowed(argv, "read socket state")


NETSTAT = OptionSpec(
    program="netstat",
    flags=frozenset({"-t", "-u", "-l", "-a", "-n", "-p", "-r", "-i", "-s", "-e", "-W", "-w",
                     "-x", "-4", "-6", "-g", "-o", "-v", "-N", "-T", "-M", "--numeric-ports",
                     "--numeric-hosts", "--numeric-users", "--symbolic", "--notrim"}),
    valued={"-A": any_value},
    aliases={"--tcp": "-t", "--udp": "-u", "--listening": "-l", "--all": "-a",
             "--numeric": "-n", "--programs": "-p", "--route": "-r", "--interfaces": "-i",
             "--statistics": "-s", "--extended": "-e", "--wide": "-W", "--raw": "-w",
             "--unix": "-x", "--groups": "-g", "--timers": "-o", "--verbose": "-v",
             "--masquerade": "-M"},
    denied={"-c": ("T1.unbounded", "prints continuously until killed"),
            "--continuous": ("T1.unbounded", "prints continuously until killed")},
)


def classify_netstat(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(NETSTAT, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    if parsed.positionals:
        return risky("T1.bad_value", argv, "netstat takes no arguments besides options.")
    for value in parsed.values("-A"):
        if not re.match(r"^[a-z0-9,]{1,40}$", value):
            return risky("T1.bad_value", argv, "netstat -A takes a family list.")
    return allowed(argv, "read socket and route tables")
