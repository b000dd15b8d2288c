"""The tool-use loop of ghost-design §4 as a resumable state machine (DESIGN.md).

``Engine.advance(sid)`` moves an investigation forward one durable step at a time and returns
as soon as it needs a human (an approval, a Continue/Done answer, the turn limit) or is finished.
Everything is saved after every step, so any process can call ``advance`` again later — after a
button click, a restart, or Ctrl-C — and the investigation continues where it stopped.

Phases (``engine_state["phase"]``): ``call_model`` → ``dispatch`` (one call at a time; may wait
for an approval) → back to ``call_model``; ``awaiting_user`` after a text-only answer;
``turn_limit``; ``rca`` → ``done``.

Every save is a compare-and-set on the investigation's version as this step read it: a process
that stalled past its lease (a database outage, a slow Gemini call) while another took the
investigation over gets :class:`StepSuperseded` and writes nothing, so two holders never
interleave their turns (a model turn stored over another's unanswered calls). What a taken-over
half-finished turn becomes is in ``core/engine/recovery.py``.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from core.engine import hypotheses as hyp
from core.engine.brain import Brain, BrainError, ModelReply
from core.engine.history import rebuild, stored_response, user_text
from core.engine.ports import EngineStore, Notifier, NullNotifier, Orchestrator, Shell
from core.engine.prompt import build_system_prompt
from core.engine.recovery import (
    check_history,
    close_dangling,
    recover_in_flight,
    unanswered_task,
)
from core.engine.tools import TOOL_DECLARATIONS
from core.engine.usage import recorded, usage_line
from core.errors import ConcurrentUpdate, GhostError
from core.session_state import iso_utc, utc_now

MAX_LOOP_TURNS = 50
EXTEND_BY = 10
PENDING = "pending_approval"
ORCHESTRATOR_TOOLS = ("capture_traffic", "check_task", "cancel_task", "cleanup_task")


class BrainUnavailable(GhostError):
    """Gemini could not answer after retries; the investigation is saved and can resume."""


class ModelUnavailable(GhostError):
    """Gemini is in a transient outage and the next try is more than a short wait away: the
    step is handed back as saved (nothing of the turn was stored), to be tried again in
    ``retry_in`` seconds by whichever worker claims it then; the worker's thread is free
    meanwhile for other investigations' work."""

    def __init__(self, message: str, *, retry_in: float) -> None:
        super().__init__(message, "Nothing to do: Ghost asks again by itself.")
        self.retry_in = retry_in


@dataclass(frozen=True)
class OutagePolicy:
    """How a transient Gemini outage (429, 5xx, timeouts) is waited out.

    Tries go on with a backoff (``first_wait_s``, doubling, at most ``max_wait_s``) until
    ``limit_s`` after the first failure (GHOST_GEMINI_OUTAGE_S, 10 minutes by default); then the
    investigation is parked, where it was, for a person to resume. A wait longer than
    ``inline_s`` is not slept in the caller's thread but handed back (:class:`ModelUnavailable`):
    a chat worker serves other investigations meanwhile; the terminal waits in place."""

    limit_s: float = 600.0
    first_wait_s: float = 2.0
    max_wait_s: float = 30.0
    inline_s: float = math.inf

    def wait(self, attempts: int, left_s: float) -> float:
        """Seconds before the try after ``attempts`` failed ones, never past the deadline."""
        step = min(self.first_wait_s * 2.0 ** max(attempts - 1, 0), self.max_wait_s)
        return max(0.0, min(step, left_s))


class CorruptedState(GhostError):
    """The stored session document cannot be read; nothing is run on a guess."""


class StepSuperseded(ConcurrentUpdate):
    """Another process advanced the investigation while this one worked on a step (its lease
    lapsed): nothing of this step was saved, and this process must let the investigation go."""


@dataclass
class _Held:
    """The version of the investigation this process last read or wrote."""

    session_id: str
    version: int


@dataclass(frozen=True)
class Outcome:
    """Why ``advance`` stopped."""

    kind: str  # awaiting_approval | awaiting_user | turn_limit | completed | parked
    text: str = ""
    approval_id: str | None = None
    rca_markdown: str | None = None
    rca_path: str | None = None
    rca_error: str | None = None
    #: the investigation had finished before this call: nothing was written now
    already_done: bool = False


