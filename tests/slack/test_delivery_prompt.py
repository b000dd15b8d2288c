"""A process killed after the engine saved "waiting for the engineer" and before it owed the
thread its Continue / Done prompt: nobody advances a waiting investigation, so the periodic
reconcile must owe the prompt, once (issue 23)."""

from __future__ import annotations

from typing import Any

from bot.slack import blocks
from bot.worker import Worker
from core.session_state import utc_now
from tests.fakes.gemini_server import text_turn
from tests.slack.conftest import CHANNEL, REQUESTER, SlackHarness
from tests.slack.test_investigation_flow import start


def _prompts(slack: SlackHarness, inv: Any) -> list[dict[str, Any]]:
    return [m for m in slack.fake.thread(CHANNEL, str(inv.thread_ref))
            if blocks.CONTINUE in str(m.get("blocks"))]


def test_a_prompt_lost_to_a_kill_is_posted_by_the_reconcile_once(
        slack: SlackHarness, fake_gemini: Any) -> None:
    runtime = slack.services.runtime
    # the worker dies right after the engine's save: its after-advance never runs
    slack.worker = Worker(store=slack.store, engine=runtime.engine,
                          shell_for=runtime.shell_for, after=lambda _sid, _outcome: None,
                          failed=runtime.failed, owner="dying-worker", lease_seconds=30,
                          before=runtime.before_advance)
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    assert _prompts(slack, inv) == []

    runtime.reconcile_chat(utc_now())
    runtime.reconcile_chat(utc_now())  # a second pass owes nothing more
    (prompt,) = _prompts(slack, inv)
    assert blocks.DONE in str(prompt["blocks"])
    # and it works: Done moves the investigation on
    slack.click(blocks.DONE, slack.prompt_value(inv), REQUESTER, message_ts=prompt["ts"])
    assert slack.store.get_investigation(inv.session_id).status == "queued"


def test_a_root_posted_by_a_holder_killed_before_recording_it_is_found_not_posted_again(
        slack: SlackHarness, fake_gemini: Any) -> None:
    """The dead holder's root reached Slack (with the investigation's key in its metadata)
    but not the database: the next holder finds it and the thread goes on under it."""
    from bot.chat.status import status_view

    runtime = slack.services.runtime
    fake_gemini.enqueue(text_turn("Which resource group?"))
    response = slack.slash("investigate web-01 cannot reach redis on 6379")
    assert response.status == 200
    inv = slack.only_investigation()
    # what the killed holder did: claimed the root, posted it, died before recording it
    slack.store.change_conversation_ref(inv.session_id, lambda ref: ref.__setitem__(
        "root", {**ref["root"], "state": "posting"}))
    port = runtime.port_for("slack").keyed(f"root:{inv.session_id}")
    first = port.post_root(CHANNEL, status_view(inv))

    slack.worker.run_until_idle()
    roots = [m for m in slack.fake.called("chat.postMessage") if not m.args.get("thread_ts")]
    assert len(roots) == 1
    after = slack.store.get_investigation(inv.session_id)
    assert after.thread_ref == first and after.status == "awaiting_user"
    assert _prompts(slack, after)  # the thread went on under the one root
