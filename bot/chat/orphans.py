"""The orphan report in an investigation's thread (ghost-design §3 steps 5–8), for every chat.

The terminal asks before the investigation starts (``bot/startup.py``); in chat the report is
posted when a worker first picks the investigation up, and the investigation goes on meanwhile:
nobody waits at 3 a.m. for a cleanup choice. Clean up / Skip / Review each are buttons; the
deletions are the orchestrator's (``core.engine.startup.clean_up``), so every RISKY deletion is a
normal approval card. A deletion waiting for its approval is continued (``check_task``) after
the decision — by the click, or by the periodic ``reconcile``.

Everything is in ``conversation_ref["orphans"]`` (state, buckets, per-row status, waiting
approvals), changed under the row lock; ``manual_cleanup_pending`` goes into the session state
only from a worker holding the investigation's lease (``merge_manual``), so the engine's saves
never overwrite it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from bot.chat.notifier import ChatNotifier
from bot.chat.ports import ChatPort, Thread
from core.engine.startup import (
    OrphanBuckets,
    classify_orphans,
    clean_up,
    held_elsewhere,
    orphan_detail,
    orphan_path,
)

log = logging.getLogger(__name__)

KEY = "orphans"


@dataclass(frozen=True)
class OrphanRow:
    kind: str
    name: str
    status: str = ""  # "" | cleaning | waiting for approval | cleaned | not cleaned | manual


@dataclass(frozen=True)
class OrphanReport:
    """What the thread shows: the rows, the choice made (and by whom), leftovers."""

    session_id: str
    rows: tuple[OrphanRow, ...]
    choice: str | None  # None (offered) | clean | skip | review
    actor: str | None
    warnings: tuple[str, ...] = ()
    #: which session and process left an abandoned task ("ghost_x: session S: `ghost
    #: investigate` (pid 4242 on host-a) is no longer running")
    notes: tuple[str, ...] = ()

    @property
    def manual(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rows if r.status == "manual")


class OrphanPort(Protocol):
    """What a platform adds to ``ChatPort`` to show the report with buttons."""

    def post_orphan_report(self, thread: Thread, report: OrphanReport) -> dict[str, Any]: ...

    def update_orphan_report(self, ref: Mapping[str, Any], report: OrphanReport) -> None: ...


def rows_of(buckets: OrphanBuckets) -> list[list[str]]:
    rows = [["abandoned task", str(t.get("task_id"))] for t in buckets.abandoned_tasks]
    rows += [["cleanup pending", str(t.get("task_id"))] for t in buckets.needs_cleanup]
    rows += [["partially cleaned", str(t.get("task_id"))] for t in buckets.partially_cleaned]
    rows += [["untracked Azure capture", str(c.get("name"))] for c in buckets.untracked_azure]
    rows += [["stale local file", str(f.get("path"))] for f in buckets.stale_local_files]
    return rows


def notes_of(buckets: OrphanBuckets) -> list[str]:
    """Who left each abandoned task: its session and, when known, its dead process."""
    return [f"{t.get('task_id')}: {orphan_detail(t)}" for t in buckets.abandoned_tasks
            if orphan_detail(t)]


class _Recorder:
    """The orchestrator's orphan-cleanup path (a person chose Clean up: it may act on ended
    investigations' tasks, which the model's path refuses), remembering which cleanup waits
    for which approval."""

    def __init__(self, orchestrator: Any) -> None:
        self.orchestrator = orphan_path(orchestrator)
        self.waiting: dict[str, dict[str, Any]] = {}

    def _note(self, result: dict[str, Any], names: list[str]) -> dict[str, Any]:
        held = result.get("waiting_for_approval")
        if isinstance(held, Mapping) and result.get("task_id"):
            self.waiting[str(result["task_id"])] = {"approval_id": held.get("approval_id"),
                                                    "names": names}
        return result

    def orchestrate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.orchestrator.orchestrate(request)
        return self._note(result, [str(request.get("task_id"))])

    def cleanup_orphans(self, report: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.orchestrator.cleanup_orphans(report)
        names = [str(c.get("name")) for c in report.get("untracked_captures") or []]
        names += [str(f.get("path")) for f in report.get("stale_files") or []]
        return self._note(result, names)


class OrphanDesk:
    """Scan, offer, clean up, continue after approvals."""

    def __init__(self, store: Any, port_for: Callable[[str], ChatPort | None],
                 notifier: ChatNotifier,
                 orchestrator_for: Callable[[str, bool], Any] | None = None) -> None:
        self.store = store
        self.port_for = port_for
        self.notifier = notifier
        #: ``(session_id, scan_orphans)`` → an orchestrator; None: no orphan report
        self.orchestrator_for = orchestrator_for

    # ------------------------------------------------------------------ scan and offer
    def scan(self, session_id: str) -> None:
        """Once per investigation (a compare-and-set claims it): report, or one line."""
        if self.orchestrator_for is None:
            return
        def claim(ref: dict[str, Any]) -> bool:
            if KEY in ref:
                return False
            ref[KEY] = {"state": "scanning"}
            return True

        if not self.store.change_conversation_ref(session_id, claim):
            return
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        report = self.orchestrator_for(session_id, True).orchestrate({"intent": "list_tasks"})
        if report.get("status") == "error":
            self._set(session_id, state="error")
            if port is not None:
                self._notice(session_id, "Could not check for orphaned resources from "
                                         f"earlier investigations: {report.get('message')}")
            return
        buckets = classify_orphans(report, session_id)
        warnings = [str(e) for e in (report.get("orphans") or {}).get("errors") or []]
        if buckets.maybe_running and port is not None:  # reported, never cleaned from here
            self._notice(session_id, "Captures that may still be running (their investigation "
                         "is held on another host, so Ghost cannot check it from here):\n" +
                         "\n".join(f"• {held_elsewhere(t)}" for t in buckets.maybe_running))
        if buckets.total == 0:
            self._set(session_id, state="none", warnings=warnings)
            if port is not None:
                self._notice(session_id, (
                    "Orphan scan incomplete: " + "; ".join(warnings) +
                    ". No orphans found in what could be checked; the rest is unknown.")
                    if warnings
                    else "No orphaned resources found.")
            return
        self._set(session_id, state="offered", buckets=asdict(buckets),
                  rows=rows_of(buckets), status={}, waiting={}, warnings=warnings,
                  notes=notes_of(buckets))
        if port is None:
            return
        report_view = self.report(session_id)
        if hasattr(port, "post_orphan_report"):
            ref = port.post_orphan_report(inv, report_view)
            self._set(session_id, ref=ref)
        else:  # a platform without buttons for it: the list, and the terminal's advice
            self._notice(session_id, "Orphaned resources from earlier investigations:\n" +
                         "\n".join(f"• {r.kind}: {r.name}" for r in report_view.rows) +
                         "".join(f"\n  ({n})" for n in report_view.notes))

    def report(self, session_id: str) -> OrphanReport:
        data = self._data(session_id)
        status = data.get("status") or {}
        rows = tuple(OrphanRow(kind, name, str(status.get(name) or ""))
                     for kind, name in data.get("rows") or [])
        state = data.get("state")
        return OrphanReport(session_id=session_id, rows=rows,
                            choice=state if state in ("clean", "skip", "review") else None,
                            actor=data.get("actor"),
                            warnings=tuple(data.get("warnings") or ()),
                            notes=tuple(data.get("notes") or ()))

    # ------------------------------------------------------------------ choices
    def choose(self, session_id: str, actor: str, choice: str,
               token: str | None = None) -> str | None:
        """Clean up / Skip / Review each: the first click wins; a refusal for the others.
        ``token`` (the recorded click's key): applied again after a crash, the click that
        won finishes its cleanup instead of being refused."""
        def take(ref: dict[str, Any]) -> str | None:
            data = ref.get(KEY) or {}
            if token and data.get("token") == token:
                return None  # this very click, applied again: go on where it stopped
            if data.get("state") != "offered":
                who = f" by {{user:{data['actor']}}}" if data.get("actor") else ""
                return f"Already handled{who}: {data.get('state') or 'no report'}."
            data.update(state=choice, actor=actor, token=token)
            return None

        refusal: str | None = self.store.change_conversation_ref(session_id, take)
        if refusal is not None:
            return refusal
        self._refresh(session_id)
        if choice == "clean" and not self._data(session_id).get("cleaned"):
            self._clean(session_id, None)
            self._set(session_id, cleaned=True)
        return None

    def clean_one(self, session_id: str, actor: str, index: int,
                  token: str | None = None) -> str | None:
        """Review each: one row's Clean up button (``token``: as :meth:`choose`)."""
        def take(ref: dict[str, Any]) -> str | None:
            data = ref.get(KEY) or {}
            rows = data.get("rows") or []
            if data.get("state") != "review" or not 0 <= index < len(rows):
                return "This orphan report is no longer being reviewed."
            name = rows[index][1]
            tokens = data.setdefault("row_tokens", {})
            if token and tokens.get(name) == token and \
                    (data.get("status") or {}).get(name) == "cleaning":
                return None  # this very click, applied again before its cleanup recorded
            if (data.get("status") or {}).get(name):
                return f"{name} is already {data['status'][name]}."
            data.setdefault("status", {})[name] = "cleaning"
            if token:
                tokens[name] = token
            return None

        refusal: str | None = self.store.change_conversation_ref(session_id, take)
        if refusal is not None:
            return refusal
        name = self._data(session_id)["rows"][index][1]
        self._refresh(session_id)
        self._clean(session_id, {name})
        return None

    # ------------------------------------------------------------------ cleaning
    def _clean(self, session_id: str, only: set[str] | None) -> None:
        if self.orchestrator_for is None:
            return
        data = self._data(session_id)
        buckets = OrphanBuckets(**data["buckets"])
        recorder = _Recorder(self.orchestrator_for(session_id, False))
        summary = clean_up(recorder, buckets, only)
        waiting_names = {n for w in recorder.waiting.values() for n in w["names"]}
        status = {n: "cleaned" for n in summary.cleaned}
        status |= {n: "waiting for approval" if n in waiting_names else "not cleaned"
                   for n in summary.skipped}
        status |= {n: "manual" for n in summary.manual_cleanup_pending}
        self._merge(session_id, status, recorder.waiting)
        for entry in recorder.waiting.values():
            if entry.get("approval_id"):
                self.notifier.ensure_card(str(entry["approval_id"]))
        self._refresh(session_id)

    def continue_waiting(self, session_id: str) -> int:
        """Continue every cleanup whose approval was decided (or expired); how many moved."""
        if self.orchestrator_for is None:
            return 0
        waiting: dict[str, Any] = dict(self._data(session_id).get("waiting") or {})
        moved = 0
        for task_id, entry in waiting.items():
            approval = self.store.get_approval(str(entry.get("approval_id")))
            if approval is not None and approval.status == "pending":
                continue
            if not self.store.change_conversation_ref(session_id, lambda ref, t=task_id: (
                    ref.get(KEY, {}).get("waiting", {}).pop(t, None) is not None)):
                continue  # another process continued it
            moved += 1
            recorder = _Recorder(self.orchestrator_for(session_id, False))
            result = recorder.orchestrate({"intent": "check_task", "task_id": task_id})
            names = list(entry.get("names") or [task_id])
            if recorder.waiting:  # the next deletion needs its own approval
                recorder.waiting[task_id]["names"] = names
                self._merge(session_id, {n: "waiting for approval" for n in names},
                            recorder.waiting)
                self.notifier.ensure_card(str(recorder.waiting[task_id]["approval_id"]))
            else:  # as clean_up: partial again on a partially cleaned task is manual work
                done = result.get("cleanup_status")
                partial = {str(t.get("task_id")) for t in
                           (self._data(session_id).get("buckets") or {}).get(
                               "partially_cleaned") or []}
                self._merge(session_id, {n: "cleaned" if done in ("completed", "skipped") else
                                         "manual" if done == "partial" and n in partial else
                                         "not cleaned" for n in names}, {})
            self._refresh(session_id)
        return moved

    def merge_manual(self, session_id: str) -> None:
        """Copy leftovers into ``manual_cleanup_pending``; only under the worker's lease."""
        manual = set(self.report(session_id).manual)
        if not manual:
            return
        inv = self.store.get_investigation(session_id)
        current = set(inv.state.get("manual_cleanup_pending") or [])
        if manual <= current:
            return
        state = dict(inv.state)
        state["manual_cleanup_pending"] = sorted(current | manual)
        self.store.save_state(session_id, state, expected_version=inv.version)

    # ------------------------------------------------------------------ helpers
    def _notice(self, session_id: str, text: str) -> None:
        """A line in the thread, through the outbox (recorded, retried)."""
        self.notifier.outbox.send(session_id, "text", {"text": text, "notice": True})

    def _data(self, session_id: str) -> dict[str, Any]:
        ref = self.store.get_investigation(session_id).conversation_ref or {}
        return dict(ref.get(KEY) or {})

    def _set(self, session_id: str, **values: Any) -> None:
        self.store.change_conversation_ref(
            session_id, lambda ref: ref.setdefault(KEY, {}).update(values))

    def _merge(self, session_id: str, status: Mapping[str, str],
               waiting: Mapping[str, Any]) -> None:
        def change(ref: dict[str, Any]) -> None:
            data = ref.setdefault(KEY, {})
            data.setdefault("status", {}).update(status)
            data.setdefault("waiting", {}).update(waiting)
        self.store.change_conversation_ref(session_id, change)

    def _refresh(self, session_id: str) -> None:
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        ref = self._data(session_id).get("ref")
        if port is not None and ref and hasattr(port, "update_orphan_report"):
            port.update_orphan_report(ref, self.report(session_id))
