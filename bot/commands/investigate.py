"""`ghost investigate ["SYMPTOM"] [--resume SID] [--model M] [--audit-dir D]`: the terminal run.

The steps of ghost-design §3 (key check, session load or create with the checksum prompt,
orphan report, the symptom), then the loop until it needs the person at the keyboard, and the
RCA. Ctrl-C or a Gemini outage leaves the investigation saved with the resume command printed.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from bot.settings import Settings, load_settings
from bot.terminal import Prompter, TerminalLease, banner, closing_banner
from bot.terminal.style import say
from core.errors import GhostError
from core.session_state import ChecksumStatus, check_checksum

NO_KEY = (
    "[ERROR] GEMINI_API_KEY is not set.\n"
    "  Set GEMINI_API_KEY in the environment or add it to .env (see .env.example), e.g.\n"
    "    export GEMINI_API_KEY=...   # from https://aistudio.google.com/apikey\n"
)


class Aborted(GhostError):
    exit_code = 1


def resume_hint(session_id: str) -> str:
    return f"Session saved. Resume with: ghost investigate --resume {session_id}"


def say_resume(out: TextIO, session_id: str) -> None:
    """:func:`resume_hint` on the terminal: the command whole on a line of its own when the
    screen is too narrow for both (never a line break inside the command)."""
    from bot.terminal.style import say_command

    say_command(out, "Session saved. Resume with:", f"ghost investigate --resume {session_id}",
                indent="")


def investigate(args: argparse.Namespace) -> int:
    if getattr(args, "detach", False) or getattr(args, "json", False):
        from bot.contract.detach import detach  # create it for a `ghost worker`, print its id

        return detach(args)
    if args.symptom is not None and not args.symptom.strip() and not args.resume:
        # a blank argument is a slip, not an investigation: nothing is created for it
        print("ghost: No symptom given (the argument is blank); nothing to investigate. Run "
              '`ghost investigate "what is broken"`, or with no argument to be asked.',
              file=sys.stderr)
        return 1
    settings = load_settings()
    if args.model:
        settings.model = args.model
    if args.audit_dir:
        settings.audit_dir_override = args.audit_dir
    if not settings.gemini_api_key:
        sys.stderr.write(NO_KEY)
        return 1
    return run(settings, symptom=args.symptom, resume=args.resume)


def run(settings: Settings, *, symptom: str | None, resume: str | None,
        stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    from bot.bootstrap import build_engine, build_store
    from core.engine.loop import BrainUnavailable

    out = stdout or sys.stdout
    prompter = Prompter(stdin, out)
    store = build_store(settings)
    engine, orchestrators = build_engine(settings, store, prompter=prompter, out=out)
    session_id = ""
    lease: TerminalLease | None = None
    symptom = (symptom or "").strip() or None
    try:
        fresh_from: str | None = None
        if resume:
            session_id, fresh_from = _resume(store, engine, resume, prompter, out, settings)
            if session_id:
                lease = _hold(store, session_id, settings)
            else:  # Fresh: a new investigation of the same symptom, tied to the old one
                symptom = symptom or store.get_investigation(resume).symptom.strip() or None
            if session_id and not store.turns(session_id):
                # interrupted before the symptom was given: start it now
                symptom = symptom or store.get_investigation(session_id).symptom.strip()
                _begin(engine, store, session_id, symptom, prompter, out)
        if not session_id:
            inv = store.create_investigation(
                symptom=symptom or "", model=settings.model, audit_dir=str(settings.audit_dir),
                requested_by=prompter_user(), platform="terminal", status="queued",
                resumed_from=fresh_from)
            session_id = inv.session_id
            lease = _hold(store, session_id, settings)
            banner(session_id, out)
            from bot.startup import orphan_check

            orphan_check(store, orchestrators(session_id), session_id, prompter, out)
            _begin(engine, store, session_id, symptom, prompter, out)
        return _drive(engine, store, session_id, prompter, out,
                      resumed=bool(resume) and session_id == resume)
    except KeyboardInterrupt:
        out.write("\n" if session_id else "\nInterrupted.\n")
        if session_id:
            say_resume(out, session_id)
        return 130
    except BrainUnavailable as exc:
        say(out, f"\n[ERROR] {exc.message}")
        say_resume(out, session_id)
        return 1
    finally:
        if lease is not None:
            lease.release()


def _hold(store: object, session_id: str, settings: Settings) -> TerminalLease:
    """This process's lease on the investigation, renewed while it lives."""
    lease = TerminalLease(store, session_id, seconds=settings.lease_seconds)
    if not lease.acquire():
        raise Aborted(f"Investigation {session_id} is being run by another live process.",
                      "Wait for it to finish (or stop it) and resume again.")
    return lease


