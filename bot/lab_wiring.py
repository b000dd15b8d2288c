"""Settings → the lab (``ghost demo``, ``ghost lab``, ``GHOST_LAB``): the simulated estate behind
the same ports as Azure.

A lab investigation keeps the real gate, approvals, audit, forensics and RCA; only the runner
(the shell's last step) and the capture backend are the lab's. Which one an investigation gets
is decided by its stored lab marker, not by the process, so a lab session never reaches Azure
whichever process resumes it. Every chat post of a lab process says it is a lab run.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.settings import Settings
from core.errors import GhostError, UnknownInvestigation

if TYPE_CHECKING:
    from bot.chat.ports import ChatPort
    from lab.capture import LabCaptureBackend
    from lab.executor import LabExecutor
    from lab.scenario import Scenario
    from storage.store import Store

LAB_BADGE = "🧪 LAB RUN"


class LabUnavailable(GhostError):
    """The scenario cannot be loaded (not found, invalid, no replay)."""


@dataclass(frozen=True)
class Lab:
    """One scenario, ready: what the database stores as the marker, and the lab's ports."""

    key: str
    scenario: Scenario
    estate: Any
    runner: Any
    executor: LabExecutor
    backend: LabCaptureBackend
    capture_dir: Path

    @property
    def label(self) -> str:
        return f"{LAB_BADGE} — simulated Azure estate, scenario {self.scenario.name}"


_LABS: dict[tuple[str, str], Lab] = {}
_LOCK = threading.Lock()


def scenario_key(name_or_path: str) -> tuple[str, Path]:
    """(marker, file): a shipped scenario is stored by name, any other by absolute path."""
    from lab.scenario import ScenarioError, find_scenario, shipped_dir

    try:
        path = find_scenario(name_or_path)
    except ScenarioError as exc:
        raise LabUnavailable(exc.errors[0] if exc.errors else str(exc),
                             "`ghost lab list` shows the shipped scenarios.") from exc
    path = path.resolve()
    key = path.stem if path.parent == shipped_dir().resolve() else str(path)
    return key, path


def open_lab(name_or_path: str, settings: Settings) -> Lab:
    """The lab for a scenario (loaded once per process and data directory)."""
    key, path = scenario_key(name_or_path)
    cache = (key, str(settings.data_dir.resolve()))
    with _LOCK:
        if cache in _LABS:
            return _LABS[cache]
        from lab.capture import LabCaptureBackend
        from lab.executor import LabExecutor
        from lab.network import Estate
        from lab.runner import LabRunner
        from lab.scenario import ScenarioError, load_scenario

        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            raise LabUnavailable(f"scenario {name_or_path} is not valid: "
                                 f"{exc.errors[0] if exc.errors else exc}",
                                 f"Check it with `ghost lab check {path}`.") from exc
        estate = Estate(scenario)
        runner = LabRunner(scenario, estate)
        root = settings.data_dir.resolve() / "lab"
        lab = Lab(key=key, scenario=scenario, estate=estate, runner=runner,
                  executor=LabExecutor(runner),
                  backend=LabCaptureBackend(scenario, estate, root / "azure"),
                  capture_dir=root / "captures")
        _LABS[cache] = lab
        return lab


def lab_for_session(settings: Settings, store: Store, session_id: str) -> Lab | None:
    """The lab of a stored investigation (its marker), or of this process for a new one."""
    try:
        key = store.get_investigation(session_id).lab
    except UnknownInvestigation:
        key = store.lab
    return open_lab(key, settings) if key else None


def lab_orchestrator(lab: Lab, store: Store, shell: Any, session_id: str, *,
                     scan_orphans: bool, is_live: Callable[[str], Any]) -> Any:
    """A CloudOrchestrator over the lab's backend, polling on the lab's short clock, its
    registry reads limited to lab sessions (real tasks are never a lab's orphans)."""
    from core.orchestrator.model import OrchestratorConfig
    from core.orchestrator.orchestrator import CloudOrchestrator
    from storage.store import Store as StoreClass

    tasks = store if store.lab else StoreClass(store.db, clock=store.clock, lab=lab.key)
    config = OrchestratorConfig(local_capture_dir=lab.capture_dir, initial_poll_interval=2.0,
                                max_poll_interval=2.0, poll_burst_limit=20.0,
                                download_retry_delay=0.2, simulated=True)
    return CloudOrchestrator(shell=shell, backend=lab.backend, tasks=tasks,
                             session_id=session_id, config=config, scan_orphans=scan_orphans,
                             is_session_live=is_live)


