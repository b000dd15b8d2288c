"""ping, traceroute, tracepath, mtr, dig, nslookup, host: bounded, read-only network probes."""

from __future__ import annotations

import re

from core.safety.options import (
    OptionSpec,
    ParsedArgs,
    int_range,
    is_host,
    num_range,
    one_of,
    parse_options,
)
from core.safety.rules.base import Context, allowed, risky
from core.safety.verdict import Verdict

_DNS_WORD_RE = re.compile(r"^[A-Za-z0-9_*][A-Za-z0-9_.:*-]{0,252}$")
_PORT = int_range(1, 65535)


#: Zone transfers in every spelling dig, host and nslookup accept (TYPE252 is AXFR, 251 IXFR).
_ZONE_TRANSFERS = frozenset({"axfr", "ixfr", "type252", "type251", "252", "251"})


def _dns_word(value: str) -> bool:
    low = value.lower()
    return (bool(_DNS_WORD_RE.match(value)) and low not in _ZONE_TRANSFERS
            and not low.startswith("ixfr="))


def _subnet(value: str) -> bool:
    """+subnet=ADDR[/LEN] (EDNS client subnet): an address, not a file or a name."""
    addr, _, length = value.partition("/")
    return bool(re.fullmatch(r"[0-9A-Fa-f.:]{1,45}", addr)) and (
        not length or (length.isdigit() and int(length) <= 128))


def _one_host(spec: OptionSpec, parsed: ParsedArgs, argv: tuple[str, ...], extra: int = 0,
              extra_ok: int = 0) -> Verdict | None:
    """Exactly one host positional, plus up to `extra` integer positionals <= extra_ok."""
    pos = parsed.positionals
    if not pos:
        return risky("T1.bad_target", argv, f"{spec.program} needs exactly one target host.")
    if not is_host(pos[0]):
        return risky("T1.bad_target", argv, f"{spec.program} target {pos[0][:60]!r} is not a "
                     "plain host name or IP address.")
    rest = pos[1:]
    if len(rest) > extra or any(not (w.isdigit() and int(w) <= extra_ok) for w in rest):
        return risky("T1.bad_target", argv, f"{spec.program} takes one target host; unexpected "
                     f"extra arguments {rest[:3]!r}.")
    return None


PING = OptionSpec(
    program="ping",
    flags=frozenset({"-4", "-6", "-n", "-q", "-v", "-D", "-O"}),
    valued={"-c": int_range(1, 100), "-W": num_range(0, 30), "-w": int_range(1, 120),
            "-i": num_range(0.2, 10), "-s": int_range(0, 9000), "-t": int_range(1, 255),
            "-M": one_of("do", "want", "dont", "probe")},
    denied={"-f": ("T1.flood", "flood ping sends packets as fast as the host can"),
            "-l": ("T1.flood", "preload sends a burst of packets without waiting"),
            "-b": ("T1.flood", "pings a broadcast address"),
            "-p": ("T1.sends_data", "fills probe packets with caller-chosen bytes"),
            "-I": ("T1.unknown_option", "binds to a chosen interface or source address")},
)


