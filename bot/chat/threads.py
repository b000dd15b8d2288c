"""Starting an investigation in a thread that already exists (Teams: the mention's own post).

``ChatRuntime.start`` posts a root message first; on Teams the engineer's ``@Ghost investigate``
post is the thread's root, and every later post needs the stored conversation reference. So the
investigation is created with its reference before anything is posted, kept not runnable until
``announce`` has posted the status, then queued.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.chat.runtime import ChatRuntime


def begin_in_thread(runtime: ChatRuntime, *, platform: str, channel: str, thread: str,
                    user: str, symptom: str, conversation_ref: Mapping[str, Any],
                    announce: Callable[[Any], None]) -> str:
    """Create, announce (``announce(investigation)`` posts the status), and queue; the id."""
    inv = runtime.store.create_investigation(
        symptom=symptom, model=runtime.model, audit_dir=runtime.audit_dir, requested_by=user,
        platform=platform, channel_ref=channel, thread_ref=thread,
        conversation_ref=dict(conversation_ref),
        status="awaiting_user")  # not runnable until the symptom turn is stored
    announce(inv)
    runtime.engine.begin(inv.session_id, symptom)  # → running: a worker may claim it now
    runtime.notifier.refresh_status(inv.session_id)
    return str(inv.session_id)
