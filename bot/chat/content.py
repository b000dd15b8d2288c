"""What Ghost posts, as plain data with wording for an on-call engineer at 3 a.m.

Front ends render these into Block Kit or Adaptive Cards; user ids stay raw here (each platform
has its own mention syntax). Text may contain `code spans`, which both platforms display.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from core.safety.approval import ApprovalPolicy

PHASES = {
    "queued": "Queued — a worker will pick it up in a moment",
    "running": "Investigating",
    "awaiting_approval": "Waiting for an approval",
    "awaiting_user": "Waiting for you: Continue or Done",
    "completed": "Finished — RCA posted below",
    "cancelled": "Cancelled",
    "failed": "Stopped on an error — see the thread",
}


class InvestigationLike(Protocol):
    @property
    def session_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def symptom(self) -> str: ...
    @property
    def requested_by(self) -> str | None: ...
    @property
    def state(self) -> dict[str, Any]: ...
    @property
    def engine_state(self) -> dict[str, Any] | None: ...


class ApprovalLike(Protocol):
    @property
    def approval_id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def classification(self) -> str: ...
    @property
    def tier(self) -> int | None: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def reasoning(self) -> str: ...
    @property
    def environment(self) -> str: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def decided_by(self) -> str | None: ...
    @property
    def decided_at(self) -> datetime | None: ...
    @property
    def denial_reason(self) -> str | None: ...
    @property
    def modified_by(self) -> str | None: ...
    @property
    def replaces_approval_id(self) -> str | None: ...
    @property
    def context(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Hypothesis:
    id: str
    description: str
    state: str


@dataclass(frozen=True)
class StatusView:
    """The one status message per investigation, edited in place."""

    session_id: str
    symptom: str
    requested_by: str | None
    status: str
    phase: str
    turn: int
    max_turns: int
    hypotheses: tuple[Hypothesis, ...] = ()
    tasks: tuple[str, ...] = ()
    denials: int = 0
    #: captures' progress (task id, state, polls), from ``capture_lines``
    captures: tuple[str, ...] = ()
    #: tokens, estimated cost and time so far (core.engine.usage.status_usage), when the
    #: model reported usage
    usage: str = ""

    def fingerprint(self) -> str:
        """Equal fingerprints mean an edit would change nothing (so none is sent)."""
        return repr(self)


def status_view(inv: InvestigationLike) -> StatusView:
    state, engine = inv.state, inv.engine_state or {}
    hyps = tuple(Hypothesis(str(h.get("id")), str(h.get("description") or ""),
                            str(h.get("state") or ""))
                 for h in state.get("hypothesis_log") or [] if isinstance(h, Mapping))
    denials = sum(int(v) for v in (state.get("denial_tracker") or {}).values()
                  if isinstance(v, int))
    return StatusView(
        session_id=inv.session_id, symptom=inv.symptom, requested_by=inv.requested_by,
        status=inv.status, phase=PHASES.get(inv.status, inv.status),
        turn=int(state.get("turn_count") or 0), max_turns=int(engine.get("max_turns") or 50),
        hypotheses=hyps, tasks=tuple(str(t) for t in state.get("active_task_ids") or []),
        denials=denials, usage=_usage(engine),
    )


def _usage(engine: Mapping[str, Any]) -> str:
    """Tokens, estimated cost (GHOST_PRICES) and time so far, when the model reported usage."""
    from core.engine.usage import recorded, status_usage
    from core.session_state import utc_now

    if not recorded(engine):
        return ""
    from bot.settings import load_settings

    return status_usage(engine, load_settings().prices, utc_now())


@dataclass(frozen=True)
class ApprovalCard:
    """A RISKY command waiting for a human."""

    approval_id: str
    session_id: str
    command: str
    classification: str
    tier: int | None
    rule: str | None
    risk: str
    reasoning: str
    environment: str
    investigation_requester: str | None
    modified_by: str | None
    needed: str
    expires_at: datetime | None


def approvals_needed(policy: ApprovalPolicy, requester: str | None,
                     modified_by: str | None) -> str:
    """Who can approve this, in one sentence."""
    who = ("one of the configured Ghost approvers" if policy.approvers
           else "any member of this channel")
    if not policy.two_person:
        return f"1 approval from {who}."
    excluded = [name for name, user in (("the requester", requester),
                                        ("the editor", modified_by)) if user]
    if requester and modified_by == requester:
        excluded = ["the requester (who also edited it)"]
    return f"1 approval from {who}, other than {' and '.join(excluded)}." if excluded else \
        f"1 approval from {who}."


def approval_card(approval: ApprovalLike, inv: InvestigationLike,
                  policy: ApprovalPolicy) -> ApprovalCard:
    return ApprovalCard(
        approval_id=approval.approval_id, session_id=approval.session_id,
        command=approval.command, classification=approval.classification, tier=approval.tier,
        rule=approval.rule, risk=str((approval.context or {}).get("reason") or ""),
        reasoning=approval.reasoning, environment=approval.environment,
        investigation_requester=inv.requested_by, modified_by=approval.modified_by,
        needed=approvals_needed(policy, inv.requested_by, approval.modified_by),
        expires_at=approval.expires_at,
    )


@dataclass(frozen=True)
class DecisionOutcome:
    """What replaces a card's buttons once it is decided, for everyone."""

    result: str  # approved | denied | modified | expired | abandoned | blocked
    actor: str | None
    at: datetime | None
    reason: str | None = None
    new_command: str | None = None
    #: the approval's own status where it says more than ``result`` (executed: it ran)
    stage: str | None = None
    #: a refused edit: the command the editor typed (redacted), shown on the card
    blocked_command: str | None = None
    #: once the approved command ran: its exit code, or what stopped it (``ran_outcome``)
    exit_code: int | None = None
    run_failure: str | None = None

    def _ran(self) -> str:
        """How far an approved command got, for the title."""
        if self.run_failure:
            return f"failed ({self.run_failure})"
        if self.stage == "executed":
            return "ran" if self.exit_code is None else f"ran (exit {self.exit_code})"
        if self.stage == "interrupted":
            return "interrupted while it ran"
        return "running"

    def icon(self) -> str:
        """The mark before the title: a ✅ never stands next to a command that failed."""
        if self.result == "approved" and self.run_failure:
            return "❗"
        return {"approved": "✅", "denied": "🚫", "modified": "✏️", "expired": "⌛",
                "blocked": "⛔"}.get(self.result, "•")

    def headline(self, who: str = "") -> str:
        """The decided card's title and notification: what happened, and by whom."""
        by = f" by {who}" if who else ""
        if self.result == "approved":
            return f"Approved{by} — {self._ran()}"
        if self.result == "denied":
            return f'Denied{by}: "{self.reason}"' if self.reason else \
                f"Denied{by} — no reason given"
        if self.result == "modified":
            return f"Modified{by} — the edit needs its own approval"
        if self.result == "blocked":
            return "Edit refused — nothing ran"
        if self.result == "expired":
            return "Expired — nobody decided in time"
        return f"Closed{by} — nothing ran"

    def summary(self, who: str = "") -> str:
        """One line for the card; ``who`` is the decider as the platform renders a mention
        (empty: not named), so it reads: Approved by @ana at 09:12 UTC — running it now."""
        when = (f" by {who}" if who else "") + (f" at {self.at:%H:%M} UTC" if self.at else "")
        if self.result == "approved":
            if self.run_failure:
                return (f"Approved{when} — it did not run to the end: {self.run_failure}. "
                        "The details are in the thread.")
            if self.stage == "executed":
                code = "" if self.exit_code is None else f" (exit {self.exit_code})"
                return f"Approved{when} — it ran{code}; its output is in the thread."
            if self.stage == "interrupted":
                return (f"Approved{when} — Ghost stopped while it ran; it was not run again. "
                        "The thread says what is known.")
            return f"Approved{when} — running it now."
        if self.result == "denied":
            why = f' Reason: "{self.reason}"' if self.reason else " No reason given."
            return f"Denied{when}. Ghost was told and will re-plan.{why}"
        if self.result == "modified":
            return (f"Modified{when} to `{self.new_command}`. The edited command needs its own "
                    "approval (new card below).")
        if self.result == "blocked":
            edited = f" `{self.blocked_command}`" if self.blocked_command else ""
            return (f"Edit{edited}{when} refused: {refusal_reason(self.reason)}. Neither it nor "
                    "the original command ran; Ghost was told.")
        if self.result == "expired":
            return "Expired — nobody decided in time. The command did not run; Ghost was told."
        return f"Closed{when}: {self.reason or 'the investigation was stopped'}. Nothing ran."


