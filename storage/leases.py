"""Named leases: one process at a time runs a periodic job, whatever the number of replicas."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import or_, update
from sqlalchemy.exc import IntegrityError

from storage.db import Database
from storage.models import Lease


class LeaseRepo:
    """APScheduler cannot share a job store between processes; a row lease guards each job."""

    db: Database
    clock: Callable[[], datetime]

    def acquire_lease(self, name: str, owner: str, *, seconds: float) -> bool:
        """Take or renew the lease ``name`` for ``owner``; False while another holds it."""
        self.db.ensure_ready()
        now = self.clock()
        until = now + timedelta(seconds=seconds)
        with self.db.session() as s, s.begin():
            result = s.execute(
                update(Lease)
                .where(Lease.name == name,
                       or_(Lease.owner == owner, Lease.owner.is_(None), Lease.expires_at < now))
                .values(owner=owner, expires_at=until)
            )
            if result.rowcount == 1:  # type: ignore[attr-defined]
                return True
        try:
            with self.db.session() as s, s.begin():
                if s.get(Lease, name) is not None:
                    return False
                s.add(Lease(name=name, owner=owner, expires_at=until))
            return True
        except IntegrityError:
            return False

    def release_job_leases(self, owner: str) -> int:
        """Give up every named lease ``owner`` holds (a process shutting down), so another
        replica runs the next period's jobs without waiting for them to lapse."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(update(Lease).where(Lease.owner == owner)
                               .values(owner=None, expires_at=None))
            return int(result.rowcount or 0)  # type: ignore[attr-defined]
