"""Who holds a terminal investigation's lease, and whether that process still exists.

A `ghost investigate` holds its investigation's lease as ``terminal:HOST:PID:START`` (START: the
process's start time, seconds since the epoch). On the same host the process can be asked about
directly: a PID that is not running, or that now belongs to a process started at another time
(the PID was reused), means the run is dead, whatever its lease says. On another host nothing
can be asked: the run may still be running until its lease expires. Owners written before the
start time was added (``terminal:HOST:PID``) are judged by the PID alone.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime

import psutil

PREFIX = "terminal"
#: two readings of one process's start time differ by clock-tick rounding, never by a second
START_TOLERANCE_S = 1.0


@dataclass(frozen=True)
class Holder:
    """A terminal run's lease owner, parsed."""

    host: str
    pid: int
    started: float | None  # None for an owner written before start times were recorded

    @property
    def local(self) -> bool:
        return self.host == socket.gethostname()

    def describe(self) -> str:
        return f"`ghost investigate` (pid {self.pid} on {self.host})"


def process_start(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), None if there is none."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:  # it exists; its start time is not ours to read
        return -1.0


def owner_for_this_process() -> str:
    """The lease owner of a terminal run in this process."""
    pid = os.getpid()
    started = process_start(pid)
    stamp = f"{started:.2f}" if started and started > 0 else "0"
    return f"{PREFIX}:{socket.gethostname()}:{pid}:{stamp}"


def parse(owner: str | None) -> Holder | None:
    """The holder of a terminal lease, or None for any other owner (a chat worker, nobody)."""
    if not owner or not owner.startswith(PREFIX + ":"):
        return None
    parts = owner.split(":")
    if len(parts) not in (3, 4):
        return None
    try:
        pid = int(parts[2])
        started = float(parts[3]) if len(parts) == 4 and float(parts[3]) > 0 else None
    except ValueError:
        return None
    return Holder(parts[1], pid, started)


def is_gone(holder: Holder) -> bool:
    """True when ``holder`` runs on this host and its process no longer exists: its PID is not
    running, or it was reused by a process started at another time. A holder on another host,
    or a process we may not inspect, is never called gone."""
    if not holder.local:
        return False
    started = process_start(holder.pid)
    if started is None:
        return True
    if started < 0 or holder.started is None:
        return False
    return abs(started - holder.started) > START_TOLERANCE_S


def expiry_words(expires: datetime | None) -> str:
    return f"{expires:%Y-%m-%d %H:%M:%S} UTC" if expires is not None else "an unknown time"