_FORBIDDEN_EDIT = re.compile(
    r"^the edited command is FORBIDDEN \((?P<rule>[^:()]+): (?:Refused \((?P=rule)\): )?"
    r"(?P<why>.*)\)$", re.S)


def refusal_reason(reason: str | None) -> str:
    """Why an edit was refused, said once: the gate's "Modification blocked: … (T0.x: Refused
    (T0.x): …). Original command not run." becomes "it is FORBIDDEN (T0.x): …"."""
    text = (reason or "the safety gate refused it").strip()
    text = text.removeprefix("Modification blocked: ").removesuffix(
        ". Original command not run.").strip()
    found = _FORBIDDEN_EDIT.match(text)
    if found:
        return f"it is FORBIDDEN ({found['rule']}): {found['why'].strip().rstrip('.')}"
    if text.startswith("the edited command "):
        return "it " + text.removeprefix("the edited command ").rstrip(".")
    return text.rstrip(".")


def outcome_of(approval: ApprovalLike) -> DecisionOutcome:
    """The outcome line for a request that is no longer pending."""
    status = approval.status
    closed_from = str((approval.context or {}).get("closed_from") or "")
    if status in ("closed",) and closed_from:
        status = closed_from
    if status in ("approved", "executing", "executed", "interrupted"):
        result = "approved"
    elif status == "modified":
        result = "modified"
    elif status == "denied" and (approval.context or {}).get("blocked_command") is not None:
        result = "blocked"
    elif status in ("denied", "expired", "abandoned"):
        result = status
    else:
        result = status
    successor_cmd = (approval.context or {}).get("new_command")
    blocked = (approval.context or {}).get("blocked_command") if result == "blocked" else None
    return DecisionOutcome(result=result, actor=approval.decided_by, at=approval.decided_at,
                           reason=approval.denial_reason,
                           new_command=str(successor_cmd) if successor_cmd else None,
                           stage=str(approval.status),
                           blocked_command=str(blocked) if blocked else None)


