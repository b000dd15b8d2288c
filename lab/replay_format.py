"""The replay file's shape: model turns, and what a turn depends on (docs/lab.md, "The replay").

A replay is a JSON list of model turns in the Gemini REST shape (``{"parts": [...]}``). A turn
may also say what it depends on and where to go when that did not happen as scripted:

- ``expects``: a list of dependencies, each on one earlier call of the replay —
  ``{"audit": N}`` (the N-th ``run_shell_cmd`` result, as ``{{audit:N}}`` counts them, or
  ``"last"``) ran as the replay wrote it: not denied, not blocked, not edited by the engineer,
  finished with ``exit_code`` (default 0, ``"any"`` for any) and, when given, with every
  ``output_has`` text in its output; ``{"task": N}`` (the N-th capture task) was created, and
  with ``"analysed": true`` its forensic report exists, with ``"cleaned": true`` its cleanup
  removed everything;
- ``on_denied``: the turns to play instead when a dependency was denied (by an engineer, or
  refused by the gate);
- ``on_changed``: the turns to play instead when it ran otherwise (edited, failed, another
  answer, a capture that did not complete).

A branch is a list of turns in the same shape (branches may nest) and ends with
``complete_investigation``. Without the branch it needs, the replay ends the investigation
honestly (``lab.replay_end``). A file that uses none of these keys plays as before: turn *k*
answers the *k*-th model call whatever happened.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BRANCHES = ("on_denied", "on_changed")
TURN_KEYS = frozenset({"parts", "role", "expects", *BRANCHES})
_EXPECT_KEYS = {"audit": frozenset({"audit", "exit_code", "output_has"}),
                "task": frozenset({"task", "analysed", "cleaned"})}
COMPLETE = "complete_investigation"


class ReplayError(Exception):
    """The replay file is missing or not a list of model turns (one line, for the engineer)."""


@dataclass(frozen=True)
class Expect:
    """One dependency of a turn on an earlier call of the replay."""

    kind: str  # "audit" | "task"
    index: int | None  # None: the latest ("last"), audit only
    exit_code: int | None = 0  # None: any exit code
    output_has: tuple[str, ...] = ()
    analysed: bool = False
    cleaned: bool = False

    @property
    def label(self) -> str:
        which = "last" if self.index is None else str(self.index)
        return f"{{{{{self.kind}:{which}}}}}"


@dataclass(frozen=True)
class Turn:
    """One scripted model turn: its content, its dependencies and its branches."""

    content: Mapping[str, Any]  # {"parts": [...]} as written (placeholders unfilled)
    expects: tuple[Expect, ...] = ()
    on_denied: tuple[Turn, ...] | None = None
    on_changed: tuple[Turn, ...] | None = None
    where: str = ""  # "[8].on_denied[1]": for messages

    def branch(self, kind: str) -> tuple[Turn, ...] | None:
        return self.on_denied if kind == "denied" else self.on_changed


@dataclass(frozen=True)
class Script:
    """A whole replay: the main line of turns, and whether any turn follows what ran."""

    turns: tuple[Turn, ...]
    follows: bool = False  # some turn has expects or a branch
    raw: Sequence[Mapping[str, Any]] = field(default_factory=list)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ReplayError(f"{path}: replay file not found") from exc
    except (OSError, ValueError) as exc:
        raise ReplayError(f"{path}: not readable JSON ({exc})") from exc


def load_script(path: Path) -> Script:
    """The replay file, checked; every problem names the file and the turn
    (``[8].on_denied[1]``)."""
    data = _load_json(path)
    if not isinstance(data, list) or not data:
        raise ReplayError(f"{path}: a replay is a non-empty JSON list of model turns")
    turns = _turns(path, data, "")
    follows = any(_follows(t) for t in turns)
    if follows:
        for t in turns:
            _check_branch_ends(path, t)
    return Script(tuple(turns), follows, data)


def _follows(turn: Turn) -> bool:
    """The turn (or one nested in its branches) depends on what ran."""
    return bool(turn.expects or turn.on_denied or turn.on_changed)


def _check_branch_ends(path: Path, turn: Turn) -> None:
    for kind in ("denied", "changed"):
        branch = turn.branch(kind)
        if branch is None:
            continue
        if not _calls(branch[-1].content, COMPLETE):
            raise ReplayError(f"{path}: {branch[-1].where}: a branch ends with "
                              "complete_investigation (it replaces the rest of the replay)")
        for sub in branch:
            _check_branch_ends(path, sub)


def _calls(content: Mapping[str, Any], name: str) -> bool:
    return any(isinstance(p.get("functionCall"), Mapping) and p["functionCall"].get("name")
               == name for p in content.get("parts") or [] if isinstance(p, Mapping))


def _turns(path: Path, data: Sequence[Any], prefix: str) -> list[Turn]:
    return [_turn(path, item, f"{prefix}[{i}]") for i, item in enumerate(data)]


def _turn(path: Path, item: Any, where: str) -> Turn:
    def fail(what: str) -> ReplayError:
        return ReplayError(f"{path}: {where}: {what}")

    parts = item.get("parts") if isinstance(item, dict) else None
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        raise fail("a turn is {\"parts\": [...]} with at least one part")
    unknown = sorted(set(item) - TURN_KEYS)
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (a turn has parts, and optionally expects, "
                   "on_denied, on_changed)")
    raw_expects = item.get("expects", [])
    if not isinstance(raw_expects, list):
        raise fail("expects is a list of {\"audit\": N} / {\"task\": N} objects")
    expects = tuple(_expect(fail, e, n) for n, e in enumerate(raw_expects))
    branches: dict[str, tuple[Turn, ...] | None] = {}
    for key in BRANCHES:
        raw = item.get(key)
        if raw is None:
            branches[key] = None
            continue
        if not isinstance(raw, list) or not raw:
            raise fail(f"{key} is a non-empty list of turns")
        branches[key] = tuple(_turns(path, raw, f"{where}.{key}"))
    if (branches["on_denied"] or branches["on_changed"]) and not expects:
        raise fail("a turn with on_denied/on_changed says what it depends on (expects)")
    content = {k: v for k, v in item.items() if k in ("parts", "role")}
    return Turn(content, expects, branches["on_denied"], branches["on_changed"], where)


def _expect(fail: Any, raw: Any, n: int) -> Expect:
    if not isinstance(raw, dict):
        raise fail(f"expects[{n}] is an object such as {{\"audit\": 3}} or {{\"task\": 0}}")
    kinds = [k for k in _EXPECT_KEYS if k in raw]
    if len(kinds) != 1:
        raise fail(f"expects[{n}] names one earlier call: \"audit\" or \"task\"")
    kind = kinds[0]
    unknown = sorted(set(raw) - _EXPECT_KEYS[kind])
    if unknown:
        raise fail(f"expects[{n}]: unknown key {unknown[0]!r} for a {kind} dependency "
                   f"(allowed: {', '.join(sorted(_EXPECT_KEYS[kind]))})")
    which = raw[kind]
    if kind == "audit" and which == "last":
        index = None
    elif isinstance(which, int) and not isinstance(which, bool) and which >= 0:
        index = which
    else:
        raise fail(f"expects[{n}].{kind} is a 0-based index" +
                   (" or \"last\"" if kind == "audit" else ""))
    if kind == "task":
        for flag in ("analysed", "cleaned"):
            if not isinstance(raw.get(flag, False), bool):
                raise fail(f"expects[{n}].{flag} is true or false")
        return Expect("task", index, analysed=bool(raw.get("analysed")),
                      cleaned=bool(raw.get("cleaned")))
    code = raw.get("exit_code", 0)
    if code == "any":
        exit_code = None
    elif isinstance(code, int) and not isinstance(code, bool):
        exit_code = code
    else:
        raise fail(f"expects[{n}].exit_code is an integer or \"any\"")
    has = raw.get("output_has", [])
    if isinstance(has, str):
        has = [has]
    if not isinstance(has, list) or not all(isinstance(h, str) and h for h in has):
        raise fail(f"expects[{n}].output_has is a list of non-empty strings")
    return Expect("audit", index, exit_code=exit_code, output_has=tuple(has))
