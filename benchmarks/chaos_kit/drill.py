"""The drill's moving parts while it runs: the requester who starts investigations, the second
engineer who approves (and double-clicks, and replays old clicks), and the chaos monkey."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchmarks.chaos_kit.account import Started
from benchmarks.chaos_kit.faults import Faults
from benchmarks.chaos_kit.procs import Ghost
from benchmarks.chaos_kit.users import Users

SYMPTOM = ("The web tier returns 502 since 17:20 UTC; its logs show 'connect() failed (111: "
           "Connection refused)' to api-vm-01 (10.1.3.4:8080)")


class Requester(threading.Thread):
    """Starts investigation 0..n-1 (Slack's `/ghost investigate`, Teams' `@Ghost investigate`),
    ``every_s`` apart — or, with ``every_s`` 0, all at once (one thread each)."""

    def __init__(self, users: Any, channels: list[str], n: int, every_s: float,
                 halt: threading.Event) -> None:
        super().__init__(daemon=True, name="chaos-requester")
        self.users, self.channels, self.n, self.every_s = users, channels, n, every_s
        self.halt = halt
        self.started: list[Started] = []
        self._lock = threading.Lock()

    def _start(self, n: int) -> None:
        channel = self.channels[n % len(self.channels)]
        status, sid = self.users.investigate(n, channel, f"investigate {SYMPTOM} [chaos-{n:02d}]")
        with self._lock:
            self.started.append(Started(n, channel, sid, time.monotonic(), status))

    def run(self) -> None:
        if self.every_s <= 0:
            burst = [threading.Thread(target=self._start, args=(n,), daemon=True)
                     for n in range(self.n)]
            for thread in burst:
                thread.start()
            for thread in burst:
                thread.join()
            return
        for n in range(self.n):
            if self.halt.is_set():
                return
            self._start(n)
            self.halt.wait(self.every_s)


class Approver(threading.Thread):
    """The second engineer: approves every card that appears; double-clicks every third one
    (two replicas at once) and replays every second one's click after it was decided. A click
    that left its approval pending for ``reclick_s`` is clicked again (and counted).
    ``first_click`` keeps the wall-clock time of each approval's first click (for Approve →
    command start)."""

    def __init__(self, users: Users, chat: Any, store: Any, halt: threading.Event,
                 reclick_s: float = 15.0) -> None:
        super().__init__(daemon=True, name="chaos-approver")
        self.users, self.chat, self.store, self.halt = users, chat, store, halt
        self.reclick_s = reclick_s
        self.clicked: dict[str, float] = {}
        self.first_click: dict[str, datetime] = {}
        self.first_at: dict[str, float] = {}
        self.double_clicks = 0
        self.replays = 0
        self.reclicks: list[str] = []
        self._replay_due: dict[str, float] = {}
        self._open: dict[str, dict[str, Any]] = {}
        self._cards_seen = 0
        self._next_check = 0.0

    def _click(self, card: dict[str, Any]) -> None:
        self.users.click_card(card)

    def run(self) -> None:
        seen = 0
        while not self.halt.wait(0.2):
            try:
                self._round(seen)
                seen += 1
            except Exception as exc:  # noqa: BLE001 - the database may be restarting
                self.users.errors.append(f"approver: {type(exc).__name__}: {exc}"[:200])

    def _round(self, _seen: int) -> None:
        now = time.monotonic()
        cards = self.chat.cards()
        for card in cards[self._cards_seen:]:
            approval = card["_approval"]
            if approval in self.clicked:
                continue
            self.clicked[approval] = now
            self.first_click[approval] = datetime.now(UTC)
            self.first_at[approval] = now
            self._open[approval] = card
            index = len(self.clicked)
            if index % 3 == 0:
                self.double_clicks += 1
                twin = threading.Thread(target=self._click, args=(card,), daemon=True)
                twin.start()
                self._click(card)
                twin.join()
            else:
                self._click(card)
            if index % 2 == 0:
                self._replay_due[approval] = now + 2.0
        self._cards_seen = len(cards)
        if now < self._next_check:
            return
        self._next_check = now + 1.0
        for approval, card in list(self._open.items()):
            view = self.store.get_approval(approval)
            status = view.status if view is not None else "pending"
            if status == "pending":
                if now - self.clicked[approval] > self.reclick_s:
                    self.reclicks.append(approval)
                    self.clicked[approval] = now
                    self._click(card)
                continue
            due = self._replay_due.get(approval)
            if due is not None:
                if now < due:
                    continue
                del self._replay_due[approval]
                self.replays += 1
                self._click(card)
            del self._open[approval]


class Monkey(threading.Thread):
    """Kills -9 a random Ghost every ``kill_every_s`` (restarting it ``down_s`` later) and runs
    the timed faults of ``plan`` [(at_s, kind, seconds)], until ``chaos_s`` has passed."""

    def __init__(self, ghosts: list[Ghost], faults: Faults, plan: list[tuple[float, str, float]],
                 *, kill_every_s: float, chaos_s: float, halt: threading.Event,
                 restart_pg: Callable[[], object] | None, seed: int) -> None:
        super().__init__(daemon=True, name="chaos-monkey")
        self.ghosts, self.faults, self.plan = ghosts, faults, sorted(plan)
        self.kill_every_s, self.chaos_s, self.halt = kill_every_s, chaos_s, halt
        self.restart_pg = restart_pg
        self.random = random.Random(seed)
        self.log: list[str] = []
        self.errors: list[str] = []
        self._restarts: list[threading.Thread] = []
        self._down: set[str] = set()

    def _say(self, t0: float, what: str) -> None:
        self.log.append(f"  t={time.monotonic() - t0:6.1f}s  {what}")

    def run(self) -> None:
        t0 = time.monotonic()
        next_kill = t0 + self.kill_every_s if self.kill_every_s > 0 else float("inf")
        plan = list(self.plan)
        while not self.halt.wait(0.1):
            now = time.monotonic()
            if now - t0 > self.chaos_s:
                break
            while plan and now - t0 >= plan[0][0]:
                _at, kind, seconds = plan.pop(0)
                self._fault(t0, kind, seconds)
            if now >= next_kill:
                next_kill = now + self.kill_every_s * self.random.uniform(0.6, 1.4)
                self._kill(t0)
        for thread in self._restarts:
            thread.join(timeout=90)

    def _fault(self, t0: float, kind: str, seconds: float) -> None:
        if kind == "pg_restart":
            if self.restart_pg is None:
                return
            window = self.faults.open("pg_restart", 3600)
            self._say(t0, "PostgreSQL restart")
            try:
                self.restart_pg()
            except Exception as exc:  # noqa: BLE001 - reported, the drill goes on
                self.errors.append(f"PostgreSQL restart: {exc}")
            window.end = time.monotonic()
            self._say(t0, f"PostgreSQL back after {window.end - window.start:.1f}s")
            return
        self.faults.open(kind, seconds)
        self._say(t0, f"{kind} for {seconds:g}s")

    def _kill(self, t0: float) -> None:
        """Kill a random Ghost that is up (not one still restarting), but never the last
        replica answering Slack: with none, Slack's requests fail, which is not Ghost's doing."""
        up = [g for g in self.ghosts if g.alive() and g.name not in self._down]
        replicas = [g for g in up if g.port is not None]
        candidates = [g for g in up if g.port is None or len(replicas) > 1
                      or len([h for h in self.ghosts if h.port is not None]) == 1]
        if not candidates:
            return
        victim = self.random.choice(candidates)
        self._down.add(victim.name)
        window = self.faults.open(f"kill {victim.name}", 3600)
        victim.kill9()
        self._say(t0, f"kill -9 {victim.name}")
        down_s = self.random.uniform(0.5, 2.0)

        def restart() -> None:
            time.sleep(down_s)
            try:
                victim.start()
                victim.wait_ready()
            except Exception as exc:  # noqa: BLE001 - reported, the drill goes on
                self.errors.append(f"restart {victim.name}: {exc}")
            window.end = time.monotonic()
            self._down.discard(victim.name)

        thread = threading.Thread(target=restart, daemon=True)
        thread.start()
        self._restarts.append(thread)
