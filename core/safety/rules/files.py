"""cat and ghost-forensics (captures and flow logs): only files inside the data directory.

Paths are checked on their resolved real path (symlinks followed), and `..` is refused outright so
that a path never depends on what a directory happens to contain. Without a configured data
directory nothing file-based is SAFE.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from core.safety.options import OptionSpec, any_value, int_range, parse_options
from core.safety.paths import resolve_under
from core.safety.rules.base import Context, allowed, risky
from core.safety.tier0_classes import credential_path
from core.safety.verdict import Verdict, make_verdict


def _check_path(program: str, path: str, ctx: Context, argv: tuple[str, ...]) -> Verdict | None:
    if ctx.data_dir is None:
        return risky("T1.no_data_dir", argv, f"{program} reads or writes files, and no data "
                     "directory is configured to confine it; an engineer must approve.")
    if credential_path(path.lower()):
        return make_verdict("T0.credential_store", f"Refused (T0.credential_store): "
                            f"{path[:80]!r} is a credential store by its name, even inside the "
                            "data directory. This is never allowed, even with approval.", argv)
    if path in ("", "-") or ".." in Path(path).parts:
        return risky("T1.path_outside_data_dir", argv, f"{program}: path {path[:80]!r} uses "
                     "'..' or stdin; use a plain path inside the data directory.")
    if resolve_under(path, ctx.data_dir, ctx.cwd) is None:
        return risky("T1.path_outside_data_dir", argv, f"{program}: {path[:80]!r} resolves "
                     f"outside the data directory {ctx.data_dir}; only audit and capture files "
                     "may be read without approval.")
    return None


CAT = OptionSpec(program="cat", flags=frozenset({"-n", "-b", "-s", "-E", "-T", "-v", "-A"}),
                 aliases={"--number": "-n", "--number-nonblank": "-b",
                          "--squeeze-blank": "-s", "--show-ends": "-E", "--show-tabs": "-T",
                          "--show-nonprinting": "-v", "--show-all": "-A"})


def classify_cat(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = parse_options(CAT, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    if not parsed.positionals:
        return risky("T1.bad_target", argv, "cat needs a file path inside the data directory.")
    for path in parsed.positionals:
        bad = _check_path("cat", path, ctx, argv)
        if bad:
            return bad
    return allowed(argv, "read a file inside the data directory")


FORENSICS = OptionSpec(
    program="ghost-forensics",
    flags=frozenset({"--frame-flags", "--help", "--version"}),
    valued={"--semantic-dir": any_value, "--report-dir": any_value, "--compare": any_value,
            "--out": any_value, "--jobs": int_range(1, 256)},
    aliases={"-h": "--help"},
)


_ADDRESS_RE = re.compile(r"^[0-9A-Fa-f:.]{2,45}(/[0-9]{1,3})?$")
#: `--since`/`--until`: an ISO time or an age (`90m`, `1d6h`); only text for the analyser
_TIME_RE = re.compile(r"^[0-9][0-9A-Za-z:.+-]{0,39}$")


def _matching(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.match(value) is not None


FLOWLOGS = OptionSpec(
    program="ghost-forensics flowlogs",
    flags=frozenset({"--json", "--help"}),
    valued={"--src": _matching(_ADDRESS_RE), "--dst": _matching(_ADDRESS_RE),
            "--port": int_range(0, 65535), "--since": _matching(_TIME_RE),
            "--until": _matching(_TIME_RE), "--events": any_value, "--out": any_value,
            "--jobs": int_range(1, 256)},
    aliases={"-h": "--help"},
)


def classify_flowlogs(argv: tuple[str, ...], ctx: Context) -> Verdict:
    """`ghost-forensics flowlogs PATH... --out DIR`: blobs in, two files out, all in the data
    directory. Without `--out` the analyser writes into the current directory, which may lie
    anywhere, so `--out` is required; `--events` is read, so it is confined like a PATH."""
    parsed = parse_options(FLOWLOGS, list(argv[2:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    if parsed.has("--help"):
        if len(argv) == 3:
            return allowed(argv, "print help")
        return risky("T1.bad_value", argv, "ghost-forensics flowlogs --help takes no other "
                     "arguments.")
    if not parsed.positionals:
        return risky("T1.bad_target", argv, "ghost-forensics flowlogs needs the downloaded "
                     "blobs (files or folders) inside the data directory.")
    for name in ("--src", "--dst", "--port", "--since", "--until", "--events", "--jobs"):
        if len(parsed.values(name)) > 1:
            return risky("T1.bad_value", argv, f"ghost-forensics flowlogs takes at most one "
                         f"{name}.")
    if len(parsed.values("--out")) != 1:
        return risky("T1.bad_value", argv, "ghost-forensics flowlogs needs exactly one --out "
                     "inside the data directory (without it the two files go to the current "
                     "directory, which may be anywhere).")
    paths = parsed.positionals + parsed.values("--out") + parsed.values("--events")
    for path in paths:
        bad = _check_path("ghost-forensics flowlogs", path, ctx, argv)
        if bad:
            return bad
    return allowed(argv, "analyse flow-log blobs inside the data directory")


def classify_forensics(argv: tuple[str, ...], ctx: Context) -> Verdict:
    if len(argv) > 1 and argv[1] == "flowlogs":
        return classify_flowlogs(argv, ctx)
    parsed = parse_options(FORENSICS, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    if parsed.has("--help") or parsed.has("--version"):
        if len(argv) == 2:
            return allowed(argv, "print help")
        return risky("T1.bad_value", argv, "ghost-forensics --help/--version take no other "
                     "arguments.")
    if len(parsed.positionals) != 1:
        return risky("T1.bad_target", argv, "ghost-forensics takes exactly one capture file.")
    engine_form = [len(parsed.values(n)) for n in ("--semantic-dir", "--report-dir")]
    # the engine's form names both output directories; the engineer's form names one --out
    # (without it the files go to the current directory, which may lie anywhere): either
    # one, never a mix
    if engine_form != [1, 1] and (engine_form != [0, 0] or len(parsed.values("--out")) != 1):
        return risky("T1.bad_value", argv, "ghost-forensics needs exactly one --semantic-dir "
                     "and one --report-dir inside the data directory, or one --out there "
                     "(without any it writes into the current directory).")
    if engine_form == [1, 1] and parsed.has("--out"):
        return risky("T1.bad_value", argv, "ghost-forensics takes --out or --semantic-dir "
                     "and --report-dir, not both.")
    for name in ("--compare", "--jobs"):
        if len(parsed.values(name)) > 1:
            return risky("T1.bad_value", argv, f"ghost-forensics takes at most one {name}.")
    paths = parsed.positionals + [v for o, v in parsed.options
                                  if v is not None and o != "--jobs"]
    for path in paths:
        bad = _check_path("ghost-forensics", path, ctx, argv)
        if bad:
            return bad
    return allowed(argv, "analyse a capture inside the data directory")