def new_engine_state(*, started_at: datetime) -> dict[str, Any]:
    return {"phase": "call_model", "max_turns": MAX_LOOP_TURNS, "pending": None,
            "completion": None, "integrity_warning": None, "started_at": iso_utc(started_at),
            "last_text": ""}


RcaBuilder = Callable[..., Any]


class Engine:
    """One engine serves many investigations; tools are built per investigation."""

    def __init__(
        self,
        *,
        store: EngineStore,
        brain: Brain,
        shell_for: Callable[[str], Shell],
        orchestrator_for: Callable[[str, Shell], Orchestrator],
        rca_writer: Callable[[str, str], str],
        notifier: Notifier | None = None,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = lambda _s: None,
        retries: int = 3,
        audit_dir: str = "./audit/",
        prices: str | None = None,
        data_dir: str | None = None,
        outage: OutagePolicy | None = None,
    ) -> None:
        self.store = store
        self.brain = brain
        self.shell_for = shell_for
        self.orchestrator_for = orchestrator_for
        self.rca_writer = rca_writer
        self.notifier: Notifier = notifier or NullNotifier()
        self.clock = clock
        self.sleep = sleep
        #: kept for callers that count attempts; an outage is bounded by time (``outage``)
        self.retries = retries
        self.outage = outage or OutagePolicy()
        self.audit_dir = audit_dir
        #: Ghost's data directory: where the prompt tells the model to download flow-log blobs
        #: (the gate lets downloads and analyses write there without approval)
        self.data_dir = data_dir
        self.prices = prices  # GHOST_PRICES, for the RCA's Cost line (core/engine/usage.py)

    # ------------------------------------------------------------------ commands
    def begin(self, session_id: str, symptom: str) -> None:
        """Store the symptom as the first user turn and set the loop going."""
        inv = self.store.get_investigation(session_id)
        engine = inv.engine_state or new_engine_state(started_at=self.clock())
        self._save(_held(inv), inv.state, engine, status="running",
                   turns=[("user", user_text(symptom))])

    def instruct(self, session_id: str, text: str) -> None:
        """Continue after a text-only answer, with the engineer's instruction."""
        inv = self.store.get_investigation(session_id)
        engine = self._engine(inv)
        if engine["phase"] not in ("awaiting_user", "call_model"):
            raise GhostError(f"Investigation {session_id} is not waiting for an instruction.")
        engine["phase"] = "call_model"
        self._save(_held(inv), inv.state, engine, status="running",
                   turns=[("user", user_text(text or "Continue."))])

    def finish(self, session_id: str) -> None:
        """Done (after a text answer) or Generate RCA (at the turn limit)."""
        inv = self.store.get_investigation(session_id)
        engine = self._engine(inv)
        engine["phase"] = "rca"
        self._save(_held(inv), inv.state, engine, status="running")

    def extend(self, session_id: str, turns: int = EXTEND_BY) -> None:
        inv = self.store.get_investigation(session_id)
        engine = self._engine(inv)
        engine["max_turns"] = int(engine["max_turns"]) + turns
        engine["phase"] = "call_model"
        self._save(_held(inv), inv.state, engine, status="running")

    def mark_resumed(self, session_id: str, *, integrity_warning: str | None = None) -> None:
        """``--resume``: set ``is_resume`` and close commands a crash left running.

        Ghost resumes an investigation in place, so ``resumed_from`` names the session it
        continues (itself; a Fresh start after a corrupted state names the old one instead).
        """
        inv = self.store.get_investigation(session_id)
        state = dict(inv.state)
        state["is_resume"] = True
        state["resumed_from"] = state.get("resumed_from") or session_id
        engine = self._engine(inv)
        if integrity_warning:
            engine["integrity_warning"] = integrity_warning
        engine.pop("outage", None)  # a resumed investigation waits out a new outage afresh
        self.shell_for(session_id).recover_interrupted()
        self._save(_held(inv), state, engine)

    # ------------------------------------------------------------------ the loop
    def advance(self, session_id: str) -> Outcome:
        """Run until a human is needed or the investigation is finished."""
        while True:
            inv = self.store.get_investigation(session_id)
            broken = getattr(inv, "corrupted", None)
            if broken:
                raise CorruptedState(
                    f"Investigation {session_id}: its saved state is corrupted ({broken}).",
                    f"Run `ghost investigate --resume {session_id}` and choose Fresh.")
            state = dict(inv.state)
            engine = self._engine(inv)
            phase = engine["phase"]
            held = _held(inv)
            if phase == "call_model":
                if int(state["turn_count"]) >= int(engine["max_turns"]):
                    engine["phase"] = "turn_limit"
                    self._save(held, state, engine, status="awaiting_user")
                    return Outcome("turn_limit")
                parked = self._call_model(held, state, engine)
                if parked is not None:
                    return parked
            elif phase == "dispatch":
                stop = self._dispatch_next(held, state, engine)
                if stop is not None:
                    return stop
            elif phase == "awaiting_user":
                return Outcome("awaiting_user", text=str(engine.get("last_text") or ""))
            elif phase == "turn_limit":
                return Outcome("turn_limit")
            elif phase == "rca":
                return self._generate_rca(held, state, engine)
            else:  # done (a holder may have died before closing what was left open)
                self._close_dangling(session_id)
                return Outcome("completed", rca_markdown=None,
                               rca_path=state.get("rca_report_path"), already_done=True)

    # ------------------------------------------------------------------ steps
    def _call_model(self, held: _Held, state: dict[str, Any],
                    engine: dict[str, Any]) -> Outcome | None:
        """One model turn, stored with the state that records it; an :class:`Outcome`
        (``parked``) only when Gemini stayed unavailable past the outage limit."""
        sid = held.session_id
        records = self.store.audit_records(sid)
        turns = self.store.turns(sid)
        check_history(sid, turns)  # every call answered exactly once, or nothing is sent
        history = rebuild(turns, records)
        prompt = build_system_prompt(is_resume=bool(state.get("is_resume")),
                                     audit_dir=str(state.get("audit_dir") or self.audit_dir),
                                     data_dir=self.data_dir)
        reply = self._generate(prompt, history, held, state, engine)
        if reply is None:
            return Outcome("parked", text=str((engine.get("outage") or {}).get("error") or ""))
        engine.pop("outage", None)  # Gemini answered: the outage, if any, is over
        state["turn_count"] = int(state["turn_count"]) + 1
        if reply.usage:  # Gemini's usageMetadata per model call, saved with the turn
            engine["usage"] = [*(engine.get("usage") or []),
                               {"turn": state["turn_count"], "model": str(self.brain.model),
                                **reply.usage}]
        now = iso_utc(self.clock())
        known = command_audit_ids(records)
        hyp.apply_text(state, reply.text, now, known)
        for call in reply.function_calls:
            reported = call.args.get("hypotheses")
            if isinstance(reported, list):
                hyp.apply_reported(state, reported, now, known)
        # the model turn and the state that says it arrived are one transaction: a crash
        # between two saves would send the same turn to Gemini again on resume
        turn = [("model", reply.content)]
        if not reply.function_calls:
            engine["phase"] = "awaiting_user"
            engine["last_text"] = reply.text
            self._save(held, state, engine, status="awaiting_user", turns=turn)
        else:
            engine["phase"] = "dispatch"
            engine["pending"] = {
                "calls": [{"name": c.name, "args": c.args, "id": c.id}
                          for c in reply.function_calls],
                "responses": [],
                "waiting": None,
            }
            self._save(held, state, engine, turns=turn)
        if reply.text:
            self.notifier.model_text(sid, reply.text)
        return None

    def _generate(self, prompt: str, history: list[dict[str, Any]], held: _Held,
                  state: dict[str, Any], engine: dict[str, Any]) -> ModelReply | None:
        """Gemini's answer. A refusal for good (400: a bad key, a rejected history) raises
        :class:`BrainUnavailable` at once. A transient failure starts (or continues) an
        outage, recorded in ``engine_state.outage`` (since, until, attempts): the front end
        is told once (``notifier.model_outage``), and Ghost tries again with a backoff until
        ``until``; a long wait is handed back (:class:`ModelUnavailable`) so the next holder
        goes on with the same deadline. Past the deadline the investigation is saved as
        ``parked`` and None is returned. Nothing of the turn is stored before Gemini answers,
        so every try is the same request and no tool call is ever made twice."""
        sid = held.session_id
        while True:
            try:
                return self.brain.generate(system_prompt=prompt, tools=TOOL_DECLARATIONS,
                                           history=history)
            except BrainError as exc:
                if not exc.transient:
                    raise BrainUnavailable(
                        str(exc), "The investigation is saved; resume it once that is fixed.",
                    ) from exc
                now = self.clock()
                outage = dict(engine.get("outage") or {})
                first = not outage
                if first:
                    outage = {"since": iso_utc(now), "until": iso_utc(
                        now + timedelta(seconds=self.outage.limit_s)), "attempts": 0}
                outage["attempts"] = int(outage.get("attempts") or 0) + 1
                outage["error"] = str(exc)[:500]
                engine["outage"] = outage
                until = _moment(str(outage["until"]))
                if now >= until:
                    outage["parked_at"] = iso_utc(now)
                    self._save(held, state, engine, status="parked")
                    return None
                if first:  # durable before the front end is told: told once per outage
                    self._save(held, state, engine)
                    tell = getattr(self.notifier, "model_outage", None)
                    if callable(tell):  # a front end that predates outages shows nothing
                        tell(sid, str(exc), until)
                wait = self.outage.wait(int(outage["attempts"]),
                                        (until - now).total_seconds())
                if wait > self.outage.inline_s:
                    if not first:
                        self._save(held, state, engine)  # the attempts so far
                    raise ModelUnavailable(
                        f"Gemini is unavailable for {sid} ({exc}); asking again in "
                        f"{wait:.0f}s, until {until:%H:%M:%S} UTC.", retry_in=wait) from exc
                self.sleep(wait)

    def _dispatch_next(self, held: _Held, state: dict[str, Any],
                       engine: dict[str, Any]) -> Outcome | None:
        sid = held.session_id
        pending = engine["pending"]
        calls: list[dict[str, Any]] = pending["calls"]
        index = len(pending["responses"])
        if index >= len(calls):
            engine["pending"] = None
            engine["phase"] = "call_model"
            self._save(held, state, engine, status="running",
                       turns=[("user", {"role": "user", "parts": pending["responses"]})])
            return None
        call = calls[index]
        name, args = call["name"], dict(call.get("args") or {})
        if name == "complete_investigation":
            # the final word: its lists resolve the log before the RCA is written; the calls
            # after it in the same turn are dropped (ghost-design §4: GOTO RCA_GENERATION)
            engine["completion"] = args
            engine["completion_notes"] = hyp.apply_completion(state, args,
                                                              iso_utc(self.clock()))
            engine["dropped_calls"] = [c["name"] for c in calls[index + 1:]]
            engine["pending"] = None
            engine["phase"] = "rca"
            self._save(held, state, engine)
            return None
        waiting = pending.get("waiting")
        recovered = None
        if pending.get("in_flight"):  # the last holder stopped while this call was in flight
            shell = self.shell_for(sid)
            recovered = recover_in_flight(self.store, sid, shell,
                                          lambda: self.orchestrator_for(sid, shell), pending)
        if recovered is not None and recovered.get("status") == PENDING:
            waiting, recovered = {"approval_id": recovered.get("approval_id"),
                                  "task_id": recovered.get("task_id")}, None
        if recovered is not None:
            result = recovered
        else:
            # a durable mark before the tool runs (also the claim of this step: a holder that
            # lost the investigation fails here, before it runs anything): after a crash the
            # tool's outcome is found in the logs and it is not run twice
            pending["in_flight"] = {"index": index,
                                    "audit_count": len(self.store.audit_records(sid))}
            if name == "capture_traffic" and not waiting:
                pending["in_flight"]["task_count"] = len(self.store.task_events(sid))
            self._save(held, state, engine)
            result = self._run_tool(sid, name, args, waiting)
        pending["in_flight"] = None
        gated = result.get("waiting_for_approval")
        if result.get("status") == PENDING or isinstance(gated, Mapping):
            approval_id = result.get("approval_id") or (gated or {}).get("approval_id")
            pending["waiting"] = {"approval_id": approval_id, "task_id": result.get("task_id")}
            self._save(held, state, engine, status="awaiting_approval")
            self.notifier.approval_pending(sid, name, args, result)
            return Outcome("awaiting_approval", approval_id=approval_id)
        meta = self._meta_for(state, name, args, result)
        if name in ORCHESTRATOR_TOOLS:
            track_tasks(state, result)
        shown = result | ({"_meta": meta} if meta else {})
        if name == "run_shell_cmd" and result.get("audit_id"):
            shown |= meaning_of(self.store.audit_records(sid), str(result["audit_id"]))
        self.notifier.tool_result(sid, name, args, shown)
        pending["responses"].append(stored_response(name, call.get("id"), result, meta))
        pending["waiting"] = None
        self._save(held, state, engine, status="running")
        return None

    def _run_tool(self, sid: str, name: str, args: Mapping[str, Any],
                  waiting: Mapping[str, Any] | None) -> dict[str, Any]:
        shell = self.shell_for(sid)
        if name == "run_shell_cmd":
            if waiting and waiting.get("approval_id"):
                return shell.resume(str(waiting["approval_id"]))
            return shell.execute({"command": str(args.get("command") or ""),
                                  "reasoning": str(args.get("reasoning") or "")})
        if name in ORCHESTRATOR_TOOLS:
            orchestrator = self.orchestrator_for(sid, shell)
            if waiting and waiting.get("task_id"):
                # the step that waited continues inside check_task once the decision is in
                return orchestrator.orchestrate({"intent": "check_task",
                                                 "task_id": waiting["task_id"]})
            adopted = (unanswered_task(self.store, sid, args.get("target"))
                       if name == "capture_traffic" else None)
            if adopted:  # a dead process created it for this very call: continue it
                return orchestrator.orchestrate({"intent": "check_task", "task_id": adopted})
            return orchestrator.orchestrate(orchestrator_request(name, args))
        return {"status": "error", "error": "unknown_tool", "tool": name,
                "message": f"There is no tool named {name!r}. The tools are: "
                           + ", ".join(d["name"] for d in TOOL_DECLARATIONS) + "."}

    def _meta_for(self, state: dict[str, Any], name: str, args: Mapping[str, Any],
                  result: Mapping[str, Any]) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if is_denial(result):
            meta = hyp.record_denial(
                state, turn=int(state["turn_count"]),
                command=str(result.get("denied_command") or args.get("command") or name),
                denial_reason=str(result.get("denial_reason") or "") or None,
                audit_id=result.get("audit_id"), now=iso_utc(self.clock()))
        else:
            hyp.record_success(state)
        if result.get("error") == "timeout":
            meta["timeout"] = True
        return meta

    def _generate_rca(self, held: _Held, state: dict[str, Any],
                      engine: dict[str, Any]) -> Outcome:
        from core.engine.rca import build_rca

        sid = held.session_id
        shell = self.shell_for(sid)

        def read_file(path: str) -> Mapping[str, Any]:
            return shell.execute({
                "command": f"cat {shlex.quote(path)}",
                "reasoning": "Read the forensic report's executive summary for the RCA.",
            })

        now = self.clock()
        started = engine.get("started_at")
        duration = None
        if started:  # whole seconds: the RCA and the closing banner show the same figure
            duration = round((now - datetime.fromisoformat(str(started).replace("Z", "+00:00"))
                              ).total_seconds())
        inv = self.store.get_investigation(sid)
        report = build_rca(state=state, audit_records=self.store.audit_records(sid),
                           task_events=self.store.task_events(sid),
                           completion=engine.get("completion"), read_file=read_file,
                           integrity_warning=engine.get("integrity_warning"),
                           generated_at=now, duration_s=duration,
                           symptom=inv.symptom, requested_by=inv.requested_by,
                           cost_line=usage_line(engine, self.prices, str(self.brain.model))
                           if recorded(engine) else None)
        error = None
        try:
            path: str | None = self.rca_writer(report.filename, report.markdown)
        except OSError as exc:
            path, error = None, f"{exc.strerror or exc}: {exc.filename or report.filename}"
        state["rca_report_path"] = path
        engine["phase"] = "done"
        engine["rca"] = {"confidence": report.confidence, "root_cause": report.root_cause,
                         "recommended_actions": list(report.recommended_actions),
                         "duration_s": duration}
        self._save(held, state, engine, status="completed", rca_markdown=report.markdown)
        self._close_dangling(sid)
        return Outcome("completed", rca_markdown=report.markdown, rca_path=path,
                       rca_error=error)

    def _close_dangling(self, sid: str) -> None:
        close_dangling(self.store, self.shell_for(sid), sid)

    # ------------------------------------------------------------------ helpers
    def _engine(self, inv: Any) -> dict[str, Any]:
        engine = inv.engine_state
        if not engine:
            engine = new_engine_state(started_at=self.clock())
        return dict(engine)

    def _save(self, held: _Held, state: dict[str, Any], engine: dict[str, Any], *,
              status: str | None = None, rca_markdown: str | None = None,
              turns: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> None:
        """Save the step, only if nobody saved this investigation since ``held`` read it."""
        sid = held.session_id
        try:
            saved = self.store.save_state(sid, state, expected_version=held.version,
                                          status=status, engine_state=engine,
                                          rca_markdown=rca_markdown, turns=turns)
        except ConcurrentUpdate as exc:
            raise StepSuperseded(
                f"Investigation {sid} was advanced by another process while this one worked "
                "on it; this process's step was dropped (nothing of it was saved).",
                "Nothing to do: the process that holds it now carries on.") from exc
        held.version = int(saved.version)
        self.notifier.state_changed(sid, state, engine)


def _held(inv: Any) -> _Held:
    return _Held(str(inv.session_id), int(inv.version))


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def command_audit_ids(records: list[dict[str, Any]]) -> set[str]:
    """The audit ids a hypothesis may cite: outcomes of commands and Azure calls that exist."""
    return {str(r["audit_id"]) for r in records
            if r.get("kind") == "command" and r.get("audit_id")}


def meaning_of(records: list[dict[str, Any]], audit_id: str) -> dict[str, Any]:
    """``{"meaning": …}`` recorded beside a command's exit code (DNS NXDOMAIN, HTTP 503…)."""
    for record in reversed(records):
        if record.get("audit_id") == audit_id:
            said = (record.get("details") or {}).get("meaning")
            return {"meaning": said} if said else {}
    return {}


#: task states after which nothing runs on Azure for a task any more
_FINISHED_TASK_STATES = ("DONE", "CANCELLED", "ABANDONED")


def track_tasks(state: dict[str, Any], result: Mapping[str, Any]) -> None:
    """``active_task_ids``: this investigation's tasks that still hold (or may hold) cloud
    resources, so that ``ghost session show`` lists running captures."""
    answers = [t for t in result.get("tasks") or [] if isinstance(t, Mapping)] or [result]
    active = list(state.get("active_task_ids") or [])
    for answer in answers:
        task_id = answer.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            continue
        if answer.get("state") in _FINISHED_TASK_STATES:
            active = [t for t in active if t != task_id]
        elif task_id not in active:
            active.append(task_id)
    state["active_task_ids"] = active


def is_denial(result: Mapping[str, Any]) -> bool:
    """A human said no (or the approver failed closed): counts against the hypotheses.

    A capture whose step an engineer denied ends ``task_cancelled`` with ``denied`` set by the
    orchestrator (only in the answer to the call in which the denial happened)."""
    if result.get("status") == "denied":
        return True
    return bool(result.get("status") == "task_cancelled" and result.get("denied"))


def orchestrator_request(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Map a tool call onto the orchestrator's request (ghost-design §4 dispatch)."""
    if name == "capture_traffic":
        return {
            "intent": "capture_traffic",
            "target": args.get("target"),
            "investigation_context": args.get("investigation_context", ""),
            "parameters": {
                "resource_group": args.get("resource_group"),
                "storage_account": args.get("storage_account"),
                "duration_seconds": args.get("duration_seconds", 60),
                # only when the model asked: the orchestrator uses the configured mode and
                # says so when the two differ
                **({"storage_auth_mode": args["storage_auth_mode"]}
                   if args.get("storage_auth_mode") else {}),
                # the account's group when the model names an account outside the VM's group
                **({"storage_resource_group": args["storage_resource_group"]}
                   if args.get("storage_resource_group") else {}),
            },
        }
    request: dict[str, Any] = {"intent": name, "task_id": args.get("task_id")}
    if name == "cancel_task" and args.get("reason"):
        request["reason"] = args["reason"]
    return request
