"""The deterministic command classifier: Tier 0 -> structure -> Tier 1/2 -> Tier 3.

Order of the pipeline and why:
1. Tier 0 (FORBIDDEN) reads the text as hostilely as possible, so a forbidden command stays
   FORBIDDEN however it is quoted, chained or disguised.
2. Structure (Tier 3 rules checked early): only a single simple command of printable ASCII with no
   expansion, operator, redirection, glob or escape outside single quotes may continue. The
   executor runs argv with shell=False, but a human may paste an approved line into a shell, and
   a parse that depends on shell behaviour is a parse an attacker can steer.
3. Tier 1 allowlist by (program, options, arguments) and Tier 2 `az` verbs.
4. Tier 3: everything else is RISKY, with a rule id that says what kind of program it was.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from core.safety.lexer import (
    MAX_COMMAND_CHARS,
    printable_ascii_problem,
    shlex_agrees,
    strict_lex,
)
from core.safety.rules import PROGRAM_RULES, Context
from core.safety.tier0 import INTERPRETERS, WRAPPERS, tier0
from core.safety.verdict import Verdict, make_verdict

#: Tier 0 still reads commands up to this size so a hidden forbidden word is named as such.
_TIER0_SCAN_LIMIT: Final = 1 << 20
_ASSIGN_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

DESTRUCTIVE: Final = frozenset({
    "rm", "rmdir", "mv", "cp", "dd", "shred", "truncate", "chmod", "chown", "chgrp", "chattr",
    "ln", "touch", "mkdir", "tee", "kill", "pkill", "killall", "systemctl", "service",
    "iptables", "ip6tables", "iptables-restore", "nft", "ufw", "firewall-cmd", "tc", "ethtool",
    "ifconfig", "route", "arp", "sysctl", "mount", "umount", "crontab", "at", "useradd",
    "userdel", "usermod", "passwd", "apt", "apt-get", "yum", "dnf", "apk", "pip", "pip3", "npm",
    "sed", "install", "patch", "git", "docker", "kubectl", "helm", "terraform", "unlink",
    "tar", "zip", "unzip", "gzip", "gunzip", "curl-config", "dpkg", "rpm", "snap", "modprobe",
    "insmod", "rmmod", "swapoff", "swapon", "hostnamectl", "timedatectl", "nmcli", "brctl",
    "conntrack", "ipset", "logger", "wall", "write",
})
#: Programs whose arguments are values, never file names: a `*`, `?` or bracket in them is text
#: for the program (a JMESPath filter, `--local 10.0.0.4:*`, a DNS wildcard, a tcpdump or ss
#: filter), and the executor runs argv without a shell that could expand it.
PATTERN_VALUE_PROGRAMS: Final = frozenset({"az", "dig", "host", "nslookup", "tcpdump", "ss"})
NETWORK_TOOLS: Final = frozenset({
    "nc", "ncat", "netcat", "socat", "wget", "telnet", "ssh", "scp", "sftp", "rsync", "ftp",
    "openssl", "nmap", "hping3", "iperf", "iperf3", "tftp", "lftp", "http", "https", "xh",
    "aria2c", "nping", "arping", "whois", "smbclient", "ldapsearch", "mysql", "psql",
    "redis-cli", "mongo", "mongosh", "sqlcmd", "ssh-keyscan", "tshark", "dumpcap",
})


def classify(command: str, *, data_dir: Path | None = None,
             cwd: Path | None = None) -> Verdict:
    """Classify one command line as SAFE, RISKY or FORBIDDEN.

    `data_dir` is the audit/data directory that `cat` and `ghost-forensics` are confined to
    (checked on resolved real paths); without it those commands are RISKY. `cwd` is the
    directory relative paths are resolved against (default: the process's current directory).
    Deterministic: the same inputs and file system give the same verdict.
    """
    if not isinstance(command, str):
        raise TypeError(f"command must be str, not {type(command).__name__}")
    if not command.strip():
        return make_verdict("T3.empty", "The command is empty.")
    forbidden = tier0(command[:_TIER0_SCAN_LIMIT])
    if forbidden is not None:
        return forbidden
    if len(command) > MAX_COMMAND_CHARS:
        return make_verdict("T3.too_long", f"The command is {len(command)} characters long; "
                            f"the gate inspects at most {MAX_COMMAND_CHARS}. A person must "
                            "read it before it runs.")
    problem = printable_ascii_problem(command)
    if problem is not None:
        rule, what = problem
        return make_verdict(rule, f"Contains {what}; only printable ASCII can be SAFE, because "
                            "look-alike and invisible characters disguise what runs.")
    return _classify_simple(command, Context(data_dir=data_dir, cwd=cwd))


def _classify_simple(command: str, ctx: Context) -> Verdict:
    lex = strict_lex(command)
    if lex.unbalanced:
        return make_verdict("T3.parse_error", "Unbalanced quotes: the command does not parse "
                            "as one simple command.")
    if lex.hazards:
        rule, what = lex.hazards[0]
        return make_verdict(rule, f"Uses {what}. Only a single simple command with no shell "
                            "operators, expansion, redirection or globbing can be SAFE; "
                            "quote literal text in single quotes.")
    if not lex.words:
        return make_verdict("T3.empty", "The command has no words.")
    for word_index, char in lex.patterns:
        if word_index == 0 or lex.words[0] not in PATTERN_VALUE_PROGRAMS:
            return make_verdict("T3.glob", f"Uses unquoted {char!r}, which a shell expands to "
                                "file names; quote literal text in single quotes.")
    if not shlex_agrees(command, lex.words):
        return make_verdict("T3.parse_error", "The command parses differently under two "
                            "parsers; refusing to guess which one a shell would use.")
    argv = tuple(lex.words)
    program = argv[0]
    if lex.program_quoted:
        return make_verdict("T3.quoted_program", f"The program name {program!r} is quoted; "
                            "quotes inside names are a way to disguise them.", argv)
    if "/" in program:
        return make_verdict("T3.program_path", f"{program!r} is a path, not a bare program "
                            "name; a path can point at any file (./ping is not ping). Use the "
                            "bare name, which the executor resolves on its fixed PATH.", argv)
    if _ASSIGN_RE.match(program):
        return make_verdict("T3.assignment_prefix", f"{program.split('=')[0]}=... before the "
                            "program changes its environment (LD_PRELOAD, PATH, ...).", argv)
    rule_fn = PROGRAM_RULES.get(program)
    if rule_fn is not None:
        return rule_fn(argv, ctx)
    return _tier3(argv)


def _tier3(argv: tuple[str, ...]) -> Verdict:
    program = argv[0]
    if program in WRAPPERS:
        return make_verdict("T3.wrapper", f"{program!r} runs another program, which the gate "
                            "would not see; run the inner command directly.", argv)
    if program in INTERPRETERS or re.match(r"^(python|perl|ruby|node|php)[0-9.]*$", program):
        return make_verdict("T3.interpreter", f"{program!r} is an interpreter that can run "
                            "anything; an engineer must approve it.", argv)
    if program in DESTRUCTIVE:
        return make_verdict("T3.destructive_program", f"Tier 3: {program!r} changes files, "
                            "processes, services or firewall state; an engineer must approve "
                            "it.", argv)
    if program in NETWORK_TOOLS:
        return make_verdict("T3.network_tool", f"{program!r} is a general network client or "
                            "server (can send data or open shells); an engineer must approve "
                            "it.", argv)
    return make_verdict("T3.unknown_program", f"{program!r} is not on the allowlist; unknown "
                        "programs always need an engineer's approval.", argv)