def ran_outcome(outcome: DecisionOutcome, result: Mapping[str, Any]) -> DecisionOutcome:
    """An approved card's outcome once its command's result is known: ran (exit N), or
    failed with the reason in a few words (not installed, stopped, outcome unknown)."""
    from dataclasses import replace

    if outcome.result != "approved":
        return outcome
    if result.get("status") == "error":
        error = str(result.get("error") or "unknown")
        if error in ("interrupted", "outcome_unknown"):
            return replace(outcome, stage="interrupted")
        failure = {"command_not_found": "not installed",
                   "timeout": "stopped at the time limit"}.get(error, error.replace("_", " "))
        return replace(outcome, stage="executed", run_failure=failure)
    code = result.get("exit_code")
    return replace(outcome, stage="executed",
                   exit_code=int(code) if isinstance(code, int) else None)


@dataclass(frozen=True)
class CommandLine:
    """A command that ran or was refused, as one compact line."""

    classification: str
    verdict: str
    command: str
    audit_id: str | None
    note: str = ""
    #: it did not run to the end (not installed, stopped, refused): shown with ❗, not ✅
    failed: bool = False

    def icon(self) -> str:
        """What happened, at a glance: ✅ it ran (after an approval too — a ⚠️ there read as
        a warning about a command that ran fine), 🚫 denied, ⛔ refused or blocked, ⌛ expired,
        ❗ it could not run to the end."""
        if self.failed:
            return "❗"
        if self.verdict.startswith("ran"):
            return "✅"
        return {"denied": "🚫", "blocked": "⛔", "not run": "⛔", "expired": "⌛"}.get(
            self.verdict, {"SAFE": "✅", "RISKY": "⚠️", "FORBIDDEN": "⛔"}.get(
                self.classification, "•"))


