"""Running one command the gate let through, and recording it.

The started record, the run itself (a program without a shell, ``cat`` of a data file, or a gated
SDK call), redaction and truncation of what it printed, and the outcome record. Split out of
``core.safety.shell`` because both the gate (SAFE commands) and the approval flow (approved ones)
run commands through this one path; :class:`CommandRun` is a base of
:class:`~core.safety.shell.SafeExecShell`, not used on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from core.engine.outcomes import meaning, sdk_meaning
from core.ports import AuditLog
from core.safety.executor import ExecError, ExecResult, Runner, run_argv
from core.safety.files import DataFileError, read_data_file
from core.safety.outcome import Outcome, child_environ, without_rc_files
from core.safety.pipeline_run import run_pipeline
from core.safety.redact import redact
from core.safety.responses import environment_of, response_from_record
from core.safety.shape import parse_shape
from core.safety.truncate import truncate
from core.safety.verdict import Verdict

#: An SDK call gated like a command: returns (exit_code, output, stderr).
CallFn = Callable[[], tuple[int, str, str]]


@dataclass(frozen=True)
class ShellLimits:
    """Bounds on one command: wall time and how much output is kept in memory."""

    timeout_s: float = 60.0
    max_output_bytes: int = 2_000_000
    max_lines: int = 200
    max_tokens: int = 4000


class CommandRun:
    """The command-running part of the shell: what it needs is set by ``SafeExecShell``."""

    session_id: str
    audit: AuditLog
    data_dir: Path
    limits: ShellLimits
    clock: Callable[[], datetime]
    env_allowlist: tuple[str, ...]
    #: runs the argv once the gate has let it through (the lab substitutes its own)
    runner: Runner

    def _run(
        self, command: str, reasoning: str, verdict: Verdict, *, action: str, actor: str,
        approval_id: str | None = None, call: CallFn | None = None,
        environment: str | None = None,
    ) -> dict[str, Any]:
        base = self._fields(command, reasoning, verdict, action=action, actor=actor,
                            approval_id=approval_id, call=call, environment=environment)
        started = self.audit.append_audit(self.session_id, self._started_entry(base))
        return self._execute_started(command, verdict, base, started, call)

    def _fields(
        self, command: str, reasoning: str, verdict: Verdict, *, action: str, actor: str,
        approval_id: str | None, call: CallFn | None, environment: str | None,
    ) -> dict[str, Any]:
        """What the started and the finished record of one command both say."""
        environment = environment or environment_of(command)
        base: dict[str, Any] = {
            "command": redact(command),
            "reasoning": reasoning,
            "classification": verdict.classification,
            "tier": verdict.tier,
            "rule": verdict.rule,
            "classifier_version": verdict.classifier_version,
            "action": action,
            "actor": actor,
            "environment": environment,
            "details": {"approval_id": approval_id} if approval_id else None,
        }
        if call is not None:  # no process runs: the command is the call's shell equivalent
            via = "sdk" if environment == "azure" else "ghost"  # Azure SDK, or Ghost itself
            base["details"] = {**(base["details"] or {}), "via": via}
        return base

    def _started_entry(self, base: Mapping[str, Any]) -> dict[str, Any]:
        return {**base, "kind": "command_started", "status": "executing",
                "started_at": self.clock().isoformat()}

    def _execute_started(self, command: str, verdict: Verdict, base: Mapping[str, Any],
                         started: Mapping[str, Any], call: CallFn | None) -> dict[str, Any]:
        """Run a command whose started record is stored, and record its outcome."""
        result = self._execute_call(call) if call else self._execute_argv(command, verdict)
        out = truncate(redact(result.stdout), max_lines=self.limits.max_lines,
                       max_tokens=self.limits.max_tokens)
        err = truncate(redact(result.stderr), max_lines=self.limits.max_lines,
                       max_tokens=self.limits.max_tokens)
        status, error = "completed", None
        if result.error:
            status, error = "error", result.error
        elif result.timed_out:
            status, error = "error", "timeout"
        metadata = {
            "truncation_applied": out.truncation_applied or err.truncation_applied,
            "output_lines": out.original_lines,
            "output_bytes": out.original_bytes,
            "bytes_dropped": result.output_bytes_dropped,
        }
        record = self.audit.append_audit(self.session_id, {
            **base, "kind": "command", "status": status, "error": error,
            "exit_code": result.exit_code, "output": out.text, "stderr": err.text,
            "started_at": started["started_at"], "finished_at": self.clock().isoformat(),
            "duration_ms": int(result.duration_s * 1000), "output_metadata": metadata,
            "ref_audit_id": started["audit_id"],
            "details": _with_meaning(base["details"], command, result, err.text),
        })
        return response_from_record(record)

    def _execute_call(self, call: CallFn) -> Outcome:
        start = self.clock()
        try:
            exit_code, output, stderr = call()
        except Exception as exc:  # noqa: BLE001 - an SDK failure is an outcome, not a crash
            return Outcome(None, "", f"{type(exc).__name__}: {exc}", False, "call_failed",
                            (self.clock() - start).total_seconds(), 0)
        return Outcome(exit_code, output, stderr, False, None,
                        (self.clock() - start).total_seconds(), 0)

    def _execute_argv(self, command: str, verdict: Verdict) -> Outcome:
        argv = verdict.argv
        if argv is None:
            shape = parse_shape(command) if verdict.rule == "T3.pipeline" else None
            if shape is None or shape.problem is not None or not shape.stages:
                return Outcome.failed(
                    "unsupported_syntax",
                    "Ghost runs one program, or one program piped into text filters, without "
                    "a shell: substitutions and chaining are not executed. Split it into "
                    "single commands.",
                )
            return run_pipeline(shape.stages, runner=self._first_stage,
                                filters=self._filter_stage, data_dir=self.data_dir,
                                timeout_s=self.limits.timeout_s,
                                max_output_bytes=self.limits.max_output_bytes)
        if argv[0] == "cat":
            return self._cat(argv)
        try:
            result = self.runner(without_rc_files(argv), self.limits.timeout_s,
                                 self.limits.max_output_bytes)
        except ExecError as exc:
            return Outcome.failed("command_not_found", str(exc))
        return Outcome.of(result)

    def _first_stage(self, argv: Sequence[str], timeout_s: float,
                     max_output_bytes: int) -> ExecResult:
        return self.runner(without_rc_files(tuple(argv)), timeout_s, max_output_bytes)

    def _filter_stage(self, argv: Sequence[str], data: bytes, timeout_s: float,
                      max_output_bytes: int) -> ExecResult:
        """A text filter after a pipe runs for real, on the previous stage's output."""
        return run_argv(argv, timeout_s=timeout_s, max_output_bytes=max_output_bytes,
                        env_allowlist=self.env_allowlist, environ=child_environ(),
                        stdin_data=data)

    def _run_argv(self, argv: Sequence[str], timeout_s: float,
                  max_output_bytes: int) -> ExecResult:
        """The production runner: the program itself, scrubbed environment, no shell."""
        return run_argv(argv, timeout_s=timeout_s, max_output_bytes=max_output_bytes,
                        env_allowlist=self.env_allowlist, environ=child_environ())

    def _cat(self, argv: tuple[str, ...]) -> Outcome:
        paths = [a for a in argv[1:] if a != "--"]
        if len(paths) != 1 or paths[0].startswith("-"):
            return Outcome.failed("unsupported_syntax", "cat reads exactly one file.")
        try:
            text = read_data_file(paths[0], self.data_dir,
                                  max_bytes=self.limits.max_output_bytes)
        except DataFileError as exc:
            return Outcome.failed("file_not_permitted", str(exc))
        return Outcome(exit_code=0, stdout=text, stderr="", timed_out=False, error=None,
                        duration_s=0.0, output_bytes_dropped=0)

    def _recorded(self, audit_id: str) -> dict[str, Any]:
        for record in self.audit.audit_records(self.session_id):
            if record.get("audit_id") == audit_id:
                return response_from_record(record)
        raise KeyError(f"audit record {audit_id} is missing")


def _with_meaning(details: dict[str, Any] | None, command: str, result: Outcome,
                  err: str) -> dict[str, Any] | None:
    """What the answer meant (DNS rcode, packet loss, HTTP status…), beside the exit code."""
    via = (details or {}).get("via")
    said = (sdk_meaning(result.exit_code, err) if via == "sdk"
            else None if via else meaning(command, result.exit_code, result.stdout,
                                          result.stderr))
    return {**(details or {}), "meaning": redact(said)} if said else details
