"""`ghost worker`: runs investigations from the database, in any number of processes.

A worker claims a runnable investigation with a lease (``claim_next``), renews the lease while it
works, advances the engine until a human is needed, posts the follow-up, and lets go. A worker
that dies stops renewing; once its lease lapses another worker claims the investigation, closes
any command that was running as ``interrupted`` (never re-run), and carries on.

``/ghost cancel`` wins over a step in progress: the store never moves a cancelled investigation
back to running, and the engine stops at its next save (``InvestigationCancelled``).

SIGTERM (``Drain``): no new claims, the pacers stop sleeping, and each step in flight stops at
its next save that leaves the investigation runnable (``StopAtSave``: the same safe point as a
cancel) or finishes, within the budget; then every lease this process holds is released, so a
deploy never leaves an investigation waiting for a lease to lapse. The pool's threads are not
daemon threads: a step is never cut at an arbitrary point by the interpreter's exit, only, past
the budget, by the hard stop after the leases were released (docs/reliability.md).

A database that drops its connections (restart, failover, ``pg_terminate_backend``) does not
fail an investigation: the error is recognised (``storage.db.is_transient``), the step is
handed back as it was last saved, and the next claim carries on from there.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from bot.chat.notifier import InvestigationCancelled
from core.engine.loop import Engine, ModelUnavailable, Outcome, StepSuperseded
from core.engine.ports import Notifier
from core.errors import GhostError
from storage.db import transient_cause
from storage.investigations import RUNNABLE_STATUSES

log = logging.getLogger(__name__)

#: what a worker runs: chat investigations. A `ghost investigate` belongs to its terminal.
CHAT_PLATFORMS = ("slack", "teams")
#: ...and those opened from a script with `ghost investigate --detach` (docs/agent-contract.md)
WORKER_PLATFORMS = (*CHAT_PLATFORMS, "cli")


class TryLater(GhostError):
    """Nothing is wrong with the investigation, only with a service it needs right now (the
    chat API): it stays as it is, and no worker tries again for ``retry_in`` seconds."""

    def __init__(self, message: str, *, retry_in: float) -> None:
        super().__init__(message)
        self.retry_in = retry_in


class Draining(GhostError):
    """The step stopped at a save because this process is shutting down (or lost its lease):
    the investigation is runnable as saved, and another worker carries on from there."""


class Yielded(Draining):
    """The step stopped at a runnable save to let other work have the thread: its time
    slice ran out while other investigations waited, or (the decision lane) an engineer's
    decision waits for a thread. The next claim carries on from the save."""


#: the decision lane: of a pool's threads, these claim only work a person just unblocked
#: (an approval decided, a prompt answered), so an approved command starts at once
DECISION_SHARE = 4
#: a normal thread hands an investigation back at its next runnable save after this long,
#: when other investigations wait for a thread (a long one never starves a short step)
SLICE_S = 10.0
#: how often a held step asks the database whether others wait (per investigation)
WAITING_CHECK_S = 0.5


#: the worker whose step this thread runs (``Worker.work`` sets it): one engine serves them all
_CURRENT = threading.local()


class StopAtSave:
    """The engine's notifier, plus a safe stopping point for shutdowns.

    The engine reports every save (``state_changed``) after it committed; when the worker
    thread that runs the step must stop (SIGTERM, or its lease was taken), it raises
    :class:`Draining` there, but only if that save left the investigation runnable — a save
    that made it wait for a human is followed by the card or prompt, which must go out.
    """

    def __init__(self, inner: Notifier, runnable: Callable[[str], bool]) -> None:
        self.inner = inner
        self.runnable = runnable

    @staticmethod
    def should_stop(session_id: str) -> bool:
        """Asked of the worker running this thread's step (none: a front end's thread)."""
        worker = getattr(_CURRENT, "worker", None)
        return worker is not None and worker.must_stop(session_id)

    @staticmethod
    def should_yield(session_id: str) -> bool:
        worker = getattr(_CURRENT, "worker", None)
        return worker is not None and worker.should_yield(session_id)

    def __getattr__(self, name: str) -> Any:  # the chat notifier's own helpers
        return getattr(self.inner, name)

    def model_text(self, session_id: str, text: str) -> None:
        self.inner.model_text(session_id, text)

    def tool_result(self, session_id: str, name: str, args: Mapping[str, Any],
                    result: Mapping[str, Any]) -> None:
        self.inner.tool_result(session_id, name, args, result)

    def approval_pending(self, session_id: str, name: str, args: Mapping[str, Any],
                         result: Mapping[str, Any]) -> None:
        self.inner.approval_pending(session_id, name, args, result)

    def model_outage(self, session_id: str, error: str, until: Any) -> None:
        tell = getattr(self.inner, "model_outage", None)
        if callable(tell):
            tell(session_id, error, until)

    def state_changed(self, session_id: str, state: Mapping[str, Any],
                      engine_state: Mapping[str, Any]) -> None:
        self.inner.state_changed(session_id, state, engine_state)
        phase = (engine_state or {}).get("phase")
        if phase not in ("call_model", "dispatch"):
            return
        if self.should_stop(session_id) and self.runnable(session_id):
            raise Draining(f"Investigation {session_id} stopped at a save: this process is "
                           "shutting down or lost its lease; another worker continues it.")
        if self.should_yield(session_id) and self.runnable(session_id):
            raise Yielded(f"Investigation {session_id} handed its thread on at a save: other "
                          "work was waiting; the next free thread continues it.")


class Drain:
    """A process's shutdown on SIGTERM, bounded by ``budget_s`` from the signal.

    ``stop`` ends the claiming loops and every wait made through :meth:`sleep` (the Slack
    pacer's and 429 retries'), so a post queued behind a backlog goes out at once instead of
    holding the process; :meth:`left` is what remains of the budget for each phase.
    """

    def __init__(self, budget_s: float = 10.0, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.budget_s = budget_s
        self.clock = clock
        self.stop = threading.Event()
        self._began: float | None = None

    def begin(self) -> None:
        """The signal handler: only sets flags (safe in a handler)."""
        if self._began is None:
            self._began = self.clock()
        self.stop.set()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less once the drain began."""
        self.stop.wait(max(0.0, seconds))

    def arm(self, last_words: Callable[[], None], *, margin_s: float = 0.5) -> None:
        """The hard stop: if the process is still here ``margin_s`` before the budget ends
        (a thread stuck in a network call, a listener that will not return), run
        ``last_words`` (release the leases) and exit without waiting for anyone."""
        timer = threading.Timer(self.left(reserve_s=margin_s), self.exit_now,
                                args=(last_words,
                                      f"shutdown budget of {self.budget_s:.0f} s spent"))
        timer.daemon = True
        timer.start()

    def exit_now(self, last_words: Callable[[], None], why: str) -> None:
        """Run ``last_words`` and end the process at once (``os._exit``): the steps still in
        flight hold no lease any more, so none of them may go on writing."""
        log.warning("%s: exiting now", why)
        try:
            last_words()
        except Exception:  # noqa: BLE001 - exiting anyway; the leases lapse by themselves
            log.exception("could not release the leases before exiting")
        logging.shutdown()
        os._exit(0)

    def left(self, reserve_s: float = 0.0) -> float:
        """Seconds left of the budget, keeping ``reserve_s`` for the phases after this one."""
        if self._began is None:
            return self.budget_s - reserve_s
        return max(0.0, self.budget_s - reserve_s - (self.clock() - self._began))