def _program(command: str) -> str:
    """The program a command line names, for a sentence (never raises on bad quoting)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return (words[0] if words else "the program").replace("`", "'")[:60]


def error_words(error: str, command: str) -> tuple[str, str]:
    """A shell error code as (verdict, what it means) for an on-call engineer; the audit id
    stays on the line for the details."""
    program = _program(command)
    known = {
        "command_not_found": ("not run", f"`{program}` is not installed on the Ghost host "
                              "(or not on its PATH), so it could not be started"),
        "timeout": ("stopped", "it ran past Ghost's time limit for one command and was "
                    "stopped; Ghost has the output it printed until then"),
        "unsupported_syntax": ("not run", "Ghost runs a single program without a shell; "
                               "pipes, redirections and chained commands are not executed"),
        "file_not_permitted": ("not run", "Ghost only reads files inside its own data "
                               "directory"),
        "secret_in_command": ("not run", "the command line contains a secret, so it was "
                              "neither stored nor offered for approval"),
        "empty_command": ("not run", "Ghost's model sent an empty command"),
        "interrupted": ("outcome unknown", "Ghost stopped while it was running; it was not "
                        "run again"),
        "outcome_unknown": ("outcome unknown", "Ghost stopped while it was running; it was "
                            "not run again"),
        "call_failed": ("failed", "the Azure call returned an error; Ghost has the details "
                        "and re-plans"),
        "approval_missing": ("not run", "its approval record is missing, so it was not run"),
        "audit_record_missing": ("outcome unknown", "its audit record is missing"),
    }
    if error in known:
        return known[error]
    return "failed", f"Ghost could not run it ({error.replace('_', ' ')})"


def command_line(args: Mapping[str, Any], result: Mapping[str, Any]) -> CommandLine:
    command = str(args.get("command") or "")
    classification = str(result.get("classification") or "?")
    status, action, error = result.get("status"), result.get("action"), result.get("error")
    audit_id = str(result["audit_id"]) if result.get("audit_id") else None
    if status == "denied":
        reason = result.get("denial_reason")
        if error == "approval_expired":
            return CommandLine(classification, "expired", command, audit_id,
                               "nobody decided in time; it did not run")
        if error == "user_abandoned":
            return CommandLine(classification, "not run", command, audit_id,
                               "the investigation was cancelled before anyone decided")
        if str(reason or "").startswith("Modification blocked"):  # an edit the gate refused
            return CommandLine(classification, "not run", command, audit_id,
                               f"the edit was refused: {refusal_reason(str(reason))}")
        return CommandLine(classification, "denied", command, audit_id,
                           f'reason: "{reason}"' if reason else "")
    if error == "forbidden_command":
        return CommandLine("FORBIDDEN", "blocked", command, audit_id, "never offered for approval")
    if status == "error":
        verdict, meaning = error_words(str(error or "unknown"), command)
        return CommandLine(classification, verdict, command, audit_id, meaning, failed=True)
    label = {"auto_approved": "ran", "user_approved": "ran after approval",
             "user_modified": "ran as modified"}.get(str(action), str(action))
    code = result.get("exit_code")
    return CommandLine(classification, label, command, audit_id,
                       "" if code in (0, None) else f"exit {code}")


def task_line(name: str, result: Mapping[str, Any]) -> str:
    """A capture's progress (the orchestrator's tools); without a task, what failed and the
    orchestrator's message, which says what to fix (e.g. the Azure setting)."""
    task = result.get("task_id")
    state = result.get("state") or result.get("status")
    message = str(result.get("message") or result.get("error_detail") or "").strip()
    if not task:
        if result.get("status") == "error":
            return f"⚠️ `{name}` failed: {message or result.get('error') or 'no details'}"
        return f"`{name}`: {message or state}"
    return f"Capture {task}: {state}" + (f" — {message}" if message else "") + f" ({name})"