def _begin(engine: object, store: object, session_id: str, symptom: str | None,
           prompter: Prompter, out: TextIO) -> None:
    """The symptom (the argument, or asked for) as the first turn."""
    from core.engine.loop import Engine
    from storage.store import Store

    assert isinstance(engine, Engine) and isinstance(store, Store)
    if not symptom:
        out.write("\n=== Ghost Agent Ready ===\nWhat network problem should I investigate?\n")
        symptom = (prompter.ask("> ") or "").strip()
        if not symptom:
            store.set_status(session_id, "cancelled")
            raise Aborted("No symptom given; nothing to investigate.",
                          'Run `ghost investigate "what is broken"` with the symptom.')
        store_symptom(store, session_id, symptom)
    engine.begin(session_id, symptom)


def prompter_user() -> str:
    from bot.terminal.approver import local_user

    return local_user()


def store_symptom(store: object, session_id: str, symptom: str) -> None:
    """The symptom typed at the prompt becomes the investigation's title too."""
    setter = getattr(store, "set_symptom", None)
    if setter is not None:
        setter(session_id, symptom)


def _resume(store: object, engine: object, session_id: str, prompter: Prompter, out: TextIO,
            settings: Settings) -> tuple[str, str | None]:
    """Load a saved investigation: (its id, None), or ("", the old id) when the user chose a
    fresh one (ghost-design §9: a corrupted state offers [F]resh / [A]bort)."""
    from core.engine.loop import Engine
    from storage.store import Store

    assert isinstance(store, Store) and isinstance(engine, Engine)
    inv = store.get_investigation(session_id)
    doc = inv.document
    warning = None
    corrupted = inv.corrupted or (None if inv.state.get("session_id") == session_id
                                  else "it does not name this session")
    if corrupted:
        say(out, f"Warning: session state corrupted ({corrupted}).")
        choice = prompter.choose("[F]resh session / [A]bort > ", {"f": "fresh", "a": "abort"})
        if choice != "fresh":
            raise Aborted("Aborted: the saved session state is corrupted.",
                          "Start a new investigation, or resume again and choose Fresh.")
        return "", session_id
    if check_checksum(doc) is ChecksumStatus.MISMATCH:
        out.write("Warning: session state checksum mismatch — it may have been modified "
                  "outside Ghost.\n")
        choice = prompter.choose("[C]ontinue anyway  [F]resh session  [A]bort > ",
                                 {"c": "continue", "f": "fresh", "a": "abort"})
        if choice == "fresh":
            return "", session_id
        if choice != "continue":
            raise Aborted("Aborted: session checksum mismatch.")
        warning = ("The session state's checksum did not match when it was resumed; the "
                   "engineer chose to continue. Treat the hypothesis log with care.")
    banner(session_id, out)
    say(out, f"Resuming {session_id}: {inv.symptom}")
    engine.mark_resumed(session_id, integrity_warning=warning)
    return session_id, None


