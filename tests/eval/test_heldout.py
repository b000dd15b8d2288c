"""The held-out scorer cases (heldout/README.md): each replay is played through the real engine
and lab against its shipped scenario and must score as the blind author labelled it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.eval.runner import EvalOptions, run_scenario
from tests.eval.helpers import isolate, scenario_with_replay, settings

HELDOUT = Path(__file__).resolve().parent / "heldout"
CASES = sorted(p.name for p in HELDOUT.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES)
def test_the_scorer_gives_the_honest_score(case: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    folder = HELDOUT / case
    expect = json.loads((folder / "expect.json").read_text())
    replay = next(folder.glob("*.replay.json"))
    shipped = replay.name.removesuffix(".replay.json")
    isolate(monkeypatch, tmp_path)
    path = scenario_with_replay(tmp_path, shipped, json.loads(replay.read_text()))
    record = run_scenario(path, settings(tmp_path), EvalOptions(replay=True), repeat=0,
                          data_dir=tmp_path / "run")
    assert not record.error, record.error
    scored = {"solved": (record.solved, record.solved_reasons),
              "evidence": (record.evidence, record.evidence_reasons),
              "grounded": (record.grounded, record.grounded_reasons)}
    wrong = {dim: scored[dim] for dim in scored
             if expect.get(dim) is not None and scored[dim][0] != expect[dim]}
    assert not wrong, f"{expect['class']}: {expect['why']}"


def test_every_class_of_the_blind_check_is_kept() -> None:
    classes = {json.loads((HELDOUT / c / "expect.json").read_text())["class"] for c in CASES}
    assert len(CASES) == 49 and {"right", "ungrounded"} <= classes
    assert any(c.startswith("unsolved") for c in classes)
    assert any(c.startswith("no-evidence") for c in classes)
