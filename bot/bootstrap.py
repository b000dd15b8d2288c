"""The one place where Ghost is put together: settings → store → tools → engine.

Tests call these builders with their own settings (a test database, a fake Gemini URL) instead
of patching anything.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from bot.settings import Settings, load_settings
from bot.state import LIVE_STATUSES
from storage.store import Store

if TYPE_CHECKING:
    from bot.chat.ports import ChatPort
    from bot.chat.runtime import ChatRuntime
    from bot.terminal import Prompter
    from core.engine.loop import Engine, OutagePolicy
    from core.orchestrator.backend import CaptureBackend
    from core.orchestrator.orchestrator import CloudOrchestrator
    from core.orchestrator.orphans import Liveness
    from core.safety.approval import ApprovalPolicy, Approver
    from core.safety.shell import SafeExecShell


def build_store(settings: Settings | None = None, *, read_only: bool = False) -> Store:
    """The store. ``read_only``: for a command that only reads (a list, a status, a check),
    which must not create a database or a directory; a missing SQLite file is a
    ``DatabaseMissing`` that says so and how to create one (bot/read_only.py)."""
    settings = settings or load_settings()
    if read_only:
        from bot.read_only import open_existing

        return Store(open_existing(settings), lab=_lab_key(settings))
    from bot.db_auth import open_database

    return Store(open_database(settings), lab=_lab_key(settings))


def build_store_if_any(settings: Settings) -> Store | None:
    """The store for a listing, or None when the default database does not exist yet (a list
    on a fresh machine is simply empty). A configured GHOST_DATABASE_URL whose file is missing
    is still ``DatabaseMissing``: that is a wrong path, not an empty list."""
    from storage.errors import DatabaseMissing

    try:
        return build_store(settings, read_only=True)
    except DatabaseMissing as exc:
        if exc.default:
            return None
        raise


def _lab_key(settings: Settings) -> str | None:
    """GHOST_LAB: this process's investigations are lab sessions of that scenario."""
    if not settings.lab:
        return None
    from bot.lab_wiring import scenario_key

    return scenario_key(settings.lab)[0]


def build_shell(settings: Settings, store: Store, session_id: str, approver: Approver,
                requested_by: str | None = None,
                policy: ApprovalPolicy | None = None) -> SafeExecShell:
    from bot.lab_wiring import lab_for_session
    from core.safety.command_run import ShellLimits
    from core.safety.shell import SafeExecShell

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    lab = lab_for_session(settings, store, session_id)  # a lab session's commands: the lab's
    return SafeExecShell(session_id, audit=store, approvals=store, approver=approver,
                         data_dir=settings.data_dir.resolve(), requested_by=requested_by,
                         limits=ShellLimits(timeout_s=settings.command_timeout_s),
                         policy=policy, runner=lab.executor if lab else None)


def build_capture_backend(settings: Settings) -> CaptureBackend:
    """The Azure backend when a subscription is configured; otherwise one that says so."""
    from bot.azure_wiring import capture_backend

    return capture_backend(settings)


def build_orchestrator(settings: Settings, store: Store, shell: SafeExecShell,
                       session_id: str, *, scan_orphans: bool = False) -> CloudOrchestrator:
    from bot.lab_wiring import lab_for_session, lab_orchestrator
    from core.orchestrator.model import OrchestratorConfig
    from core.orchestrator.orchestrator import CloudOrchestrator

    lab = lab_for_session(settings, store, session_id)
    if lab is not None:  # the lab's captures; never Azure
        return lab_orchestrator(lab, store, shell, session_id,  # type: ignore[no-any-return]
                                scan_orphans=scan_orphans,
                                is_live=lambda sid: session_is_live(store, sid))
    from bot.azure_wiring import CaptureStorageInvalid, capture_storage

    try:  # an invalid setting: the backend refuses every call with the fix (azure_wiring)
        account, account_group = capture_storage(settings)
    except CaptureStorageInvalid:
        account, account_group = None, None
    config = OrchestratorConfig(local_capture_dir=settings.capture_dir.resolve(),
                                storage_auth_mode=settings.azure_storage_auth_mode,
                                storage_account=account, storage_resource_group=account_group)
    return CloudOrchestrator(shell=shell, backend=build_capture_backend(settings), tasks=store,
                             session_id=session_id, config=config, scan_orphans=scan_orphans,
                             is_session_live=lambda sid: session_is_live(store, sid))




