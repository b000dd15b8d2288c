"""A process that dies at a named point, and the process that takes its investigation over.

``Dying`` is the real store with one armed point: when the engine, the shell or the
orchestrator reaches it, :class:`Killed` is raised there. It derives from ``BaseException``, so
nothing on the way out catches it; the open transaction is rolled back, exactly what a kill -9
does to it, and no later line of the "dead" process runs. ``take_over`` is what the next holder
does (``Worker._work``): close commands left running, then advance, approving each request.
The brain answers by position in the conversation, so the new holder gets the reply the dead
one would have got, and every request it receives is checked the way Gemini checks it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.engine.brain import ModelReply
from core.engine.loop import Engine, Outcome
from core.engine.recovery import history_problem
from core.orchestrator import CloudOrchestrator, OrchestratorConfig
from core.safety.approval import ApprovalRequest, Decision
from core.safety.executor import ExecResult
from core.safety.shell import SafeExecShell
from storage.store import Store


class Killed(BaseException):
    """The process died here (nothing catches a BaseException on the way out)."""


class Later:
    """A chat approver: the decision comes later, from a click."""

    decides_immediately = False

    def request(self, request: ApprovalRequest) -> Decision | None:
        return None


class Dying(Store):
    """The store of a process that dies at ``point`` (once)."""

    point: str | None = None
    #: how to die: raise Killed (in-process) or os._exit (a forked child)
    hard: bool = False

    def _die(self, point: str) -> None:
        if self.point == point:
            self.point = None
            if self.hard:
                os._exit(137)
            raise Killed(point)

    def append_audit(self, session_id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
        kind = entry.get("kind")
        if kind == "command_started":
            self._die("before_start")
        elif kind == "command" and entry.get("ref_audit_id") and \
                entry.get("error") != "interrupted":
            self._die("before_outcome_record")
        record = super().append_audit(session_id, entry)
        if kind == "command" and entry.get("ref_audit_id"):
            self._die("after_outcome_record")
        if kind == "approval" and entry.get("status") == "requested":
            self._die("after_request")  # stored and audited; the engine has not saved it
        return record

    def create_approval(self, session_id: str, **values: Any) -> Any:
        self._die("before_request")
        approval = super().create_approval(session_id, **values)
        self._die("after_request")  # the row and its `requested` record are one transaction
        return approval

    def start_approved_command(self, approval_id: str, expected_version: int,
                               started: Mapping[str, Any]) -> Any:
        self._die("before_start")
        if self.point == "inside_claim":  # after the UPDATE, before the commit
            clock = self.clock

            def dying_clock() -> datetime:
                self.clock = clock
                self._die("inside_claim")
                return clock()

            self.clock = dying_clock
        return super().start_approved_command(approval_id, expected_version, started)

    def transition_approval(self, approval_id: str, expected_version: int,
                            changes: Mapping[str, Any]) -> Any:
        if changes.get("status") == "executed":
            self._die("before_executed")
        return super().transition_approval(approval_id, expected_version, changes)

    def save_state(self, session_id: str, state: Any, **kw: Any) -> Any:
        engine = kw.get("engine_state") or {}
        pending = engine.get("pending") or {}
        if pending.get("responses") and pending.get("in_flight") is None:
            self._die("before_response_saved")
        if kw.get("rca_markdown"):
            self._die("before_rca_saved")
        return super().save_state(session_id, state, **kw)


class ScriptBrain:
    """Gemini as a pure function of the conversation: reply N to a history with N model turns.

    Every request is checked like Gemini checks it: a function call without exactly one
    response is a 400 (recorded in ``rejected``)."""

    model = "fake-model"

    def __init__(self, *replies: ModelReply) -> None:
        self.replies = list(replies)
        self.requests: list[list[dict[str, Any]]] = []
        self.rejected: list[str] = []

    def generate(self, *, system_prompt: str, tools: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]]) -> ModelReply:
        self.requests.append([dict(h) for h in history])
        problem = history_problem([{"content": h} for h in history])
        if problem:
            self.rejected.append(problem)
        return self.replies[sum(1 for h in history if h.get("role") == "model")]

    def responses(self, request: int = -1) -> list[dict[str, Any]]:
        last = self.requests[request][-1]
        return [p["functionResponse"]["response"] for p in last["parts"]
                if "functionResponse" in p]


class Runs:
    """The command runner: records each argv it runs (across "processes"), answers ``ok``;
    ``die_while_running`` kills the process in the middle of the next command."""

    def __init__(self, store: Dying) -> None:
        self.store = store
        self.argvs: list[str] = []
        self.die_while_running = False

    def __call__(self, argv: Sequence[str], timeout_s: float, max_bytes: int) -> ExecResult:
        self.argvs.append(" ".join(argv))
        if self.die_while_running:
            self.die_while_running = False
            if self.store.hard:
                os._exit(137)
            raise Killed("while_running")
        now = datetime.now(UTC)
        return ExecResult(0, f"output of {argv[0]}\n", "", False, 0, 0, 0, 0.01, now, now)


class Rig:
    """Engine, shell and (optionally) an orchestrator over one store, as one process has."""

    def __init__(self, store: Dying, tmp_path: Path, brain: Any, backend: Any = None,
                 *, real_commands: bool = False) -> None:
        self.store, self.tmp_path, self.brain, self.backend = store, tmp_path, brain, backend
        self.runs = Runs(store)
        #: None: the shell's own runner (real processes)
        self.runner: Callable[..., ExecResult] | None = None if real_commands else self.runs
        self.rca_files: list[str] = []
        (tmp_path / "captures").mkdir(exist_ok=True)

    def shell(self, sid: str) -> SafeExecShell:
        return SafeExecShell(sid, audit=self.store, approvals=self.store, approver=Later(),
                             data_dir=self.tmp_path, requested_by="alice",
                             runner=self.runner)

    def orchestrator(self, sid: str, shell: Any) -> CloudOrchestrator:
        assert self.backend is not None, "this rig has no capture backend"
        return CloudOrchestrator(
            shell=shell, backend=self.backend, tasks=self.store, session_id=sid,
            config=OrchestratorConfig(local_capture_dir=self.tmp_path / "captures",
                                      poll_burst_limit=0),
            sleep=lambda _s: None)

    def write_rca(self, name: str, text: str) -> str:
        if self.store.point == "writing_rca":
            self.store._die("writing_rca")
        path = self.tmp_path / name
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)  # atomic, as the real writer
        self.rca_files.append(name)
        return str(path)

    def engine(self) -> Engine:
        return Engine(store=self.store, brain=self.brain, shell_for=self.shell,
                      orchestrator_for=self.orchestrator, rca_writer=self.write_rca)

    def start(self, symptom: str = "web-01 cannot reach redis on 6379") -> str:
        sid = self.store.create_investigation(symptom=symptom, model="fake",
                                              audit_dir="./audit/").session_id
        self.engine().begin(sid, symptom)
        return sid

    def run(self, sid: str, *, approve_as: str = "bob", limit: int = 20) -> Outcome:
        """Advance as a worker does, approving every request as a second engineer."""
        engine = self.engine()
        for _ in range(limit):
            outcome = engine.advance(sid)
            if outcome.kind != "awaiting_approval":
                return outcome
            assert outcome.approval_id
            self.shell(sid).decide(outcome.approval_id, Decision.approve(approve_as))
        raise AssertionError("the investigation did not finish")

    def take_over(self, sid: str) -> Outcome:
        """The next holder (``Worker._work``): close what was left running, then advance."""
        self.shell(sid).recover_interrupted()
        return self.run(sid)
