"""Every figure a shipped replay concludes with is one the engineer saw.

A conclusion that states an address, a prefix or a size that no command showed sends the
engineer at 3 a.m. looking for evidence that does not exist. For every shipped scenario this
plays the replay end to end (``ghost demo NAME --yes``, as tests/lab/test_shipped_scenarios.py
does) and checks that each IPv4 address or prefix and each number with a unit (bytes, ms, %)
in the conclusions — the RCA's root cause (its Investigation Summary), and the prose and the
description of every hypothesis the replay CONFIRMS — appears in the output of an audit record
of that investigation or in the symptom. A number is matched by its digits, whatever unit the
output writes it with (ping prints ``1372(1400) bytes``).
"""

from __future__ import annotations

import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lab.scenario import load_scenario, shipped_scenarios

SCENARIOS = shipped_scenarios()
IDS = [p.stem for p in SCENARIOS]

#: an IPv4 address or prefix, not part of a longer dotted number or word
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?![\w/]|\.\d)")
#: a number with a size, time or share unit: ``1460-byte``, ``1400 bytes``, ``8 %``, ``2 ms``
NUMBER_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?-?\s?(?:bytes?|[KMG]?B|ms|%)(?!\w)")
PLACEHOLDER = re.compile(r"\{\{[a-z]+:(?:\d+|last)\}\}")
#: the prose that moves a hypothesis ("H1 CONFIRMED (…)"), as the engine reads it
CONFIRMED_LINE = re.compile(r"\b[Hh](\d{1,3})\s*(?:is\s+|:\s*|-\s*)?CONFIRMED\b")


@dataclass(frozen=True)
class Played:
    """What one demo run left: the RCA, the audit outputs and the replay's turns."""

    symptom: str
    rca: str
    outputs: tuple[str, ...]
    turns: list[dict[str, Any]]


def figures(text: str) -> list[str]:
    """The addresses, prefixes and numbers-with-unit a text states, in order."""
    text = PLACEHOLDER.sub(" ", text)
    found = [m.group(0) for m in IPV4.finditer(text)]
    found += [m.group(1) for m in NUMBER_UNIT.finditer(text)]
    return list(dict.fromkeys(found))


def shown(figure: str, evidence: str) -> bool:
    """The figure appears in the evidence as a whole number/address (10.1.2.4 is not in
    10.1.2.40, 140 not in 1400)."""
    return re.search(rf"(?<![\d.]){re.escape(figure)}(?!\d|\.\d)", evidence) is not None


def root_cause(rca: str) -> str:
    """The RCA's Investigation Summary paragraph (the root cause), before its bullet list."""
    section = rca.split("## Investigation Summary", 1)[1]
    return section.split("\n- ", 1)[0].split("\n## ", 1)[0]


def confirmed_conclusions(turns: list[dict[str, Any]]) -> list[str]:
    """The prose of every turn that moves a hypothesis to CONFIRMED (its conclusion), the
    description of every hypothesis the replay confirms, and the final summary."""
    texts: list[str] = []
    described: dict[str, str] = {}
    confirmed: set[str] = set()
    for turn in turns:
        prose = "".join(str(p.get("text", "")) for p in turn["parts"])
        moves = bool(CONFIRMED_LINE.search(prose))
        for part in turn["parts"]:
            call = part.get("functionCall") or {}
            args = call.get("args") or {}
            for h in args.get("hypotheses") or []:
                if h.get("description"):
                    described[h["id"]] = str(h["description"])
                if h.get("state") == "CONFIRMED" and h["id"] not in confirmed:
                    confirmed.add(h["id"])
                    moves = True
            if call.get("name") == "complete_investigation":
                confirmed |= set(args.get("confirmed_hypotheses") or [])
                texts.append(str(args.get("root_cause_summary") or ""))
        if moves:
            texts.append(prose)
    texts += [described[h] for h in sorted(confirmed) if h in described]
    return texts


