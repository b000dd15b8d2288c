"""Approvable means understood: the judge of every command that is not SAFE.

A command is offered for approval (RISKY) only when the gate knows every program in it and what
it does, and its shape is simple: one command, or one command piped into known text filters,
with output redirected only into Ghost's data directory. Everything else is FORBIDDEN, with a
reason that names the program or construct and says what to do instead. A program the gate does
not know may still be offered, but only alone, with literal arguments that name no program,
script, command line, device or system location.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from core.safety import programs
from core.safety.filters import filter_problem, sed_problem
from core.safety.paths import resolve_under
from core.safety.program_forms import disk_read_form, forbidden_form
from core.safety.rules.base import Context
from core.safety.shape import Redirect, Shape, Stage
from core.safety.targets import (
    copied_sources,
    critical_delete,
    holds_credentials,
    is_device,
    pathlike,
    protected_write,
    tricky_spelling,
    write_targets,
)
from core.safety.tier0_classes import credential_path
from core.safety.verdict import Verdict, make_verdict

_ASK: Final = "ask the engineer to run it themselves"
_ASSIGN_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: Option names (and `key=` settings such as ssh's ProxyCommand=) that make a program start
#: another program.
_RUNNER_OPTION_RE: Final = re.compile(
    r"command|exec|askpass|pager|editor|rsh|hook|helper|plugin|script|entrypoint|renderer"
    r"|interpreter|spawn|launcher|preprocessor|filter-program|proxy-?cmd|on-?calendar")
_NOT_RUNNERS: Final = frozenset({"executable", "exec-prefix", "show-hooks", "list-hooks"})
#: Words an unknown program may run: script files and shared objects.
_SCRIPT_RE: Final = re.compile(
    r"\.(?:sh|bash|zsh|ksh|csh|py|pyc|pl|pm|rb|ps1|psm1|js|mjs|cjs|php|lua|tcl|jar|exe|bat"
    r"|cmd|vbs|so|so\.[0-9.]+|dylib|dll|run|bin|elf|awk|sed|exp|expect)$", re.IGNORECASE)
_CODE_RE: Final = re.compile(
    r"(?:system|exec|eval|popen|spawn|fork|socket|connect|require|import|open)\s*\(|"
    r"\bimport\s+[a-z_]|\bos\.|subprocess|child_process|Runtime\.getRuntime|Process\.Start|"
    r"Invoke-Expression|\bIEX\b|/bin/|\$\(|`|&&|\|\||;|\|", re.IGNORECASE)
_DESTRUCTIVE: Final = frozenset({"rm", "rmdir", "unlink", "shred", "truncate", "mv", "dd",
                                 "find", "rsync", "chmod", "chown", "chgrp", "chattr", "tee",
                                 "cp", "install", "ln", "setfacl", "sed", "tar", "unzip"})
#: The RISKY rule of a known program, by what it does.
_RISKY_RULE: Final = {"reader": "T3.host_read", "changer": "T3.destructive_program",
                      "network": "T3.network_tool"}


def _no(rule: str, why: str, argv: tuple[str, ...] | None = None) -> Verdict:
    return make_verdict(rule, f"Ghost will not offer this for approval: {why}; {_ASK}.", argv)


# ---- one command ---------------------------------------------------------------------------

def _never_offered(program: str, args: list[str]) -> Verdict | None:
    kind = programs.never_offered(program)
    if kind is None or (kind == "disks" and disk_read_form(program, args)):
        return None
    if kind == "environment" or (program == "env" and all(
            w.startswith("-") or _ASSIGN_RE.match(w) for w in args)):
        return _no("T0.credential_store", f"'{program}' prints the environment, and an "
                   "environment holds the secrets services start with (to see one setting, "
                   "read the service's configuration with a command that prints no values)")
    if kind == "runs":
        if programs.is_interpreter(program):
            what = f"'{program}' is an interpreter: it runs a program the gate cannot read"
        elif program in programs.EDITORS:
            what = f"'{program}' is interactive and can start a shell"
        else:
            what = f"'{program}' runs another program, which the gate would not see"
        return _no("T0.runs_programs", what + " (run the inner command directly, if it is a "
                   "diagnostic)")
    rule, what = {
        "accounts": ("T0.privilege_escalation", f"'{program}' changes accounts, passwords, "
                     "groups or privileges"),
        "boot": ("T0.power", f"'{program}' changes what the host boots"),
        "power": ("T0.power", f"'{program}' changes the host's power state or runlevel"),
        "disks": ("T0.disk_format", f"'{program}' changes disks, partitions, volumes or swap"),
        "kernel": ("T0.privilege_escalation", f"'{program}' loads or unloads kernel code"),
        "tunnels": ("T0.reverse_shell", f"'{program}' opens a tunnel or remote access into "
                    "the host"),
        "memory": ("T0.credential_store", f"'{program}' copies a process's memory, and the "
                   "secrets in it"),
    }[kind]
    return _no(rule, what)


def _runner_option(args: list[str]) -> str | None:
    """An option (or ssh-style Key=value setting) that makes the program run another one."""
    for word in args:
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            return word
        if word.startswith("-"):
            name = word.partition("=")[0].lstrip("-").lower()
            if (len(name) > 2 and not name.startswith("no-") and name not in _NOT_RUNNERS
                    and _RUNNER_OPTION_RE.search(name)):
                return word.partition("=")[0]
        elif "=" in word:
            key = word.partition("=")[0].lower()
            if re.fullmatch(r"[a-z][a-z0-9._-]{0,60}", key) and _RUNNER_OPTION_RE.search(key):
                return word.partition("=")[0]
    return None


def _paths_problem(program: str, args: list[str], ctx: Context,
                   targets: list[str]) -> Verdict | None:
    """Devices, credential stores, protected write targets and tricky destructive targets."""
    if program not in programs.DEVICE_READERS and not disk_read_form(program, args):
        for word in args:
            value = word.partition("=")[2] if "=" in word and not word.startswith("/") else word
            if is_device(value):
                return _no("T0.raw_device", f"'{program}' names the device {value[:40]!r}: "
                           "reading it copies the disk or memory, writing it destroys it")
    for word in args:
        if credential_path(word.lower()):
            return _no("T0.credential_store", f"{word[:60]!r} is a credential store")
    for source in copied_sources(program, args):
        home = holds_credentials(source, ctx.cwd)
        if home is not None:
            return _no("T0.credential_store", f"'{program}' copies {source[:60]!r}, which holds "
                       f"{home}")
    for target in targets:
        if program in _DESTRUCTIVE or program not in programs.READERS:
            tricky = tricky_spelling(target)
            if tricky is not None:
                return _no("T0.protected_write", f"the target is spelled with {tricky}: write "
                           "the plain absolute path")
        why = protected_write(target, ctx.cwd)
        if why is not None:
            return _no("T0.protected_write", f"'{program}' would write {target[:60]!r}, "
                       f"{why}")
        if program in ("rm", "rmdir", "shred", "mv", "unlink", "find") and critical_delete(
                target, ctx.cwd):
            return _no("T0.rm_root", f"'{program}' would remove {target[:60]!r}, a top-level "
                       "directory")
    return None


def _unknown_problem(program: str, args: list[str], ctx: Context) -> Verdict | None:
    """An unknown program is approvable only with arguments that run or touch nothing."""
    for word in args:
        base = word.rstrip("/").rsplit("/", 1)[-1].lower()
        if programs.dangerous_name(base):
            return _no("T0.runs_programs", f"'{program}' is not known to the gate and is given "
                       f"the program {word[:40]!r}, which it may run")
        if _SCRIPT_RE.search(word) and not word.startswith("-"):
            return _no("T0.runs_programs", f"'{program}' is not known to the gate and is given "
                       f"the script or library {word[:60]!r}")
        if " " in word and programs.known(word.split()[0].rsplit("/", 1)[-1].lower()):
            return _no("T0.runs_programs", f"'{program}' is not known to the gate and is given "
                       f"a command line ({word[:60]!r})")
        if _CODE_RE.search(word):
            return _no("T0.runs_programs", f"'{program}' is not known to the gate and is given "
                       f"script text ({word[:60]!r})")
    targets = [w for w in args if pathlike(w)]
    for word in args:
        value = word.partition("=")[2]
        if value and pathlike(value):
            targets.append(value)
    return _paths_problem(program, args, ctx, targets)


_READ_VERBS: Final = frozenset({
    "get", "describe", "logs", "top", "explain", "api-resources", "api-versions", "version",
    "cluster-info", "events", "ps", "inspect", "images", "stats", "port", "info", "history",
    "status", "show", "list", "ls", "cat", "is-active", "is-enabled", "is-failed", "log",
    "diff", "blame", "list-units", "list-unit-files", "list-timers", "list-sockets",
    "list-dependencies", "get-values", "values", "search", "pods",
})


def _kind(program: str, args: list[str]) -> str:
    if programs.never_offered(program) == "disks":
        return "reader"  # only its read-only forms get this far
    verb = next((w for w in args if not w.startswith("-")), "")
    if program in ("kubectl", "docker", "podman", "crictl", "helm", "git", "systemctl",
                   "service") and (verb in _READ_VERBS or not verb):
        return "reader"
    if program in programs.NETWORK_TOOLS:
        return "network"
    if program in programs.CHANGERS:
        return "changer"
    return "reader"


def judge_command(argv: tuple[str, ...], verdict: Verdict | None, ctx: Context) -> Verdict:
    """One simple command that is not SAFE: RISKY when understood, else FORBIDDEN.

    `verdict` is what the program's own rule said (an allowlisted program in a RISKY form), or
    None for a program without a rule.
    """
    program, args = argv[0], list(argv[1:])
    if "/" in program:
        return _no("T0.disguised_program", f"{program[:60]!r} is a path, not a program name; a "
                   "path can point at any file (use the bare name, which Ghost resolves on its "
                   "own PATH)", argv)
    if _ASSIGN_RE.match(program):
        return _no("T0.disguised_program", f"{program.split('=')[0]}=... before the program "
                   "changes how it runs (LD_PRELOAD, PATH); give the command without it", argv)
    if program == "az" and verdict is not None:
        return verdict  # az's own rules decide (rules/az.py); Tier 0 saw its arguments
    refused = _never_offered(program, args)
    if refused is not None:
        return refused
    option = _runner_option(args)
    if option is not None:
        return _no("T0.runs_programs", f"'{program} {option[:40]}' makes it run another "
                   "program", argv)
    low = program.lower()
    if verdict is None and not programs.known(low):
        return _unknown_problem(program, args, ctx) or make_verdict(
            "T3.unknown_program", f"{program!r} is not known to the gate: an engineer must "
            "approve it (it is offered only as one command with literal arguments).", argv)
    form = forbidden_form(low, args)
    if form is not None:
        rule, what = form
        return _no(rule, what, argv)
    if low == "sed":
        problem = sed_problem(args, stage=False)
        if problem is not None and "-i" not in problem:
            return _no("T0.runs_programs", problem, argv)
    targets = write_targets(low, args)
    found = _paths_problem(low, args, ctx, targets)
    if found is not None:
        return found
    if verdict is not None:
        return verdict
    rule = _RISKY_RULE[_kind(low, args)]
    does = {"T3.host_read": "reads the host", "T3.destructive_program": "changes files, "
            "processes, services or the network", "T3.network_tool": "talks to the network"}
    what = does[rule]
    shown = [t for t in targets if pathlike(t)] or [t for t in targets if "." in t]
    if rule == "T3.destructive_program" and shown:
        more = f" and {len(shown) - 1} more" if len(shown) > 1 else ""
        what = f"changes {shown[0][:80]}{more}"
    return make_verdict(rule, f"'{program}' {what}; an engineer must approve it.", argv)


# ---- pipelines and redirections ------------------------------------------------------------

def _redirect_problem(redirect: Redirect, ctx: Context) -> Verdict | None:
    if redirect.op == ">&":
        if (redirect.fd, redirect.target) in ((2, "1"), (1, "2")):
            return None
        return _no("T0.redirection", f"{redirect.fd}>&{redirect.target} moves a stream the "
                   "gate does not follow")
    target = redirect.target
    if target == "/dev/null":
        return None
    if redirect.op != "<" and protected_write(target, ctx.cwd) is not None:
        why = protected_write(target, ctx.cwd)
        if is_device(target):
            return make_verdict("T0.raw_device_write", f"Refused: redirecting output onto "
                                f"{target[:40]!r} ({why}). Never allowed, even with approval.")
        return _no("T0.protected_write", f"the output would be written to {target[:60]!r}, "
                   f"{why}")
    if credential_path(target.lower()):
        return _no("T0.credential_store", f"{target[:60]!r} is a credential store")
    if ctx.data_dir is None or ".." in Path(target).parts or resolve_under(
            target, ctx.data_dir, ctx.cwd) is None:
        where = "read from" if redirect.op == "<" else "written to"
        return _no("T0.redirection", f"{target[:60]!r} would be {where} outside Ghost's data "
                   "directory (give the file as an argument, or send the output to the data "
                   "directory)")
    return None


def _filter_stage(stage: Stage, ctx: Context) -> Verdict | None:
    argv = stage.argv
    program = argv[0]
    if any(set(w.patterns) & set("*?[") for w in stage.words[1:]) and program not in (
            "grep", "egrep", "fgrep", "jq", "tr", "sed", "cut"):
        return _no("T0.not_literal", f"'{program}' after a pipe is given an unquoted pattern")
    if program == "tee":
        files = [w for w in argv[1:] if not w.startswith("-")]
        for name in files:
            if ctx.data_dir is None or ".." in Path(name).parts or resolve_under(
                    name, ctx.data_dir, ctx.cwd) is None:
                return _no("T0.redirection", f"tee would write {name[:60]!r} outside Ghost's "
                           "data directory")
        return None
    problem = filter_problem(argv)
    if problem is None:
        return None
    if program not in programs.FILTERS:
        if programs.runs_programs(program) or program in ("awk", "sed", "xargs"):
            why = f"'{program}', which runs what it reads (the data becomes a program)"
        elif programs.known(program):
            why = f"'{program}', which is not a text filter"
        else:
            why = f"'{program}', which the gate does not know"
        return _no("T0.interpreting_pipe", f"the pipe feeds {why}; only text filters (grep, "
                   "head, tail, sort, uniq, wc, cut, tr, jq, column) may follow a pipe")
    return _no("T0.interpreting_pipe", f"{problem}; only plain text filters may follow a pipe")


def judge_shape(shape: Shape, first: Verdict, ctx: Context) -> Verdict:
    """A pipeline or a redirected command whose first stage the gate has judged as `first`."""
    if first.classification == "FORBIDDEN":
        return first
    if first.rule == "T3.unknown_program" and len(shape.stages) > 1:
        return _no("T0.not_understood", f"{shape.stages[0].argv[0]!r} is not known to the gate, "
                   "and an unknown program is offered only as one simple command")
    for stage in shape.stages:
        for redirect in stage.redirects:
            found = _redirect_problem(redirect, ctx)
            if found is not None:
                return found
    for stage in shape.stages[1:]:
        found = _filter_stage(stage, ctx)
        if found is not None:
            return found
    names = " | ".join(s.argv[0] for s in shape.stages)
    return make_verdict("T3.pipeline", f"{names}: one command into text filters (or output "
                        "into Ghost's data directory); an engineer must approve it.")