def classify_ping(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(PING, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    bad = _one_host(PING, parsed, argv)
    if bad:
        return bad
    if not parsed.has("-c") and not parsed.has("-w"):
        return risky("T1.unbounded", argv, "ping without -c or -w runs until it is killed; "
                     "add -c 4 (at most 100).")
    return allowed(argv, "bounded ICMP echo")


TRACEROUTE = OptionSpec(
    program="traceroute",
    flags=frozenset({"-n", "-I", "-T", "-U", "-4", "-6", "-F", "-e", "-A"}),
    valued={"-q": int_range(1, 5), "-w": num_range(0, 10), "-m": int_range(1, 64),
            "-p": _PORT, "-f": int_range(1, 64), "-N": int_range(1, 32),
            "-M": one_of("default", "icmp", "tcp", "tcpconn", "udp", "udplite", "dccp")},
    aliases={"--icmp": "-I", "--tcp": "-T", "--udp": "-U", "--max-hops": "-m",
             "--queries": "-q", "--port": "-p", "--first": "-f", "--sim-queries": "-N",
             "--module": "-M", "--type": "-M"},
)


def classify_traceroute(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(TRACEROUTE, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    return _one_host(TRACEROUTE, parsed, argv, extra=1, extra_ok=9000) or allowed(
        argv, "route trace")


TRACEPATH = OptionSpec(
    program="tracepath",
    flags=frozenset({"-n", "-b", "-4", "-6"}),
    valued={"-m": int_range(1, 64), "-p": _PORT, "-l": int_range(1, 9000)},
)


def classify_tracepath(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(TRACEPATH, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    return _one_host(TRACEPATH, parsed, argv) or allowed(argv, "path MTU trace")


MTR = OptionSpec(
    program="mtr",
    flags=frozenset({"-r", "-w", "-n", "-b", "-4", "-6", "-T", "-u", "-z", "-j", "-C"}),
    valued={"-c": int_range(1, 100), "-P": _PORT, "-i": num_range(1, 10),
            "-m": int_range(1, 64), "-s": int_range(0, 9000), "-f": int_range(1, 64)},
    aliases={"--report": "-r", "--report-wide": "-w", "--no-dns": "-n", "--show-ips": "-b",
             "--tcp": "-T", "--udp": "-u", "--aslookup": "-z", "--json": "-j", "--csv": "-C",
             "--report-cycles": "-c", "--port": "-P", "--interval": "-i", "--max-ttl": "-m",
             "--psize": "-s", "--first-ttl": "-f"},
    denied={"-F": ("T1.reads_file", "reads target host names from a local file"),
            "--filename": ("T1.reads_file", "reads target host names from a local file"),
            "-t": ("T1.interactive", "starts the interactive curses interface"),
            "-g": ("T1.interactive", "starts the GTK interface")},
)


def classify_mtr(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(MTR, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    bad = _one_host(MTR, parsed, argv)
    if bad:
        return bad
    if not any(parsed.has(f) for f in ("-r", "-w", "-j", "-C")):
        return risky("T1.interactive", argv, "mtr without --report/-r (or --json/--csv) is "
                     "interactive; use mtr -r -c 10 HOST.")
    return allowed(argv, "report-mode route trace")


_DIG_PLUS_FLAGS = frozenset({
    "short", "tcp", "vc", "trace", "dnssec", "recurse", "all", "answer", "authority",
    "additional", "question", "stats", "cmd", "comments", "multiline", "nssearch", "identify",
    "ttlid", "ttlunits", "cd", "cdflag", "adflag", "aaflag", "aaonly", "search", "defname",
    "besteffort", "nsid", "qr", "rrcomments", "class", "crypto", "split", "onesoa",
    "unknownformat", "fail", "ignore", "edns", "expire", "keepopen", "zflag", "header-only",
    "showsearch", "idnin", "idnout", "rdflag", "cookie", "badcookie", "zoneversion",
    "dns64prefix", "showbadcookie", "yaml", "raflag", "tcflag",
})
_DIG_PLUS_VALUED = {
    "time": int_range(1, 30), "tries": int_range(1, 5), "retry": int_range(0, 5),
    "bufsize": int_range(0, 65535), "ndots": int_range(0, 10), "edns": int_range(0, 1),
    "split": int_range(0, 256), "subnet": _subnet, "udptimeout": int_range(1, 30),
}
_DIG_DASH_VALUED = {"-t": _dns_word, "-c": one_of("IN", "CH", "HS", "in", "ch", "hs"),
                    "-p": _PORT, "-x": is_host, "-q": _dns_word}
_DIG_DENIED = {
    "-f": ("T1.reads_file", "runs a batch of queries read from a local file"),
    "-k": ("T1.reads_file", "reads a TSIG key file"),
    "-y": ("T1.sends_data", "puts a TSIG secret on the command line"),
    "-b": ("T1.unknown_option", "binds to a chosen source address"),
}


def classify_dig(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    index = 0
    names = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word.startswith("@"):
            if not is_host(word[1:]):
                return risky("T1.bad_target", argv, f"dig server {word[:60]!r} is not a plain "
                             "host name or IP address.")
        elif word.startswith("+"):
            name, eq, value = word[1:].partition("=")
            base = name[2:] if name.startswith("no") and name[2:] in _DIG_PLUS_FLAGS else name
            if base in _DIG_PLUS_VALUED and eq:
                if not _DIG_PLUS_VALUED[base](value):
                    return risky("T1.bad_value", argv, f"dig {word!r}: value out of range.")
            elif base not in _DIG_PLUS_FLAGS or eq:
                return risky("T1.unknown_option", argv, f"dig option {word[:40]!r} is not on "
                             "the allowlist (dig also accepts abbreviations; spell it out).")
        elif word.startswith("-"):
            key = word[:2]
            if word in ("-4", "-6", "-m"):
                continue
            if key in _DIG_DENIED:
                rule, why = _DIG_DENIED[key]
                return risky(rule, argv, f"dig {key}: {why}.")
            if key not in _DIG_DASH_VALUED:
                return risky("T1.unknown_option", argv, f"dig option {word[:40]!r} is not on "
                             "the allowlist.")
            value = word[2:]
            if not value:
                if index >= len(args):
                    return risky("T1.bad_value", argv, f"dig {key} needs a value.")
                value = args[index]
                index += 1
            if not _DIG_DASH_VALUED[key](value):
                return risky("T1.bad_value", argv, f"dig {key} value {value[:60]!r} rejected.")
        else:
            if not _dns_word(word):
                return risky("T1.bad_target", argv, f"dig argument {word[:60]!r} is not a "
                             "DNS name, type or class.")
            names += 1
    if names > 3:
        return risky("T1.bad_target", argv, "dig: more than one query (name type class); "
                     "run one lookup per command.")
    return allowed(argv, "DNS lookup")


_NSLOOKUP_VALUED = {
    "type": _dns_word, "query": _dns_word, "querytype": _dns_word, "q": _dns_word,
    "port": _PORT, "timeout": int_range(1, 30), "retry": int_range(0, 5),
    "class": one_of("IN", "CH", "HS", "in", "ch", "hs", "ANY", "any"),
}
_NSLOOKUP_FLAGS = frozenset({"debug", "nodebug", "d2", "nod2", "vc", "novc", "recurse",
                             "norecurse", "search", "nosearch", "fail", "nofail"})


def classify_nslookup(argv: tuple[str, ...], ctx: Context) -> Verdict:
    positionals: list[str] = []
    for word in argv[1:]:
        if word.startswith("-") and word != "-":
            name, eq, value = word[1:].partition("=")
            if eq and name in _NSLOOKUP_VALUED:
                if not _NSLOOKUP_VALUED[name](value):
                    return risky("T1.bad_value", argv, f"nslookup {word!r}: value rejected.")
            elif eq or name not in _NSLOOKUP_FLAGS:
                return risky("T1.unknown_option", argv, f"nslookup option {word[:40]!r} is not "
                             "on the allowlist (nslookup accepts abbreviations; spell it out).")
        else:
            positionals.append(word)
    if not positionals or positionals[0] == "-":
        return risky("T1.interactive", argv, "nslookup without a name to look up starts "
                     "interactive mode; give the name: nslookup NAME [SERVER].")
    if len(positionals) > 2 or not all(_dns_word(p) for p in positionals):
        return risky("T1.bad_target", argv, "nslookup takes NAME [SERVER], both plain names.")
    return allowed(argv, "DNS lookup")


HOST = OptionSpec(
    program="host",
    flags=frozenset({"-a", "-v", "-4", "-6", "-T", "-d", "-r", "-C", "-s"}),
    valued={"-t": _dns_word, "-c": one_of("IN", "CH", "HS", "in", "ch", "hs"),
            "-W": int_range(1, 30), "-R": int_range(0, 5), "-N": int_range(0, 10)},
    denied={"-l": ("T1.unknown_option", "requests a full zone transfer")},
)


def classify_host(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(HOST, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    pos = parsed.positionals
    if not 1 <= len(pos) <= 2 or not all(_dns_word(p) for p in pos):
        return risky("T1.bad_target", argv, "host takes NAME [SERVER], both plain names.")
    return allowed(argv, "DNS lookup")