CAPTURE_DONE = ("COMPLETED", "FAILED", "TIMED_OUT", "CANCELLED", "DONE", "ABANDONED")


def record_capture(ref: dict[str, Any], name: str, result: Mapping[str, Any]) -> list[str]:
    """Fold a capture tool's result into ``ref["captures"]`` (edited in place); return the task
    ids that have just reached a final state (worth one line in the thread)."""
    captures: dict[str, Any] = ref.setdefault("captures", {})
    finished: list[str] = []
    nested = result.get("tasks")
    for item in nested if isinstance(nested, list) and nested else [result]:
        task_id = item.get("task_id") if isinstance(item, Mapping) else None
        if not task_id:
            continue
        entry = captures.setdefault(str(task_id), {"state": "", "checks": 0})
        previous = entry.get("state")
        entry["state"] = str(item.get("state") or item.get("status") or "?")
        if name == "check_task":
            entry["checks"] = int(entry.get("checks") or 0) + 1
        if item.get("poll_count") is not None:
            entry["polls"] = int(item["poll_count"])
            entry["max_polls"] = item.get("max_polls")
        if entry["state"] in CAPTURE_DONE and previous not in CAPTURE_DONE:
            finished.append(str(task_id))
    return finished


def capture_lines(ref: Mapping[str, Any] | None, limit: int = 6) -> tuple[str, ...]:
    """One line per capture for the status message: task id, state, poll count."""
    captures = (ref or {}).get("captures") or {}
    lines = []
    for task_id, entry in list(captures.items())[-limit:]:
        polls, state = entry.get("polls"), entry.get("state")
        if polls is None:
            polled = f"checked {int(entry.get('checks') or 0)}×"
        elif state in CAPTURE_DONE or not entry.get("max_polls"):
            polled = f"{polls} poll(s)"
        else:
            polled = f"poll {polls}/{entry['max_polls']}"
        lines.append(f"`{task_id}` {entry.get('state') or '?'} · {polled}")
    return tuple(lines)


@dataclass(frozen=True)
class Prompt:
    """Ghost needs a person: after a text-only answer, or at the turn limit."""

    kind: str  # awaiting_user | turn_limit
    session_id: str
    text: str
    #: which prompt this is (``bot.chat.prompts``): its buttons carry it, so a click on an
    #: old prompt is told it was answered instead of acting on the newest one
    key: str | None = None


def prompt_for(kind: str, session_id: str, max_turns: int, key: str | None = None) -> Prompt:
    if kind == "turn_limit":
        return Prompt(kind, session_id, f"Ghost reached its limit of {max_turns} turns. Extend "
                      "by 10 turns, or write the RCA with what it has.", key)
    return Prompt(kind, session_id, "Ghost is waiting for you. Continue (optionally with an "
                  "instruction — or reply with @ghost in this thread), or Done to write the RCA.",
                  key)


@dataclass(frozen=True)
class RcaSummary:
    session_id: str
    confidence: str
    root_cause: str
    actions: tuple[str, ...] = field(default_factory=tuple)
    turns: int = 0
    duration_s: float | None = None

    def duration(self) -> str:
        minutes, seconds = divmod(int(self.duration_s or 0), 60)
        return f"{minutes}m {seconds:02d}s"


