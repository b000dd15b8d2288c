"""iptables listings, resolvectl and getent lookups: the host's own view of its network.

Each is SAFE only in the form that reads: `iptables -L|-S [CHAIN] [-n -v -x --line-numbers]
[-t TABLE]` (listing rules changes nothing; `-L -Z` zeroes counters and is not here),
`resolvectl status|query|statistics|dns|domain` with names or one interface, and `getent
hosts|ahosts|ahostsv4|ahostsv6 [NAME...]` (the resolver's answer for a name, as a program
on the host gets it). Every other form is RISKY here, and the approvability judge then decides
whether it may be offered (`iptables -F` never is).
"""

from __future__ import annotations

import re
from typing import Final

from core.safety.options import is_host
from core.safety.rules.base import Context, allowed, risky
from core.safety.verdict import Verdict

_CHAIN_RE: Final = re.compile(r"^[A-Za-z0-9_.-]{1,29}$")
_IFACE_RE: Final = re.compile(r"^[A-Za-z0-9_.:@-]{1,32}$")
_TABLES: Final = frozenset({"filter", "nat", "mangle", "raw", "security"})
#: Short flags that only change how a listing prints.
_IPT_PRINT: Final = frozenset("nvx")
_IPT_LONG: Final = {"--list": "L", "--list-rules": "S", "--numeric": "n", "--verbose": "v",
                    "--exact": "x", "--line-numbers": "#"}


def _iptables_words(args: list[str]) -> tuple[set[str], list[str], str | None] | None:
    """(flags, operands, table) of an iptables listing, or None for any other option."""
    flags: set[str] = set()
    operands: list[str] = []
    table: str | None = None
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("-t", "--table"):
            if index >= len(args):
                return None
            table = args[index]
            index += 1
        elif word.startswith("--table="):
            table = word.partition("=")[2]
        elif word in _IPT_LONG:
            flags.add(_IPT_LONG[word])
        elif word.startswith("-") and not word.startswith("--") and len(word) > 1:
            letters = word[1:]
            if not set(letters) <= _IPT_PRINT | {"L", "S"}:
                return None
            flags.update(letters)
        elif word.startswith("-"):
            return None
        else:
            operands.append(word)
    return flags, operands, table


def classify_iptables(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = _iptables_words(list(argv[1:]))
    if parsed is None:
        return risky("T1.state_change", argv, f"{argv[0]}: only listings (-L or -S with -n, "
                     "-v, -x, --line-numbers, -t TABLE) are read-only; other options change "
                     "rules or counters.")
    flags, operands, table = parsed
    if len(flags & {"L", "S"}) != 1:
        return risky("T1.state_change", argv, f"{argv[0]}: exactly one of -L or -S lists "
                     "rules; anything else changes them.")
    if table is not None and table not in _TABLES:
        return risky("T1.bad_value", argv, f"{argv[0]} -t {table[:30]!r} is not a table name.")
    if len(operands) > 1 or any(not _CHAIN_RE.match(w) for w in operands):
        return risky("T1.bad_value", argv, f"{argv[0]}: a listing takes at most one chain "
                     "name.")
    return allowed(argv, "list firewall rules")


_RESOLVECTL_FLAGS: Final = frozenset({"-4", "-6", "--no-pager", "--legend=no", "--legend=yes",
                                      "--cache=no", "--cache=yes", "--search=no",
                                      "--search=yes", "--json=short", "--json=pretty",
                                      "--json=off", "--raw=payload", "--validate=no"})
_RESOLVECTL_VALUED: Final = frozenset({"-t", "--type", "-c", "--class", "-i", "--interface",
                                       "-p", "--protocol"})
_RECORD_TYPE_RE: Final = re.compile(r"^[A-Za-z0-9]{1,10}$")
#: Verbs that read; `dns`/`domain`/`llmnr`... with a second word set a value instead.
_RESOLVECTL_READS: Final = frozenset({"status", "query", "statistics", "dns", "domain",
                                      "default-route", "llmnr", "mdns", "dnssec", "dnsovertls",
                                      "nta", "service", "tlsa"})
_LOOKUPS: Final = frozenset({"query", "service", "tlsa"})


def classify_resolvectl(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    words: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        name = word.partition("=")[0]
        if word in _RESOLVECTL_FLAGS:
            continue
        if name in _RESOLVECTL_VALUED:
            value = word.partition("=")[2] if "=" in word else (
                args[index] if index < len(args) else "")
            index += 0 if "=" in word else 1
            if not _RECORD_TYPE_RE.match(value) and not _IFACE_RE.match(value):
                return risky("T1.bad_value", argv, f"resolvectl {name} {value[:30]!r} is not "
                             "a plain value.")
            continue
        if word.startswith("-"):
            return risky("T1.unknown_option", argv, f"resolvectl {word[:30]!r} is not on the "
                         "allowlist.")
        words.append(word)
    verb = words[0] if words else "status"
    rest = words[1:]
    if verb not in _RESOLVECTL_READS:
        return risky("T1.state_change", argv, f"resolvectl {verb[:30]!r} changes resolver "
                     "state (flush-caches, reset-*, revert, set values).")
    if verb in _LOOKUPS:
        if not rest or any(not is_host(w.rstrip(".")) for w in rest):
            return risky("T1.bad_target", argv, "resolvectl query takes plain host names.")
        return allowed(argv, "resolve names through systemd-resolved")
    if len(rest) > (1 if verb != "status" else 8) or any(not _IFACE_RE.match(w) for w in rest):
        return risky("T1.state_change", argv, f"resolvectl {verb} with a value sets it; only "
                     "the interface name may follow to read it.")
    return allowed(argv, "read resolver state")


_GETENT_HOSTS: Final = frozenset({"hosts", "ahosts", "ahostsv4", "ahostsv6"})


def classify_getent(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    if not args or args[0] not in _GETENT_HOSTS:
        return risky("T1.unknown_option", argv, "getent: only the host databases (hosts, "
                     "ahosts, ahostsv4, ahostsv6) are SAFE; the others list accounts and "
                     "groups.")
    if any(not is_host(w.rstrip(".")) for w in args[1:]):
        return risky("T1.bad_target", argv, "getent hosts takes plain host names or addresses.")
    return allowed(argv, "resolve names as the host's programs do")