def lab_brain(lab: Lab, settings: Settings) -> Any:
    """Gemini when there is a key (it really investigates the estate), else the replay."""
    if settings.gemini_api_key:
        from bot.gemini_brain import GeminiBrain

        return GeminiBrain(settings.model, settings.gemini_api_key,
                           base_url=settings.gemini_base_url)
    from lab.replay import ReplayBrain, ReplayError

    try:
        return ReplayBrain(lab.scenario, settings.data_dir)
    except ReplayError as exc:
        raise LabUnavailable(str(exc)) from exc


def lab_rca_note(lab: Lab) -> str:
    return (f"> **{LAB_BADGE}** — scenario `{lab.scenario.name}` ({lab.scenario.title}). "
            "The Azure estate was simulated by Ghost's lab; no real resource was read or "
            "changed. The gate, approvals, audit and capture analysis were real.\n\n")


def with_lab_note(write: Callable[[str, str], str], lab: Lab) -> Callable[[str, str], str]:
    """An RCA writer whose reports open with the lab note."""
    def write_rca(filename: str, markdown: str) -> str:
        return write(filename, lab_rca_note(lab) + markdown)
    return write_rca


class LabMarkedPort:
    """A chat port whose every post says it is a lab run (and which scenario)."""

    def __init__(self, inner: ChatPort, lab: Lab) -> None:
        self.inner = inner
        self.lab = lab
        self.tag = f"{LAB_BADGE} ({lab.scenario.name})"

    def _view(self, view: Any) -> Any:
        return dataclasses.replace(view, symptom=f"[{self.tag}] {view.symptom}")

    def post_root(self, channel: str, view: Any) -> str:
        return self.inner.post_root(channel, self._view(view))

    def update_status(self, thread: Any, view: Any) -> None:
        self.inner.update_status(thread, self._view(view))

    def post_text(self, thread: Any, text: str, *, notice: bool = False) -> None:
        self.inner.post_text(thread, f"{self.tag} · {text}", notice=notice)

    def post_command(self, thread: Any, line: Any) -> None:
        note = f"{line.note} · {self.tag}" if line.note else self.tag
        self.inner.post_command(thread, dataclasses.replace(line, note=note))

    def post_card(self, thread: Any, card: Any) -> dict[str, Any]:
        environment = f"{card.environment} — {self.lab.label}; nothing real runs"
        return self.inner.post_card(thread, dataclasses.replace(card, environment=environment))

    def close_card(self, ref: Mapping[str, Any], card: Any, outcome: Any) -> None:
        environment = f"{card.environment} — {self.lab.label}; nothing real runs"
        self.inner.close_card(ref, dataclasses.replace(card, environment=environment), outcome)

    def post_prompt(self, thread: Any, prompt: Any) -> dict[str, Any] | None:
        return self.inner.post_prompt(
            thread, dataclasses.replace(prompt, text=f"{self.tag} · {prompt.text}"))

    def close_prompt(self, ref: Mapping[str, Any], prompt: Any, by: str | None,
                     choice: str) -> None:
        self.inner.close_prompt(ref, prompt, by, choice)

    def post_rca(self, thread: Any, filename: str, markdown: str, summary: Any, *,
                 noted: Callable[[str], None] | None = None) -> str | None:
        marked = dataclasses.replace(summary, root_cause=f"[{self.tag}] {summary.root_cause}")
        if not markdown.startswith(lab_rca_note(self.lab)):
            markdown = lab_rca_note(self.lab) + markdown
        return self.inner.post_rca(thread, f"lab-{filename}", markdown, marked, noted=noted)

    def tell(self, channel: str, user: str, text: str, thread_ref: str | None = None) -> None:
        self.inner.tell(channel, user, f"{self.tag} · {text}", thread_ref)

    def keyed(self, key: str, *, check: bool = False) -> Any:
        """The inner port's keyed posts (``bot.chat.ports.KeyedPosts``), still marked as a lab
        run; without this the attribute fall-through below would hand back an unmarked port."""
        keyed = getattr(self.inner, "keyed", None)
        if not callable(keyed):
            return self
        return LabMarkedPort(keyed(key, check=check), self.lab)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def marked_ports(port_for: Callable[[str], ChatPort | None],
                 lab: Lab) -> Callable[[str], ChatPort | None]:
    def lab_port_for(platform: str) -> ChatPort | None:
        inner = port_for(platform)
        return None if inner is None else LabMarkedPort(inner, lab)
    return lab_port_for