def _usage(engine_state: object) -> str | None:
    """Tokens and estimated cost of the investigation (GHOST_PRICES, docs/eval.md); None
    when no model call reported usage (a replay)."""
    from bot.settings import load_settings
    from core.engine.usage import recorded, usage_line

    state = engine_state if isinstance(engine_state, dict) else None
    return usage_line(state, load_settings().prices) if recorded(state) else None


def _decide_open_approval(engine: object, store: object, approval_id: str | None) -> bool:
    """Ask again for a request that is still pending; False when there is nothing to ask."""
    from core.engine.loop import Engine
    from core.safety.approval_records import ST_PENDING, request_view
    from core.safety.shell import SafeExecShell
    from storage.store import Store

    assert isinstance(engine, Engine) and isinstance(store, Store)
    approval = store.get_approval(approval_id) if approval_id else None
    if approval is None or approval.status != ST_PENDING:
        return False
    shell = engine.shell_for(approval.session_id)
    if not isinstance(shell, SafeExecShell) or not shell.approver.decides_immediately:
        return False
    decision = shell.approver.request(request_view(approval))
    if decision is None:
        return False
    shell.decide(approval.approval_id, decision)
    return True


def _drive(engine: object, store: object, session_id: str, prompter: Prompter,
           out: TextIO, *, resumed: bool = False) -> int:
    from core.engine.loop import Engine
    from storage.store import Store

    assert isinstance(engine, Engine) and isinstance(store, Store)
    if resumed:
        # stopped at Continue/Done: the answer it asks about was printed by an earlier run
        engine_state = store.get_investigation(session_id).engine_state or {}
        last_text = str(engine_state.get("last_text") or "").strip()
        if engine_state.get("phase") == "awaiting_user" and last_text:
            say(out, f"\n[Ghost Agent] {last_text}")
    while True:
        outcome = engine.advance(session_id)
        if outcome.kind == "awaiting_user":
            choice = prompter.choose("Continue investigation? [C]ontinue / [D]one > ",
                                     {"c": "continue", "d": "done"})
            if choice is None:
                say_resume(out, session_id)
                return 0
            if choice == "done":
                engine.finish(session_id)
            else:
                text = prompter.ask("Your next instruction > ")
                engine.instruct(session_id, (text or "").strip() or "Continue.")
        elif outcome.kind == "turn_limit":
            out.write("[Ghost Agent] Maximum investigation turns reached.\n")
            choice = prompter.choose("Options: [E]xtend 10 more turns / [G]enerate RCA now > ",
                                     {"e": "extend", "g": "generate"})
            if choice == "extend":
                engine.extend(session_id)
            elif choice == "generate":
                engine.finish(session_id)
            else:
                say_resume(out, session_id)
                return 0
        elif outcome.kind == "parked":
            minutes = engine.outage.limit_s / 60
            say(out, f"\n[Gemini] Gemini has been unavailable for {minutes:.0f} min "
                f"({outcome.text.strip().rstrip('.')}). The investigation is parked where it "
                "was; nothing is lost.\n" + resume_hint(session_id))
            return 1
        elif outcome.kind == "awaiting_approval":
            # an approval left open by Ctrl-C (or a crash): the person at the keyboard decides
            if _decide_open_approval(engine, store, outcome.approval_id):
                continue
            say_resume(out, session_id)
            return 0
        else:
            inv = store.get_investigation(session_id)
            rca = (inv.engine_state or {}).get("rca") or {}
            if outcome.rca_error and outcome.rca_markdown:
                say(out, f"[ERROR] Could not write the RCA ({outcome.rca_error}); here it "
                    "is:\n")
                out.write(outcome.rca_markdown + "\n")
            closing_banner(out, path=outcome.rca_path, confidence=str(rca.get("confidence")),
                           turns=int(inv.state.get("turn_count") or 0),
                           duration_s=rca.get("duration_s"), error=outcome.rca_error,
                           already_done=outcome.already_done,
                           usage=_usage(inv.engine_state))
            return 0