class InFlight:
    """Chat requests being answered (``with in_flight:`` around each); a shutdown waits for
    them so that what was recorded before an ack also gets its ack."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    def __enter__(self) -> InFlight:
        with self._idle:
            self._count += 1
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is in flight, False if ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def worker_id(prefix: str = "worker") -> str:
    return f"{prefix}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    """Claims and advances investigations; one instance per process, any number of threads."""

    def __init__(self, *, store: Any, engine: Engine, shell_for: Callable[[str], Any],
                 after: Callable[[str, Outcome], None],
                 failed: Callable[[str, BaseException], None],
                 owner: str | None = None, lease_seconds: float = 60.0,
                 before: Callable[[str], None] | None = None,
                 slice_s: float = SLICE_S) -> None:
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
        #: bumped by ``wake``; an idle pool polls the database once per period, not once
        #: per thread (SQLite has one write lock, and the slash commands' records need it)
        self._generation = 0
        self._claiming = threading.Lock()
        #: set on SIGTERM (``run_forever``'s stop): steps stop at their next runnable save
        self.stopping = threading.Event()
        #: investigations whose lease the heartbeat found taken: their step stops too
        self._lost: set[str] = set()
        self.slice_s = slice_s
        #: steps of the pool's loops: session → (started, decision lane?, last check, verdict)
        self._held: dict[str, list[Any]] = {}
        notifier = getattr(engine, "notifier", None)
        if notifier is not None and not isinstance(notifier, StopAtSave):
            engine.notifier = StopAtSave(notifier, self._runnable)

    def must_stop(self, session_id: str) -> bool:
        return self.stopping.is_set() or session_id in self._lost

    def should_yield(self, session_id: str) -> bool:
        """Hand the thread on at this save? A decision-lane step: when another decided
        investigation waits; a normal step: after ``slice_s`` when anything waits. Asked at
        most every WAITING_CHECK_S per step (a count query)."""
        held = self._held.get(session_id)
        if held is None:  # run_once / tests: no slicing
            return False
        started, lane, checked, verdict = held
        now = time.monotonic()
        if not lane and now - started < self.slice_s:
            return False
        if now - checked < WAITING_CHECK_S:
            return bool(verdict)
        try:
            waiting = int(self.store.waiting_count(platforms=WORKER_PLATFORMS,
                                               min_priority=1 if lane else 0))
        except Exception:  # noqa: BLE001 - not knowing is no reason to stop
            waiting = 0
        held[2], held[3] = now, waiting > 0
        return waiting > 0

    def _runnable(self, session_id: str) -> bool:
        return bool(self.store.get_investigation(session_id).status in RUNNABLE_STATUSES)

    def wake(self) -> None:
        """Something became runnable in this process: stop idling now (the Approve click)."""
        self._generation += 1
        self._wake.set()

    def run_once(self) -> str | None:
        """Claim one runnable investigation and advance it; its id, or None if none was free."""
        inv = self._claim()
        if inv is None:
            return None
        self.work(inv.session_id)
        return str(inv.session_id)

    def _claim(self, known_empty: Callable[[], bool] = lambda: False,
               min_priority: int = 0) -> Any:
        """One claim at a time per process, and none while another thread of the pool just
        found nothing (``known_empty``): SQLite has one write lock, and a convoy of idle
        pollers on it delays the records that slash commands write before their ack."""
        with self._claiming:
            if known_empty():
                return None
            return self.store.claim_next(self.owner, lease_seconds=self.lease_seconds,
                                         platforms=WORKER_PLATFORMS,
                                         min_priority=min_priority)

    def run_until_idle(self, limit: int = 200) -> int:
        """Run until nothing is runnable (tests, and a CLI drain)."""
        done = 0
        while done < limit and self.run_once() is not None:
            done += 1
        return done

    def work(self, session_id: str, *, lane: bool | None = None) -> None:
        """Advance one claimed investigation; ``lane`` (the pool's loops): slice it — True for
        the decision lane, False for a normal thread; None never yields (tests, --once)."""
        from bot.logging_setup import session_context

        if lane is not None:
            self._held[session_id] = [time.monotonic(), lane, 0.0, False]
        try:
            with session_context(session_id):  # every log line of this step names it
                self._work(session_id)
        finally:
            self._held.pop(session_id, None)

    def _work(self, session_id: str) -> None:
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(session_id, stop), daemon=True,
                                name=f"lease-{session_id}")
        beat.start()
        _CURRENT.worker = self
        hold_until = None
        try:
            # a previous owner may have died mid-command: close it, never re-run it
            self.shell_for(session_id).recover_interrupted()
            if self.before is not None:
                self.before(session_id)  # posts a slash command's root message first
            if self.store.get_investigation(session_id).status not in RUNNABLE_STATUSES:
                return  # the chat refused it before it started (the requester was told)
            outcome = self._advance(session_id)
            self.after(session_id, outcome)
        except (TryLater, ModelUnavailable) as exc:  # kept as it is; the lease is the timer
            log.warning("%s", exc.message)
            hold_until = self.store.clock() + timedelta(seconds=exc.retry_in)
        except InvestigationCancelled:  # /ghost cancel won mid-step: the step is saved
            log.info("investigation %s was cancelled while a worker advanced it", session_id)
        except StepSuperseded:  # our lease lapsed and another process went on: let it go
            log.info("investigation %s was advanced by another process while this worker was "
                     "stalled; nothing of the stale step was saved", session_id)
        except Yielded:  # its slice is over and others wait: the next claim goes on
            log.debug("investigation %s handed its thread on at a save", session_id)
        except Draining:  # stopped at a save, runnable: whoever claims it next carries on
            log.info("investigation %s stopped at a save and is handed back (%s)", session_id,
                     "shutting down" if self.stopping.is_set() else "lease lost")
        except Exception as exc:  # noqa: BLE001 - one investigation's failure is not the worker's
            cause = transient_cause(exc)
            if cause is not None:  # the database dropped us: retry the step, do not fail it
                log.warning("investigation %s: the database connection failed mid-step (%s); "
                            "it is handed back as last saved and retried", session_id,
                            _first_line(cause))
            else:
                log.exception("investigation %s failed", session_id)
                try:
                    self.failed(session_id, exc)
                except Exception:  # noqa: BLE001 - the chat may be down too; the log has it
                    log.exception("could not report the failure of %s", session_id)
        finally:
            _CURRENT.worker = None
            stop.set()
            beat.join(timeout=5)
            self._let_go(session_id, hold_until)
            self._lost.discard(session_id)

    def _let_go(self, session_id: str, hold_until: Any) -> None:
        """Release the lease (or keep it as a retry timer); if the database is down, the lease
        lapses by itself after ``lease_seconds``, which is the same outcome a little later."""
        try:
            if hold_until is None or not self.store.hold_lease_until(
                    session_id, self.owner, hold_until):
                self.store.release_lease(session_id, self.owner)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            if transient_cause(exc) is None:
                raise
            log.warning("could not release the lease on %s (%s); it lapses in %.0f s",
                        session_id, _first_line(exc), self.lease_seconds)

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
                    log.warning("lost the lease on %s: its step stops at the next save",
                                session_id)
                    self._lost.add(session_id)
                    return
            except Exception:  # noqa: BLE001 - retry on the next beat
                log.exception("could not renew the lease on %s", session_id)

    def run_forever(self, stop: threading.Event, *, threads: int = 4,
                    idle_s: float = 1.0) -> None:
        """``threads`` loops claiming work until ``stop`` is set.

        One in DECISION_SHARE of them (at least one, when there are two or more) is the
        decision lane: it claims only investigations a person just unblocked, so an approved
        command starts at once even while every other thread is busy with model turns; it
        hands an investigation on at its first runnable save once another decision waits. The
        others claim the highest priority first, and hand an investigation on after
        ``slice_s`` when other work waits (``should_yield``)."""
        lanes = min(max(1, threads // DECISION_SHARE), threads - 1) if threads >= 2 else 0
        # the pool's last claim that found nothing, per lane
        empties = {True: {"generation": -1, "at": 0.0}, False: {"generation": -1, "at": 0.0}}

        def loop(lane: bool) -> None:
            empty = empties[lane]

            def known_empty() -> bool:
                return empty["generation"] == self._generation and \
                    time.monotonic() - empty["at"] < idle_s

            while not stop.is_set():
                try:
                    generation = self._generation
                    inv = self._claim(known_empty, min_priority=1 if lane else 0)
                    if inv is None:
                        if not known_empty():
                            empty.update(generation=generation, at=time.monotonic())
                        self._wake.wait(idle_s)
                        self._wake.clear()
                        continue
                    empty["generation"] = -1  # more may be waiting: every thread looks
                    self.work(inv.session_id, lane=lane)
                except Exception:  # noqa: BLE001 - the database may be restarting
                    log.exception("worker loop error")
                    stop.wait(idle_s * 5)

        def wake_on_stop() -> None:
            stop.wait()
            self.stopping.set()  # the steps in flight stop at their next runnable save
            self._wake.set()

        stop_watch = threading.Thread(target=wake_on_stop, daemon=True)
        stop_watch.start()
        # not daemon threads: the interpreter's exit never cuts a step at an arbitrary point;
        # a shutdown joins them (``Drain``) and, past its budget, exits after the leases
        # were released (``Drain.arm``)
        pool = [threading.Thread(target=loop, args=(i < lanes,),
                                 name=f"ghost-{'decisions' if i < lanes else 'worker'}-{i}")
                for i in range(max(1, threads))]
        for t in pool:
            t.start()
        for t in pool:
            t.join()

    def hand_back(self) -> list[str]:
        """Release every lease this worker still holds (shutdown, after the steps in flight
        finished or the deadline passed); the ids handed back to the other processes."""
        held = list(self.store.release_leases_of(self.owner))
        if held:
            log.warning("handed back %d investigation(s) at shutdown: %s; another worker "
                        "continues them (a command cut short is recorded as interrupted, "
                        "never re-run)", len(held), ", ".join(held))
        return held
