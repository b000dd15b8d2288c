"""Append-only orchestrator task records: current state is the last record per task_id."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from core.errors import GhostError
from storage.db import Database
from storage.investigations import same_kind
from storage.models import Investigation, TaskEvent, TaskId

#: suffixes tried for one base id (``_2`` … ``_999``): more captures of one VM in one second
#: than that is a loop, not an incident
MAX_TASK_ID_SUFFIX = 999


class TaskIdsExhausted(GhostError):
    """Every suffix of a task id is taken (a runaway loop creating captures)."""


class TaskRepo:
    """Implements ``core.ports.TaskLog``."""

    db: Database
    clock: Callable[[], datetime]
    lab: str | None

    def _own_kind(self) -> Any:
        """Task events of this store's kind of session (lab or real), for reads across
        sessions: a real orphan scan never sees lab tasks, nor a lab scan real ones."""
        return TaskEvent.session_id.in_(
            select(Investigation.session_id).where(same_kind(self.lab)))

    def reserve_task_id(self, session_id: str, base: str, *,
                        avoid: Collection[str] = ()) -> str:
        """Take the first free id of ``base``, ``base_2``, ``base_3``… for ``session_id``.

        The insert into ``task_ids`` (its primary key) is the check, so it holds across
        processes: of two investigations reserving the same id at once, one insert fails and
        that one goes on to the next suffix. An id with task records but no reservation
        (written before migration 0005 by an older Ghost) counts as taken too.
        """
        self.db.ensure_ready()
        for n in range(1, MAX_TASK_ID_SUFFIX + 1):
            candidate = base if n == 1 else f"{base}_{n}"
            if candidate not in avoid and self._claim_task_id(session_id, candidate):
                return candidate
        raise TaskIdsExhausted(
            f"Task ids {base} to {base}_{MAX_TASK_ID_SUFFIX} are all taken: something is "
            "creating captures of this target in a loop.",
            "Find the investigation doing it (`ghost session list`, `ghost session show ID`) "
            "and cancel it.")

    def _claim_task_id(self, session_id: str, task_id: str) -> bool:
        try:
            with self.db.session() as s, s.begin():
                written = s.scalar(select(TaskEvent.id).where(TaskEvent.task_id == task_id)
                                   .limit(1))
                if written is not None:
                    return False
                s.add(TaskId(task_id=task_id, session_id=session_id,
                             reserved_at=self.clock()))
        except IntegrityError:
            return False
        return True

    def append_task_event(self, session_id: str, record: Mapping[str, Any]) -> None:
        """Append the full task record after a transition (never an update in place)."""
        task_id = record.get("task_id")
        if not task_id:
            raise ValueError("a task record needs a task_id")
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            s.add(
                TaskEvent(
                    session_id=session_id,
                    task_id=str(task_id),
                    state=str(record.get("state") or ""),
                    record=dict(record),
                    created_at=self.clock(),
                )
            )

    def task_events(self, session_id: str) -> list[dict[str, Any]]:
        """Every task record of an investigation in the order written (for export)."""
        self.db.ensure_ready()
        with self.db.reading() as s:
            rows = s.scalars(
                select(TaskEvent).where(TaskEvent.session_id == session_id).order_by(TaskEvent.id)
            )
            return [dict(r.record) for r in rows]

    def latest_tasks(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The newest record of every task, oldest task first."""
        self.db.ensure_ready()
        newest = select(func.max(TaskEvent.id).label("id")).group_by(TaskEvent.task_id)
        if session_id is not None:
            newest = newest.where(TaskEvent.session_id == session_id)
        else:
            newest = newest.where(self._own_kind())
        query = select(TaskEvent).where(TaskEvent.id.in_(newest.scalar_subquery()))
        with self.db.reading() as s:
            rows = s.scalars(query.order_by(TaskEvent.id))
            return [dict(r.record) for r in rows]

    def latest_task(self, task_id: str) -> dict[str, Any] | None:
        self.db.ensure_ready()
        with self.db.reading() as s:
            row = s.scalars(
                select(TaskEvent).where(TaskEvent.task_id == task_id, self._own_kind())
                .order_by(TaskEvent.id.desc()).limit(1)
            ).first()
            return None if row is None else dict(row.record)
