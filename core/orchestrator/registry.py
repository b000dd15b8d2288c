"""The task registry: the TaskLog port plus an in-memory fallback when a write fails.

The spec's rule for an unwritable registry: warn, keep going in memory, lose state on exit. In
Ghost the registry is the database, so a failed append is rare and loud (logged at ERROR), and
the task keeps advancing from the in-memory copy in this process.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Collection
from typing import Any, Protocol, runtime_checkable

from core.orchestrator.records import Task
from core.ports import TaskLog

log = logging.getLogger("ghost.orchestrator")


@runtime_checkable
class TaskIdReserver(Protocol):
    """A task log that can take a task id atomically (the SQL store: ``task_ids``)."""

    def reserve_task_id(self, session_id: str, base: str, *,
                        avoid: Collection[str] = ()) -> str: ...


class TaskRegistry:
    """Load and append task records; current state = the last record per task_id."""

    def __init__(self, tasks: TaskLog, session_id: str) -> None:
        self.tasks = tasks
        self.session_id = session_id
        self._unsaved: dict[str, Task] = {}

    def save(self, task: Task) -> None:
        """Append the full record (a copy: later mutation must not change what was written)."""
        snapshot = copy.deepcopy(task)
        try:
            self.tasks.append_task_event(str(task["session_id"]), snapshot)
        except Exception as exc:  # noqa: BLE001 - the spec: a registry failure is not fatal
            log.error("task registry write failed for %s (state %s): %s; continuing in memory "
                      "only, this state is lost if the process exits", task["task_id"],
                      task["state"], exc)
            self._unsaved[str(task["task_id"])] = snapshot
            return
        self._unsaved.pop(str(task["task_id"]), None)

    def reserve(self, base: str, avoid: Collection[str] = ()) -> str:
        """A task id no other task has or will get: ``base``, else ``base_2``, ``base_3``…

        Several processes create tasks in one database (two engineers investigating the same
        VM in the same second), so "is it free?" then "write it" is not enough: the store
        reserves the id in one insert. A log that cannot (a stand-in) or a database that is
        down gets the check against what is readable, as before, with the error logged.
        """
        if isinstance(self.tasks, TaskIdReserver):
            try:
                return self.tasks.reserve_task_id(self.session_id, base, avoid=avoid)
            except Exception as exc:  # noqa: BLE001 - the spec: a registry failure is not fatal
                log.error("task id reservation failed for %s: %s; checking what is readable "
                          "instead, so another process may pick the same id", base, exc)
        candidate, n = base, 1
        while candidate in avoid or self.load(candidate) is not None:
            n += 1
            candidate = f"{base}_{n}"
        return candidate

    def load(self, task_id: str) -> Task | None:
        """The newest record of ``task_id``: this session first, then any session.

        Task ids are unique across sessions, so a store that can look one task up by id
        (``latest_task``, indexed) answers without reading every task in the database.
        """
        if task_id in self._unsaved:
            return copy.deepcopy(self._unsaved[task_id])
        lookup = getattr(self.tasks, "latest_task", None)
        if callable(lookup):
            try:
                record = lookup(task_id)
            except Exception as exc:  # noqa: BLE001 - report, and fall back to memory
                log.error("task registry read failed: %s", exc)
                return None
            return record if record is not None and _valid(record) else None
        for scope in (self.session_id, None):
            for record in self._read(scope):
                if record.get("task_id") == task_id:
                    return record
        return None

    def session_tasks(self) -> list[Task]:
        return self._merge(self._read(self.session_id), self.session_id)

    def all_tasks(self) -> list[Task]:
        return self._merge(self._read(None), None)

    def _read(self, scope: str | None) -> list[Task]:
        try:
            records = self.tasks.latest_tasks(scope)
        except Exception as exc:  # noqa: BLE001 - report, and fall back to memory
            log.error("task registry read failed: %s", exc)
            return []
        return [r for r in records if _valid(r)]

    def _merge(self, records: list[Task], scope: str | None) -> list[Task]:
        by_id = {str(r["task_id"]): r for r in records}
        for task_id, record in self._unsaved.items():
            if scope is None or record.get("session_id") == scope:
                by_id[task_id] = copy.deepcopy(record)
        return list(by_id.values())


def _valid(record: Any) -> bool:
    """Skip records that are not task records (the spec: skip corrupted lines, warn)."""
    ok = isinstance(record, dict) and bool(record.get("task_id")) and "state" in record \
        and isinstance(record.get("timestamps"), dict)
    if not ok:
        log.warning("skipping a task record that is not a task: %.200r", record)
    return ok
