"""`ghost investigate "SYMPTOM" --detach [--json] [--as USER]`: open an investigation for a
`ghost worker` and return its id at once.

It lives in the ``cli`` platform: no chat thread; its approvals are decided with `ghost approvals
decide` (or by the approvers list), its progress read with `ghost status` and `ghost watch`.
A worker with no chat configured runs only these (:func:`cli_services`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from bot.contract.codes import Code, ContractError
from bot.contract.output import emit
from bot.contract.views import CLI_CHANNEL, CLI_PLATFORM


@dataclass(frozen=True)
class CliServices:
    """What `ghost worker` needs when no chat is configured: a runtime without chat ports."""

    runtime: Any
    store: Any
    port: Any = None  # no chat port: nothing posts card edits


class _NoBrain:
    """Opening an investigation stores its first turn; only a worker asks Gemini, so opening
    one needs no API key."""

    model = "none"

    def generate(self, *_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("ghost investigate --detach never calls the model")


def cli_services(settings: Any, store: Any, *, brain: Any = None) -> CliServices:
    from bot.bootstrap import build_chat_engine

    return CliServices(runtime=build_chat_engine(settings, store, port_for=lambda _p: None,
                                                 brain=brain), store=store)


def detach(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store
    from bot.settings import load_settings
    from bot.terminal.approver import local_user

    if not args.detach:
        raise ContractError(Code.INVALID_ARGUMENT, "--json goes with --detach: an attached "
                            "investigation talks to the terminal.",
                            'Run `ghost investigate "SYMPTOM" --detach --json`.')
    if args.resume:
        raise ContractError(Code.INVALID_ARGUMENT, "--detach opens a new investigation; it "
                            "does not resume one.", f"Use `ghost status {args.resume}` for "
                            "what resumes it.")
    symptom = (args.symptom or "").strip()
    if not symptom:
        raise ContractError(Code.INVALID_ARGUMENT, "No symptom given; nothing to investigate.",
                            'Run `ghost investigate "what is broken" --detach --json`.')
    settings = load_settings()
    if not settings.gemini_api_key and not settings.lab:
        # nothing could ever run it: refused, not queued to stay "running" forever
        raise ContractError(Code.NO_WORKER, "No worker can run this investigation: "
                            "GEMINI_API_KEY is not set, so nothing was created.",
                            "Set GEMINI_API_KEY (or GHOST_LAB for a lab run) here and for "
                            "the `ghost worker`, then run the command again.")
    if args.model:
        settings.model = args.model
    if args.audit_dir:
        settings.audit_dir_override = args.audit_dir
    requester = (args.requested_by or "").strip() or local_user()
    store = build_store(settings)
    services = cli_services(settings, store, brain=_NoBrain())
    inv = store.create_investigation(
        symptom=symptom, model=settings.model, audit_dir=str(settings.audit_dir),
        requested_by=requester, platform=CLI_PLATFORM, channel_ref=CLI_CHANNEL,
        status="awaiting_user")  # not runnable until the symptom turn is stored
    services.runtime.engine.begin(inv.session_id, symptom)  # → running: a worker claims it
    sid = inv.session_id
    if args.json:
        emit({"state": store.get_investigation(sid).status, "symptom": symptom,
              "requested_by": requester, "platform": CLI_PLATFORM,
              "status_command": f"ghost status {sid} --json",
              "watch_command": f"ghost watch {sid} --jsonl"}, session_id=sid)
    else:
        print(sid)
    return 0
