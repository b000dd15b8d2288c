"""tcpdump: listing interfaces is SAFE; a capture on the host never is (it shows traffic).

A bounded capture printed to stdout at default verbosity is RISKY (T1.host_capture): an engineer
approves it. The rest of this module says why other forms are riskier still.

-z runs a program (Tier 0), -w/-r/-F/-V touch files, -A/-X print payloads that can carry
credentials; a capture needs -c so it ends by itself. tcpdump is not headers-only even without
-A: its protocol decoders print a line per application message (RESP `AUTH`, FTP `PASS`, SMTP
`AUTH PLAIN`, SNMP communities), which redaction removes (`redact_decoders`); with -v they print
whole header blocks and attribute lists, so verbose captures need approval.
"""

from __future__ import annotations

import re

from core.safety.options import OptionSpec, int_range, parse_options
from core.safety.rules.base import Context, allowed, risky
from core.safety.verdict import Verdict, make_verdict

_IFACE_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,32}$")
_FILTER_RE = re.compile(r"^[A-Za-z0-9_.:/=<>!()\[\]&|, -]{1,200}$")

TCPDUMP = OptionSpec(
    program="tcpdump",
    flags=frozenset({"-n", "-e", "-t", "-q", "-S", "-N", "-D", "-l", "-p", "-#",
                     "-U", "--immediate-mode"}),
    valued={"-i": lambda v: bool(_IFACE_RE.match(v)), "-c": int_range(1, 10000),
            "-s": int_range(0, 262144), "-Q": lambda v: v in ("in", "out", "inout"),
            "--time-stamp-precision": lambda v: v in ("micro", "nano")},
    aliases={"--interface": "-i", "--count": "-c", "--snapshot-length": "-s",
             "--list-interfaces": "-D", "--no-promiscuous-mode": "-p", "--number": "-#",
             "--packet-buffered": "-U", "--direction": "-Q"},
    denied={
        "-z": ("T0.tcpdump_exec", "runs a program on every rotated capture file"),
        "-w": ("T1.writes_file", "writes packets to a file"),
        "-C": ("T1.writes_file", "rotates capture files"),
        "-G": ("T1.writes_file", "rotates capture files"),
        "-W": ("T1.writes_file", "limits rotated capture files"),
        "-r": ("T1.reads_file", "reads a saved capture file"),
        "-F": ("T1.reads_file", "reads the filter from a file"),
        "-V": ("T1.reads_file", "reads a list of capture files"),
        "-Z": ("T1.unknown_option", "changes the user tcpdump runs as"),
        "-A": ("T1.payload_dump", "prints packet payloads"),
        "-v": ("T1.payload_dump", "verbose decoders print whole application headers (HTTP, "
               "SIP, SMB) and attribute lists"),
        "-X": ("T1.payload_dump", "prints packet payloads"),
        "-x": ("T1.payload_dump", "prints packet payloads"),
        "--print": ("T1.unknown_option", "prints while writing"),
        "-y": ("T1.unknown_option", "changes the link type"),
        "-I": ("T1.state_change", "puts the interface into monitor mode"),
        "-j": ("T1.unknown_option", "changes the timestamp source"),
    },
)


def classify_tcpdump(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(TCPDUMP, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        if parsed.rule == "T0.tcpdump_exec":
            return make_verdict("T0.tcpdump_exec", "Refused: tcpdump -z runs an arbitrary "
                                "program (as root) on each rotated file. Never allowed.", argv)
        return parsed
    if parsed.has("-D"):
        if len(parsed.options) > 1 or parsed.positionals:
            return risky("T1.bad_value", argv, "tcpdump -D takes no other arguments.")
        return allowed(argv, "list capture interfaces")
    if not parsed.has("-c"):
        return risky("T1.unbounded", argv, "tcpdump without -c captures until killed; add "
                     "-c N (at most 10000).")
    for word in parsed.positionals:
        if not _FILTER_RE.match(word):
            return risky("T1.bad_value", argv, f"tcpdump filter word {word[:40]!r} is not a "
                         "plain filter expression.")
    return risky("T1.host_capture", argv, "tcpdump captures traffic on this host, and a "
                 "capture shows what the traffic carries; an engineer must approve it (or use "
                 "capture_traffic, a managed Network Watcher capture).")
