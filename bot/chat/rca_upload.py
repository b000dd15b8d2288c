"""The RCA file in the thread: uploaded once, retried when nothing was sent, checked when
unknown.

``conversation_ref["rca_upload"]`` is the record: ``uploading`` (claimed, with a deadline
``until``; ``file_id`` once the platform created the file), ``retry`` (failed before anything
reached the thread; ``not_before``), ``unconfirmed`` (no answer to the step that shares the
file), ``interrupted`` (the platform cannot tell; the thread was told ``/ghost resume``),
``posted`` (with ``rca_posted``). Every change is a compare-and-set under the row lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from bot.chat.endings import rca_interrupted, rca_summary
from bot.chat.outbox import NothingSent, Outbox, backoff, transient
from bot.chat.ports import ChatPort
from core.session_state import iso_utc, utc_now

log = logging.getLogger(__name__)

#: an RCA upload claim lasts this long (renewed when the file is created); after it, the
#: reconcile finds out whether the file reached the thread
RCA_CLAIM_S = 180.0
#: after an answer that leaves it unknown whether the file arrived, look again this late
RCA_CHECK_S = 30.0
#: uploads that failed before anything was sent are retried this many times by themselves
RCA_MAX_ATTEMPTS = 20
#: ``rca_upload.state``: claimed / failed before anything was sent, retry at ``not_before`` /
#: the last answer left it unknown / given up (said so in the thread) / in the thread
RCA_UPLOADING, RCA_RETRY, RCA_UNCONFIRMED = "uploading", "retry", "unconfirmed"
RCA_INTERRUPTED, RCA_POSTED = "interrupted", "posted"


class RcaUploads:
    """Posts the RCA of finished investigations; any process, any number of times."""

    def __init__(self, store: Any, port_for: Callable[[str], ChatPort | None],
                 outbox: Outbox) -> None:
        self.store = store
        self.port_for = port_for
        self.outbox = outbox

    def post_once(self, session_id: str, now: datetime | None = None) -> bool:
        """Upload the RCA unless an upload is claimed or done: exactly once when the port can
        tell (Slack), at most once by itself otherwise.

        The claim (``rca_upload`` = uploading, with a deadline) is a compare-and-set on the
        row; the port reports the file id before the step that puts it into the thread
        (``noted``), and the id and ``rca_posted`` are recorded after it. A failure before
        that step (``NothingSent``) is retried with a backoff by itself (``reconcile``);
        a failure or a crash after it leaves it unknown whether the file arrived, which
        ``reconcile`` finds out once the claim's deadline passed (docs/reliability.md).
        """
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        if port is None or inv.status != "completed" or not inv.rca_markdown or \
                not inv.thread_ref:
            return False
        now = now or utc_now()
        at = iso_utc(now)

        def claim(ref: dict[str, Any]) -> bool:
            upload = ref.get("rca_upload") or {}
            if ref.get("rca_posted") or (upload and not (
                    upload.get("state") == RCA_RETRY and
                    str(upload.get("not_before") or "") <= at)):
                return False
            ref["rca_upload"] = {"state": RCA_UPLOADING, "at": at,
                                 "until": iso_utc(now + timedelta(seconds=RCA_CLAIM_S)),
                                 "attempts": int(upload.get("attempts") or 0) + 1}
            return True

        if not self.store.change_conversation_ref(session_id, claim):
            return False

        def noted(file_id: str) -> None:  # the file exists, not yet in the thread
            self._rca_change(session_id, at, file_id=file_id, until=iso_utc(
                utc_now() + timedelta(seconds=RCA_CLAIM_S)))

        try:
            file_id = port.post_rca(inv, f"ghost_rca_{session_id}.md", inv.rca_markdown,
                                    rca_summary(inv), noted=noted)
        except NothingSent as exc:
            self._rca_not_sent(session_id, at, exc)
            return False
        except Exception as exc:  # noqa: BLE001 - unknown whether it arrived: find out later
            log.warning("RCA upload of %s: no answer to its last step (%s: %s); checking "
                        "again in %.0fs whether it reached the thread", session_id,
                        type(exc).__name__, exc, RCA_CHECK_S)
            self._rca_change(session_id, at, state=RCA_UNCONFIRMED, error=str(exc)[:200],
                             until=iso_utc(utc_now() + timedelta(seconds=RCA_CHECK_S)))
            return False
        self._rca_posted(session_id, file_id)
        return True

    def _rca_change(self, session_id: str, at: str, **values: Any) -> bool:
        """Change the upload record if it is still the claim made at ``at``."""
        def change(ref: dict[str, Any]) -> bool:
            upload = ref.get("rca_upload") or {}
            if upload.get("at") != at or ref.get("rca_posted"):
                return False
            ref["rca_upload"] = {**upload, **values}
            if values.get("state") == RCA_POSTED:
                ref["rca_posted"] = True
            return True
        return bool(self.store.change_conversation_ref(session_id, change))

    def _rca_posted(self, session_id: str, file_id: str | None) -> None:
        self.store.change_conversation_ref(session_id, lambda ref: ref.update(
            rca_upload={**(ref.get("rca_upload") or {}), "state": RCA_POSTED,
                        "file_id": file_id or (ref.get("rca_upload") or {}).get("file_id")},
            rca_posted=True))

    def _rca_not_sent(self, session_id: str, at: str, error: NothingSent) -> None:
        """Nothing reached the thread: try again later, or say so when it is for good."""
        cause = error.__cause__ or error
        inv = self.store.get_investigation(session_id)
        attempts = int(((inv.conversation_ref or {}).get("rca_upload") or {}).get("attempts")
                       or 1)
        if transient(cause) and attempts < RCA_MAX_ATTEMPTS:
            wait = backoff(attempts)
            log.warning("RCA upload of %s failed before anything was sent (%s: %s); trying "
                        "again in %.0fs (attempt %d)", session_id, type(cause).__name__,
                        cause, wait, attempts)
            self._rca_change(session_id, at, state=RCA_RETRY, error=str(cause)[:200],
                             not_before=iso_utc(utc_now() + timedelta(seconds=wait)))
            return
        log.error("RCA upload of %s refused (%s: %s); the thread is told how to retry",
                  session_id, type(cause).__name__, cause)
        self._rca_change(session_id, at, error=str(cause)[:200])
        self._mark_rca_interrupted(session_id, inv, RCA_UPLOADING)

    def reconcile(self, now: datetime, stale_after: timedelta | None = None) -> int:
        """The periodic check of finished investigations' RCA files: one nobody started
        uploading (a crash right after the investigation finished) or due for a retry is
        uploaded; one whose claim's deadline passed (a crash mid-upload, no answer to the
        last step) is checked: in the thread → recorded; certainly not → uploaded again;
        the platform cannot tell → said in the thread with the retry command, once.
        ``stale_after`` overrides the claim's own deadline (older records have none)."""
        count = 0
        at = iso_utc(now)
        for inv in self.store.list_investigations(statuses=("completed",), limit=200):
            ref = inv.conversation_ref or {}
            upload = ref.get("rca_upload") or {}
            if ref.get("rca_posted") or not inv.rca_markdown:
                continue
            state = upload.get("state")
            if not upload or (state == RCA_RETRY and str(upload.get("not_before") or "") <= at):
                count += int(self.post_once(inv.session_id, now))
            elif state in (RCA_UPLOADING, RCA_UNCONFIRMED) and self._expired(upload, now,
                                                                             stale_after):
                count += int(self._settle_rca(inv, upload, now))
        return count

    @staticmethod
    def _expired(upload: Any, now: datetime, stale_after: timedelta | None) -> bool:
        if stale_after is not None or not upload.get("until"):
            return str(upload.get("at") or "") < iso_utc(
                now - (stale_after or timedelta(seconds=RCA_CLAIM_S)))
        return str(upload.get("until")) < iso_utc(now)

    def _settle_rca(self, inv: Any, upload: Any, now: datetime) -> bool:
        """After a crash or no answer: did the file reach the thread?"""
        sid = str(inv.session_id)
        port = self.port_for(inv.platform)
        if port is None:
            return False
        check = getattr(port, "rca_arrived", None)
        file_id = upload.get("file_id")
        arrived: bool | None = None
        if check is not None:  # such a port reports the file id before the final step
            arrived = check(inv, str(file_id)) if file_id else False
        if arrived is None:
            return self._mark_rca_interrupted(sid, inv, str(upload.get("state")))
        if arrived:
            log.info("RCA of %s had reached its thread (file %s); recorded", sid, file_id)
            return self._rca_change(sid, str(upload.get("at")), state=RCA_POSTED)
        log.warning("RCA of %s did not reach its thread (file %s); uploading it again",
                    sid, file_id)
        if not self._rca_change(sid, str(upload.get("at")), state=RCA_RETRY, not_before=""):
            return False
        return self.post_once(sid, now)

    def _mark_rca_interrupted(self, session_id: str, inv: Any, expected: str) -> bool:
        def swap(ref: dict[str, Any]) -> bool:
            upload = ref.get("rca_upload") or {}
            if upload.get("state") != expected:
                return False
            ref["rca_upload"] = {**upload, "state": RCA_INTERRUPTED}
            return True

        if not self.store.change_conversation_ref(session_id, swap):
            return False
        self.outbox.send(session_id, "text", {"text": rca_interrupted(session_id),
                                              "notice": True},
                         key=f"rca_interrupted:{iso_utc(utc_now())}")
        return True
