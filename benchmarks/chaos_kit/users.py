"""What both platforms' drill users share: the replicas they talk to, in turn, and the record
of every answer (its latency and status) and of every connection a replica refused."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass


@dataclass
class Ack:
    at: float
    ms: float
    kind: str
    status: int
    replica: int


class Users:
    """The base of ``SlackUsers`` and ``TeamsUsers``: requests go to the replicas in turn; a
    replica that refuses the connection (killed) is retried on the next one, as a load balancer
    would. Those are counted in ``refused``, not as acks."""

    def __init__(self, bases: list[str]) -> None:
        self.bases = bases
        self.acks: list[Ack] = []
        self.refused = 0
        #: requests answered 5xx and delivered again (Teams' connector redelivers them)
        self.redelivered = 0
        self.refusals: Counter[str] = Counter()
        self.errors: list[str] = []
        self._next = 0
        self._lock = threading.Lock()

    def next_replica(self) -> int:
        with self._lock:
            start = self._next
            self._next += 1
        return start

    def record(self, ack: Ack) -> None:
        with self._lock:
            self.acks.append(ack)

    def refuse(self, exc: BaseException) -> None:
        with self._lock:
            self.refused += 1
            self.refusals[f"{type(exc).__name__}: {exc}"[:80]] += 1
        time.sleep(0.25)
