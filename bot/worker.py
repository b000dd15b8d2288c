"""`ghost worker`: runs investigations from the database, in any number of processes.

A worker claims a runnable investigation with a lease (``claim_next``), renews the lease while it
works, advances the engine until a human is needed, posts the follow-up, and lets go. A worker
that dies stops renewing; once its lease lapses another worker claims the investigation, closes
any command that was running as ``interrupted`` (never re-run), and carries on.

``/ghost cancel`` wins over a step in progress: the store never moves a cancelled investigation
back to running, and the engine stops at its next save (``InvestigationCancelled``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

from bot.chat.notifier import InvestigationCancelled
from core.engine.loop import Engine, Outcome

log = logging.getLogger(__name__)

#: what a worker runs: chat investigations. A `ghost investigate` belongs to its terminal.
CHAT_PLATFORMS = ("slack", "teams")
#: ...and those opened from a script with `ghost investigate --detach` (docs/agent-contract.md)
WORKER_PLATFORMS = (*CHAT_PLATFORMS, "cli")


def worker_id(prefix: str = "worker") -> str:
    return f"{prefix}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    """Claims and advances investigations; one instance per process, any number of threads."""

    def __init__(self, *, store: Any, engine: Engine, shell_for: Callable[[str], Any],
                 after: Callable[[str, Outcome], None],
                 failed: Callable[[str, BaseException], None],
                 owner: str | None = None, lease_seconds: float = 60.0,
                 before: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.engine = engine
        self.shell_for = shell_for
        self.after = after
        self.failed = failed
        self.owner = owner or worker_id()
        self.lease_seconds = lease_seconds
        #: runs under the lease before each advance (the chat's orphan report)
        self.before = before
        self._wake = threading.Event()

    def wake(self) -> None:
        """Something became runnable in this process: stop idling now (the Approve click)."""
        self._wake.set()

    def run_once(self) -> str | None:
        """Claim one runnable investigation and advance it; its id, or None if none was free."""
        inv = self.store.claim_next(self.owner, lease_seconds=self.lease_seconds,
                                    platforms=WORKER_PLATFORMS)
        if inv is None:
            return None
        self.work(inv.session_id)
        return str(inv.session_id)

    def run_until_idle(self, limit: int = 200) -> int:
        """Run until nothing is runnable (tests, and a CLI drain)."""
        done = 0
        while done < limit and self.run_once() is not None:
            done += 1
        return done

    def work(self, session_id: str) -> None:
        from bot.logging_setup import session_context

        with session_context(session_id):  # every log line of this step names the investigation
            self._work(session_id)

    def _work(self, session_id: str) -> None:
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(session_id, stop), daemon=True,
                                name=f"lease-{session_id}")
        beat.start()
        try:
            # a previous owner may have died mid-command: close it, never re-run it
            self.shell_for(session_id).recover_interrupted()
            if self.before is not None:
                self.before(session_id)
            outcome = self._advance(session_id)
            self.after(session_id, outcome)
        except InvestigationCancelled:  # /ghost cancel won mid-step: the step is saved
            log.info("investigation %s was cancelled while a worker advanced it", session_id)
        except Exception as exc:  # noqa: BLE001 - one investigation's failure is not the worker's
            log.exception("investigation %s failed", session_id)
            try:
                self.failed(session_id, exc)
            except Exception:  # noqa: BLE001 - the chat may be down too; the log has it
                log.exception("could not report the failure of %s", session_id)
        finally:
            stop.set()
            beat.join(timeout=5)
            self.store.release_lease(session_id, self.owner)

    def _advance(self, session_id: str) -> Outcome:
        while True:
            if self.store.get_investigation(session_id).status == "cancelled":
                return Outcome("cancelled")
            outcome = self.engine.advance(session_id)
            if outcome.kind != "awaiting_approval" or not outcome.approval_id:
                return outcome
            approval = self.store.get_approval(outcome.approval_id)
            if approval is None or approval.status == "pending":
                return outcome
            # decided between the card and our save (the click's requeue found us running)

    def _heartbeat(self, session_id: str, stop: threading.Event) -> None:
        while not stop.wait(self.lease_seconds / 3):
            try:
                if not self.store.renew_lease(session_id, self.owner,
                                              lease_seconds=self.lease_seconds):
                    log.warning("lost the lease on %s", session_id)
                    return
            except Exception:  # noqa: BLE001 - retry on the next beat
                log.exception("could not renew the lease on %s", session_id)

    def run_forever(self, stop: threading.Event, *, threads: int = 4,
                    idle_s: float = 1.0) -> None:
        """``threads`` loops claiming work until ``stop`` is set."""
        def loop() -> None:
            while not stop.is_set():
                try:
                    if self.run_once() is None:
                        self._wake.wait(idle_s)
                        self._wake.clear()
                except Exception:  # noqa: BLE001 - the database may be restarting
                    log.exception("worker loop error")
                    stop.wait(idle_s * 5)

        def wake_on_stop() -> None:
            stop.wait()
            self._wake.set()

        stop_watch = threading.Thread(target=wake_on_stop, daemon=True)
        stop_watch.start()
        pool = [threading.Thread(target=loop, name=f"ghost-worker-{i}", daemon=True)
                for i in range(max(1, threads))]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