def unsupported(played: Played) -> dict[str, list[str]]:
    """figure -> the conclusions stating it, for every figure that no output nor the symptom
    shows."""
    evidence = "\n".join((played.symptom, *played.outputs))
    missing: dict[str, list[str]] = {}
    for text in (root_cause(played.rca), *confirmed_conclusions(played.turns)):
        for figure in figures(text):
            if not shown(figure, evidence):
                missing.setdefault(figure, []).append(" ".join(text.split())[:200])
    return missing


def play(scenario_path: Path, data_dir: Path) -> Played:
    """``ghost demo SCENARIO --yes`` in its own data directory, without Gemini."""
    from bot.bootstrap import build_store
    from bot.commands.demo import run
    from bot.settings import Settings

    scenario = load_scenario(scenario_path)
    replay = scenario.replay_path()
    assert replay is not None, f"{scenario_path.name} has no replay"
    settings = Settings(data_dir=data_dir)
    out = io.StringIO()
    code = run(settings, scenario=str(scenario_path), yes=True, stdin=io.StringIO(), stdout=out)
    assert code == 0, out.getvalue()[-3000:]
    store = build_store(settings)
    inv = store.list_investigations(limit=1)[0]
    assert inv.status == "completed", out.getvalue()[-3000:]
    records = [r for r in store.audit_records(inv.session_id) if r.get("kind") == "command"]
    outputs = tuple(f"{r.get('output') or ''}\n{r.get('stderr') or ''}" for r in records)
    return Played(scenario.symptom, inv.rca_markdown or "", outputs,
                  json.loads(replay.read_text(encoding="utf-8")))


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_LAB", "GHOST_DATA_DIR",
                "GHOST_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)


# ------------------------------------------------------------------ the checker itself
def test_figures_are_addresses_prefixes_and_numbers_with_units() -> None:
    text = ("about 1400 bytes; every 1460-byte segment; 8 % loss, 2.5 ms; 10.3.20.0/24 and "
            "10.1.1.4:443 (ghost_20261125_152101_004, {{audit:12}}, 07:00, 60 connections)")
    assert figures(text) == ["10.3.20.0/24", "10.1.1.4", "1400", "1460", "8", "2.5"]


def test_a_figure_is_shown_only_as_a_whole() -> None:
    assert shown("1400", "PING 10.1.1.4 (10.1.1.4) 1372(1400) bytes of data.")
    assert not shown("140", "mtu 1400")
    assert not shown("10.1.2.4", "10.1.2.40 answered")
    assert shown("10.3.2.0/24", "User Active 10.3.2.0/24 None")
    assert not shown("10.3.20.0/24", "User Active 10.3.2.0/24 None")


def test_a_conclusion_stating_a_figure_nobody_saw_is_caught(tmp_path: Path) -> None:
    """The defect this file guards against, on a copy of a shipped scenario whose summary names
    an intended prefix that no command output shows."""
    source = next(p for p in SCENARIOS if p.stem == "udr-blackhole-payments")
    scenario = load_scenario(source)
    replay = scenario.replay_path()
    assert replay is not None
    estate = tmp_path / "estate"
    estate.mkdir()
    shutil.copy(source, estate / source.name)
    turns = json.loads(replay.read_text(encoding="utf-8"))
    final = turns[-1]["parts"][-1]["functionCall"]["args"]
    final["root_cause_summary"] += " The prefix should have been the retired 10.3.20.0/24."
    (estate / replay.name).write_text(json.dumps(turns), encoding="utf-8")

    played = play(estate / source.name, tmp_path / "ghost-data")
    missing = unsupported(played)
    assert list(missing) == ["10.3.20.0/24"], missing


# ------------------------------------------------------------------ the shipped replays
@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_concluded_figure_was_shown_to_the_engineer(
        path: Path, tmp_path: Path) -> None:
    played = play(path, tmp_path / "ghost-data")
    assert "## Investigation Summary" in played.rca
    missing = unsupported(played)
    assert not missing, (
        "figures the conclusions state but no audited output (nor the symptom) shows: "
        + "; ".join(f"{fig!r} in {texts[0]!r}" for fig, texts in missing.items()))
