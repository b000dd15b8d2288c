"""Running an approved pipeline without a shell: stage by stage, each output bounded.

The gate offers a pipeline for approval only when its later stages are text filters and its
redirections stay in Ghost's data directory (`approvable.py`), so it can run without a shell:
the first command runs through the shell's runner (a real program, or the lab's answer), each
filter then runs as its own program with the previous stage's output on stdin (bounded by the
shell's output limit), `2>&1` joins a stage's errors to its output, `/dev/null` drops a stream,
`< FILE` reads a file of the data directory, and `> FILE` / `>> FILE` write the stage's output,
redacted, into the data directory. The exit code is the last stage's, as in a shell.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from core.safety.executor import ExecError, ExecResult, Runner
from core.safety.files import DataFileError, read_data_file
from core.safety.outcome import Outcome
from core.safety.paths import resolve_under
from core.safety.redact import redact
from core.safety.shape import Redirect, Stage

#: runs one filter stage: (argv, stdin bytes, timeout, max output bytes) -> result
FilterRunner = Callable[[Sequence[str], bytes, float, int], ExecResult]


def _input_of(stage: Stage, data_dir: Path, max_bytes: int) -> bytes | None:
    for redirect in stage.redirects:
        if redirect.op == "<" and redirect.target != "/dev/null":
            return read_data_file(redirect.target, data_dir, max_bytes=max_bytes).encode()
        if redirect.op == "<":
            return b""
    return None


def _apply_outputs(redirects: Sequence[Redirect], out: str, err: str,
                   data_dir: Path) -> tuple[str, str]:
    """The stage's stdout and stderr after its redirections (files written, redacted)."""
    for redirect in redirects:
        if redirect.op == ">&":
            if redirect.fd == 2:
                out, err = out + err, ""
            else:
                err, out = err + out, ""
            continue
        if redirect.op == "<":
            continue
        text = out if redirect.fd == 1 else err
        if redirect.target != "/dev/null":
            path = resolve_under(redirect.target, data_dir)
            if path is None:  # classified inside; refuse anything that changed since
                raise DataFileError(f"{redirect.target}: outside the data directory")
            mode = "a" if redirect.op == ">>" else "w"
            with path.open(mode, encoding="utf-8") as handle:
                handle.write(redact(text))
        if redirect.fd == 1:
            out = ""
        else:
            err = ""
    return out, err


def run_pipeline(stages: Sequence[Stage], *, runner: Runner, filters: FilterRunner,
                 data_dir: Path, timeout_s: float, max_output_bytes: int) -> Outcome:
    """Run an approved pipeline; see the module docstring."""
    deadline = time.monotonic() + timeout_s
    begun = time.monotonic()
    errors: list[str] = []
    dropped = 0
    out = ""
    code: int | None = 0
    for index, stage in enumerate(stages):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return Outcome(None, out, "".join(errors), True, None,
                           time.monotonic() - begun, dropped)
        try:
            given = _input_of(stage, data_dir, max_output_bytes)
            if index == 0 and given is None:
                result = runner(stage.argv, remaining, max_output_bytes)
            else:
                feed = given if given is not None else out.encode()
                result = filters(stage.argv, feed, remaining, max_output_bytes)
        except ExecError as exc:
            return Outcome.failed("command_not_found", f"{stage.argv[0]}: {exc}")
        except DataFileError as exc:
            return Outcome.failed("file_not_permitted", str(exc))
        dropped += result.output_bytes_dropped
        try:
            out, err = _apply_outputs(stage.redirects, result.stdout, result.stderr, data_dir)
        except (DataFileError, OSError) as exc:
            return Outcome.failed("file_not_permitted", str(exc))
        if err:
            errors.append(err if len(stages) == 1 else f"[{stage.argv[0]}] {err}")
        code = result.exit_code
        if result.timed_out:
            return Outcome(None, out, "".join(errors), True, None,
                           time.monotonic() - begun, dropped)
    return Outcome(code, out, "".join(errors), False, None, time.monotonic() - begun, dropped)