def rca_summary(inv: InvestigationLike) -> RcaSummary:
    rca = (inv.engine_state or {}).get("rca") or {}
    return RcaSummary(
        session_id=inv.session_id, confidence=str(rca.get("confidence") or "low"),
        root_cause=str(rca.get("root_cause") or "Not determined."),
        actions=tuple(str(a) for a in rca.get("recommended_actions") or []),
        turns=int(inv.state.get("turn_count") or 0), duration_s=rca.get("duration_s"))


HELP = """Ghost investigates Azure network problems in this channel.
`/ghost investigate <symptom>` — start, e.g. `/ghost investigate web-01 cannot reach redis:6379`
`/ghost status [SID]` — where an investigation stands (the newest one without SID)
`/ghost list` — recent investigations
`/ghost cancel SID` — stop one (pending approvals are closed; nothing else runs)
`/ghost resume SID` — pick up a stopped, failed or cancelled one
In an investigation's thread, use the buttons, or mention @ghost with an instruction.
Risky commands need a second engineer's approval; forbidden ones never run."""


def teams_words(text: str) -> str:
    """Slash commands do not exist in Teams: `/ghost resume SID` there is `@Ghost resume SID`.
    The shared wording names the Slack form; the Teams adapter passes its text through this."""
    return text.replace("/ghost ", "@Ghost ").replace("/ghost`", "@Ghost`").replace(
        "mention @ghost", "mention @Ghost")


def list_lines(investigations: Sequence[InvestigationLike]) -> list[str]:
    if not investigations:
        return ["No investigations yet. Start one with `/ghost investigate <symptom>`."]
    return [f"`{i.session_id}` — {PHASES.get(i.status, i.status)} — {i.symptom[:80]}"
            for i in investigations]


def brain_failure(session_id: str, detail: str, *, transient: bool = True) -> str:
    """Gemini failed: say why, and what to do first (wait, or fix the worker's settings)."""
    detail = detail.strip().rstrip(".")
    if transient:
        then = f"When Gemini answers again, run `/ghost resume {session_id}`."
    else:
        then = ("Waiting will not fix this. Once it is fixed (a changed setting such as "
                "GEMINI_API_KEY or GHOST_MODEL needs the worker restarted), run "
                f"`/ghost resume {session_id}`.")
    return f"Gemini could not be used: {detail}. Everything so far is saved. {then}"


def unexpected_failure(session_id: str, detail: str) -> str:
    return (f"Ghost hit an error it did not expect: {detail}. Everything so far is saved; "
            f"`/ghost resume {session_id}` tries again. If it keeps failing, check the worker's "
            "log for this session id.")


def rca_interrupted(session_id: str) -> str:
    return (f"The upload of the RCA (`ghost_rca_{session_id}.md`) was interrupted — Ghost "
            "restarted or Slack did not answer. If the file is not in this thread, run "
            f"`/ghost resume {session_id}` to upload it again. The report is also saved in "
            "Ghost's audit directory.")


def status_line(store: Any, sid: str, *, list_hint: str, captures: bool = False) -> str:
    """`status [SID]` on any platform: one line about an investigation (default: the newest);
    with ``captures``, the status message's Captures lines under it (``capture_lines``)."""
    from core.errors import UnknownInvestigation

    if sid:
        try:
            inv = store.get_investigation(sid)
        except UnknownInvestigation:
            return f"No investigation `{sid}`. `{list_hint}` shows recent ones."
    else:
        recent = store.list_investigations(limit=1)
        if not recent:
            return "No investigations yet."
        inv = recent[0]
    view = status_view(inv)
    hyps = "; ".join(f"{h.id} {h.state}" for h in view.hypotheses) or "none yet"
    line = (f"`{view.session_id}` — {view.phase}. Turn {view.turn}/{view.max_turns}, "
            f"denials {view.denials}, hypotheses: {hyps}.")
    tasks = capture_lines(inv.conversation_ref) if captures else ()
    return line + ("\nCaptures:" + "".join(f"\n• {t}" for t in tasks) if tasks else "")