def session_is_live(store: Store, session_id: str) -> Liveness:
    """Whether an investigation may still run, for the orphan scan.

    A chat or ``--detach`` investigation lives while its status says so (a dead worker's
    investigation is taken over by another). A terminal one lives only while its process
    does: its lease lapsed, or it was held by a `ghost investigate` on this host whose process
    is gone (killed with -9; its PID free or reused), and it is dead at once, with the session
    and process named. A holder on another host cannot be asked: until its lease expires its
    tasks are reported as maybe still running, never hidden and never cleaned up from here."""
    from bot.terminal import holders
    from core.errors import UnknownInvestigation
    from core.orchestrator.orphans import Liveness

    try:
        inv = store.get_investigation(session_id)
    except UnknownInvestigation:
        return Liveness(False, f"investigation {session_id} no longer exists")
    if inv.status not in LIVE_STATUSES:
        return Liveness(False)
    if inv.platform != "terminal":
        return Liveness(True)
    holder = holders.parse(inv.lease_owner)
    expires = inv.lease_expires_at
    if holder is None or expires is None or expires <= store.clock():
        who = holder.describe() if holder else "its `ghost investigate`"
        return Liveness(False, f"{who} stopped renewing its lease"
                        + (f" at {holders.expiry_words(expires)}" if expires else ""))
    if holders.is_gone(holder):
        return Liveness(False, f"{holder.describe()} is no longer running (killed or crashed)")
    if not holder.local:
        return Liveness(True, f"held by {holder.describe()}, which this host cannot check; "
                        f"its lease runs until {holders.expiry_words(expires)}", remote=True,
                        lease_expires_at=holders.expiry_words(expires))
    return Liveness(True)


def build_engine(
    settings: Settings, store: Store, *, prompter: Prompter, out: TextIO,
    brain: Any = None, approver: Any = None, lab_notice: bool = True,
) -> tuple[Engine, Callable[[str], CloudOrchestrator]]:
    """The terminal engine: the person at the keyboard approves (or ``approver``, e.g. the
    second engineer of ``ghost demo --yes``); output goes to ``out``. With GHOST_LAB set the
    investigation runs against the lab, and ``out`` is told so first (``ghost demo`` has its
    own banner: ``lab_notice=False``)."""
    from bot.gemini_brain import GeminiBrain
    from bot.terminal import TerminalNotifier
    from bot.terminal.activity import Activity, ThinkingBrain, watch_commands
    from bot.terminal.approver import TerminalApprover
    from core.engine.loop import Engine

    if store.lab and lab_notice:
        out.write(f"LAB RUN — GHOST_LAB={settings.lab}: this investigation runs against the "
                  "simulated estate of that scenario, not Azure (docs/lab.md).\n")
    approver = approver or TerminalApprover(prompter.stdin, out)
    activity = Activity(out)  # a live status line while a command runs or the model thinks
    shells: dict[str, SafeExecShell] = {}
    orchestrators: dict[str, CloudOrchestrator] = {}

    def shell_for(sid: str) -> SafeExecShell:
        if sid not in shells:
            shells[sid] = build_shell(settings, store, sid, approver, approver.user)
            watch_commands(shells[sid], activity)  # the [Shell] line as it starts, a live line
        return shells[sid]

    def orchestrator_for(sid: str, shell: Any = None) -> CloudOrchestrator:
        if sid not in orchestrators:
            orchestrators[sid] = build_orchestrator(settings, store, shell or shell_for(sid),
                                                    sid, scan_orphans=True)
        return orchestrators[sid]

    thinking = ThinkingBrain(brain or GeminiBrain(settings.model, settings.gemini_api_key or "",
                                                  base_url=settings.gemini_base_url), activity)
    engine = Engine(
        store=store,
        brain=thinking,
        shell_for=shell_for,
        orchestrator_for=orchestrator_for,
        rca_writer=_lab_noted(settings, store, _rca_writer(settings)),
        notifier=TerminalNotifier(out),
        audit_dir=str(settings.audit_dir), data_dir=str(settings.data_dir.resolve()),
        sleep=thinking.pausing(_sleep),  # a retry's wait says what failed and which attempt
        prices=settings.prices,
        outage=outage_policy(settings),  # the terminal waits an outage out in place
    )
    thinking.attempts = engine.retries + 1
    return engine, orchestrator_for


#: a chat worker sleeps through the first short waits of a Gemini outage; a longer one is handed
#: back (the lease is the timer) so its thread serves other investigations meanwhile
CHAT_INLINE_WAIT_S = 5.0


