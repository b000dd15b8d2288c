"""The store: one object implementing every storage port, handed out by the bootstrap."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core.session_state import utc_now
from storage.approvals import ApprovalRepo
from storage.audit import AuditRepo
from storage.chat_events import ChatEventRepo
from storage.db import Database
from storage.investigations import InvestigationRepo
from storage.leases import LeaseRepo
from storage.tasks import TaskRepo
from storage.turns import TurnRepo


class Store(InvestigationRepo, AuditRepo, TaskRepo, TurnRepo, ApprovalRepo, LeaseRepo,
            ChatEventRepo):
    """SQL persistence for investigations, turns, approvals, audit and task events."""

    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utc_now,
                 lab: str | None = None) -> None:
        self.db = db
        self.clock = clock
        #: set in a lab process: new investigations are lab sessions of this scenario, and
        #: claims and cross-session task reads see lab sessions only (never real ones)
        self.lab = lab

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = False, lab: str | None = None) -> Store:
        return cls(Database(url, auto_migrate=auto_migrate), lab=lab)
