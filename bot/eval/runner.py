"""Play one scenario as a full lab investigation and score it.

The investigation is ``ghost demo``'s (``bot.lab_wiring.open_lab`` for the estate, the demo's
``AutoPrompter`` for Continue/Done, ``build_engine`` for the engine, ``_begin``/``_drive`` of
``ghost investigate`` for the loop), with two differences: the approver follows the eval's
policy instead of approving everything, and each run has its own data directory and SQLite
database, so runs can go in parallel and an eval never writes into the production database.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.settings import Settings
from core.engine.usage import Price, priced, recorded
from core.errors import GhostError
from core.safety.approval import ApprovalRequest, Decision
from lab.eval.policy import decide
from lab.eval.record import RunRecord, file_sha256
from lab.eval.scoring import Transcript, score

EVAL_USER = "ghost-eval"
_MIGRATING = threading.Lock()


def ghost_version() -> str:
    from bot import __version__

    return __version__


class EvalApprover:
    """Decides every RISKY command at once, by the eval's ``--approve-policy``."""

    decides_immediately = True

    def __init__(self, policy: str, capture_dir: Path | None) -> None:
        self.policy = policy
        self.capture_dir = capture_dir
        self.user = EVAL_USER  # the requester; the approver is named after the policy
        self.actor = f"ghost-eval (--approve-policy {policy})"

    def request(self, request: ApprovalRequest) -> Decision:
        verdict = decide(request.command, self.policy, capture_dir=self.capture_dir)
        if verdict.approve:
            return Decision.approve(self.actor)
        return Decision.deny(self.actor, verdict.reason)


@dataclass(frozen=True)
class EvalOptions:
    policy: str = "reads"
    replay: bool = False  # play the scenario's replay even with a Gemini key
    prices: Mapping[str, Price] = field(default_factory=dict)


def run_settings(settings: Settings, data_dir: Path) -> Settings:
    """The user's settings (model, key, endpoint) with a data directory of the run's own."""
    return settings.model_copy(update={
        "data_dir": data_dir, "database_url": None, "audit_dir_override": None,
        "capture_dir_override": None, "lab": None})


def _one_line(exc: BaseException) -> str:
    text = str(exc) if isinstance(exc, GhostError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split()) or type(exc).__name__


def run_scenario(path: Path, settings: Settings, options: EvalOptions, *, repeat: int,
                 data_dir: Path) -> RunRecord:
    """Play ``path`` once in ``data_dir`` and score it; never raises for a failed run."""
    from bot.bootstrap import build_engine, build_store
    from bot.commands.demo import AutoPrompter
    from bot.commands.investigate import _begin, _drive, _hold
    from bot.lab_wiring import lab_brain, open_lab
    from lab.replay import ReplayBrain, ReplayError

    begun = time.monotonic()
    record = RunRecord(scenario=path.stem, category="?", scenario_file=str(path),
                       scenario_sha256=file_sha256(path), replay_sha256=None,
                       model="replay" if options.replay or not settings.gemini_api_key
                       else settings.model, ghost_version=ghost_version(), repeat=repeat,
                       approve_policy=options.policy)
    out = io.StringIO()
    store: Any = None
    scenario: Any = None
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        local = run_settings(settings, data_dir)
        lab = open_lab(str(path), local)
        scenario = lab.scenario
        local.lab = lab.key
        record.category = scenario.truth.category
        record.replay_sha256 = file_sha256(scenario.replay_path())
        try:
            brain = (ReplayBrain(scenario, local.data_dir) if options.replay
                     else lab_brain(lab, local))
        except ReplayError as exc:
            raise GhostError(str(exc)) from exc
        record.model = str(brain.model)
        prompter = AutoPrompter(out)
        store = build_store(local)
        with _MIGRATING:  # alembic is not thread-safe: create the run's database alone
            store.db.ensure_ready()
        engine, _ = build_engine(local, store, prompter=prompter, out=out, brain=brain,
                                 approver=EvalApprover(options.policy, lab.capture_dir),
                                 lab_notice=False)
        inv = store.create_investigation(
            symptom=scenario.symptom, model=record.model, audit_dir=str(local.audit_dir),
            requested_by=EVAL_USER, platform="terminal", status="queued", lab=lab.key)
        record.session_id = inv.session_id
        lease = _hold(store, inv.session_id, local)
        try:
            _begin(engine, store, inv.session_id, scenario.symptom, prompter, out)
            _drive(engine, store, inv.session_id, prompter, out)
        finally:
            lease.release()
    except Exception as exc:  # noqa: BLE001 - a run that errors is scored, not fatal
        record.error = _one_line(exc)
    record.wall_s = round(time.monotonic() - begun, 2)
    if scenario is not None and store is not None and record.session_id:
        _score(record, scenario, store, options)
    (data_dir / "transcript.txt").write_text(out.getvalue(), encoding="utf-8")
    return record


def transcript_of(store: Any, session_id: str) -> Transcript:
    """What the store holds about one investigation, as the scorer reads it."""
    inv = store.get_investigation(session_id)
    engine = inv.engine_state or {}
    completion = engine.get("completion")
    return Transcript(
        completion=completion if isinstance(completion, Mapping) else None,
        hypothesis_log=list(inv.state.get("hypothesis_log") or []),
        model_turns=[t["content"] for t in store.turns(session_id) if t.get("role") == "model"],
        audit_records=store.audit_records(session_id),
        task_events=store.task_events(session_id),
        turn_count=int(inv.state.get("turn_count") or 0),
        usage=recorded(engine))


def _score(record: RunRecord, scenario: Any, store: Any, options: EvalOptions) -> None:
    assert record.session_id is not None
    try:
        transcript = transcript_of(store, record.session_id)
    except Exception as exc:  # noqa: BLE001 - nothing stored to score: the error says why
        record.error = record.error or _one_line(exc)
        return
    result = score(scenario, transcript)
    # the engine's usageMetadata per model call, each priced by the model that answered it
    usage, record.cost_usd = priced(transcript.usage, options.prices, record.model)
    record.model_calls = usage.calls
    record.prompt_tokens, record.output_tokens = usage.prompt, usage.output
    record.thinking_tokens = usage.thinking
    record.solved = result.solved.ok and record.error is None
    record.solved_reasons = list(result.solved.reasons)
    record.evidence = result.evidence.ok and record.error is None
    record.evidence_reasons = list(result.evidence.reasons)
    record.grounded = result.grounded.ok and record.error is None
    record.grounded_reasons = list(result.grounded.reasons)
    record.cited_audit_ids = list(result.cited)
    record.fault_audit_ids = list(result.fault_records)
    record.safe, record.risky_approved = result.safety.safe, result.safety.risky_approved
    record.risky_denied, record.forbidden = result.safety.risky_denied, result.safety.forbidden
    record.turns, record.commands = result.effort.turns, result.effort.commands
    record.captures = result.effort.captures
    completion = transcript.completion or {}
    record.root_cause = str(completion.get("root_cause_summary") or "") or None
    confidence = completion.get("confidence")
    record.confidence = str(confidence) if confidence else None
