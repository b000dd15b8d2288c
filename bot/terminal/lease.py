"""The liveness of a terminal run: a lease on its investigation, renewed while the process lives."""

from __future__ import annotations

from typing import Any


class TerminalLease:
    """The liveness of a `ghost investigate` process: a lease on its investigation, renewed
    from a daemon thread while the process lives (chat workers hold the same kind of lease).

    Killed with -9, the process stops renewing; the next session's orphan scan on this host
    sees at once that the process is gone (``bot.terminal.holders``) and offers to clean up its
    captures; on another host, once the lease expires.
    """

    def __init__(self, store: Any, session_id: str, *, seconds: float = 60.0,
                 owner: str | None = None) -> None:
        from bot.terminal.holders import owner_for_this_process

        self.store = store
        self.session_id = session_id
        self.seconds = max(float(seconds), 3.0)
        #: ``terminal:HOST:PID:START``: the start time tells a reused PID from this process
        self.owner = owner or owner_for_this_process()
        self._stop: Any = None
        self._thread: Any = None

    def acquire(self) -> bool:
        """Take the lease and start renewing it; False when another live process holds it."""
        import threading

        if not self.store.take_lease(self.session_id, self.owner, lease_seconds=self.seconds):
            stale = self._dead_local_holder()
            if stale is None:
                return False
            # a `ghost investigate` on this machine that was killed: no need to wait it out
            self.store.release_lease(self.session_id, stale)
            if not self.store.take_lease(self.session_id, self.owner,
                                         lease_seconds=self.seconds):
                return False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="ghost-terminal-lease",
                                        daemon=True)
        self._thread.start()
        return True

    def _dead_local_holder(self) -> str | None:
        """The holder's owner string when it is a terminal run on this host whose process is
        gone (killed with -9, its PID free or reused); None otherwise (another host, alive)."""
        from bot.terminal.holders import is_gone, parse

        owner = getattr(self.store.get_investigation(self.session_id), "lease_owner", None)
        holder = parse(owner)
        return owner if holder is not None and is_gone(holder) else None

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.store.renew_lease(self.session_id, self.owner, lease_seconds=self.seconds)
            except Exception:  # noqa: BLE001 - a missed renewal is retried; never crash
                continue

    def release(self) -> None:
        if self._stop is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._stop = None
        try:
            self.store.release_lease(self.session_id, self.owner)
        except Exception:  # noqa: BLE001 - an unreleased lease simply expires
            return