def outage_policy(settings: Settings, *, inline_s: float = math.inf) -> OutagePolicy:
    """GHOST_GEMINI_OUTAGE_S and GHOST_GEMINI_RETRY_MAX_S as the engine's outage policy."""
    from core.engine.loop import OutagePolicy

    cap = max(0.01, settings.gemini_retry_max_s)
    return OutagePolicy(limit_s=max(0.0, settings.gemini_outage_s),
                        first_wait_s=min(2.0, cap), max_wait_s=cap, inline_s=inline_s)


def approval_policy(settings: Settings) -> ApprovalPolicy:
    from core.safety.approval import ApprovalPolicy

    return ApprovalPolicy(approvers=settings.approvers, two_person=settings.two_person,
                          expiry_seconds=settings.approval_expiry_seconds)


def _rca_writer(settings: Settings) -> Callable[[str, str], str]:
    audit_dir = settings.audit_dir

    def write_rca(filename: str, markdown: str) -> str:
        audit_dir.mkdir(parents=True, exist_ok=True)
        path = (audit_dir / filename).resolve()
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(markdown, encoding="utf-8")
        tmp.replace(path)
        return str(path)

    return write_rca


def build_chat_engine(
    settings: Settings, store: Store, *, port_for: Callable[[str], ChatPort | None],
    brain: Any = None,
) -> ChatRuntime:
    """The chat engine: approvals are decided later by clicks, in any process.

    Nothing per-investigation is cached across calls except the shells and orchestrators, which
    hold no state of their own (everything is read from the store), so any process can serve
    any investigation.
    """
    from bot.chat.notifier import ChatApprover, ChatNotifier
    from bot.chat.runtime import ChatRuntime
    from bot.gemini_brain import GeminiBrain
    from core.engine.loop import Engine

    policy = approval_policy(settings)
    approver = ChatApprover()
    model = settings.model
    if store.lab:  # GHOST_LAB: the lab's brain, and every post marked as a lab run
        from bot.lab_wiring import lab_brain, marked_ports, open_lab

        lab = open_lab(store.lab, settings)
        logging.getLogger("ghost.lab").warning(
            "GHOST_LAB=%s: every investigation runs against the simulated estate of scenario "
            "%s (never Azure); every post says it is a lab run", settings.lab,
            lab.scenario.name)
        brain = brain or lab_brain(lab, settings)
        model = str(getattr(brain, "model", model))
        port_for = marked_ports(port_for, lab)
    shells: dict[str, SafeExecShell] = {}
    orchestrators: dict[str, CloudOrchestrator] = {}

    def shell_for(sid: str) -> SafeExecShell:
        if sid not in shells:
            inv = store.get_investigation(sid)
            shells[sid] = build_shell(settings, store, sid, approver, inv.requested_by, policy)
        return shells[sid]

    def orchestrator_for(sid: str, shell: Any = None) -> CloudOrchestrator:
        if sid not in orchestrators:
            orchestrators[sid] = build_orchestrator(settings, store, shell or shell_for(sid), sid)
        return orchestrators[sid]

    notifier = ChatNotifier(store, port_for, policy)
    engine = Engine(
        store=store,
        brain=brain or GeminiBrain(settings.model, settings.gemini_api_key or "",
                                   base_url=settings.gemini_base_url),
        shell_for=shell_for, orchestrator_for=orchestrator_for,
        rca_writer=_lab_noted(settings, store, _rca_writer(settings)), notifier=notifier,
        audit_dir=str(settings.audit_dir), data_dir=str(settings.data_dir.resolve()),
        sleep=_sleep, prices=settings.prices,
        outage=outage_policy(settings, inline_s=CHAT_INLINE_WAIT_S),
    )
    runtime = ChatRuntime(store=store, engine=engine, notifier=notifier, port_for=port_for,
                          shell_for=shell_for, policy=policy, model=model,
                          audit_dir=str(settings.audit_dir))
    # the orphan report: a fresh orchestrator each time (scanning runs once per instance)
    runtime.orphans.orchestrator_for = lambda sid, scan: build_orchestrator(
        settings, store, shell_for(sid), sid, scan_orphans=scan)
    return runtime


def _lab_noted(settings: Settings, store: Store,
               write: Callable[[str, str], str]) -> Callable[[str, str], str]:
    """In a lab process, RCA files open with a note that the estate was simulated."""
    if not store.lab:
        return write
    from bot.lab_wiring import open_lab, with_lab_note

    return with_lab_note(write, open_lab(store.lab, settings))


def _sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)
