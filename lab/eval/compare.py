"""``ghost eval --compare A/eval.json B/eval.json``: what changed between two eval runs.

Runs are matched by scenario name; repeats are pooled (solved 2/3). A scenario whose file
changed between the two reports (another SHA-256) is flagged, since then the scores do not
measure the same test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.eval.record import RunRecord
from lab.eval.report import models, money, totals


@dataclass(frozen=True)
class Side:
    runs: int
    solved: int
    passed: int
    cost: float | None
    turns: float
    tokens: float
    sha: str | None

    @classmethod
    def of(cls, runs: Sequence[RunRecord]) -> Side:
        t = totals(runs)
        n = max(len(runs), 1)
        return cls(len(runs), t.solved, t.passed, t.cost, t.turns / n, t.tokens / n,
                   runs[0].scenario_sha256 if runs else None)

    def score(self) -> str:
        return f"{self.passed}/{self.runs}" if self.runs else "-"

    def money(self) -> str:
        return money(self.cost) if self.runs else "-"

    def mean_turns(self) -> str:
        return f"{self.turns:.1f}" if self.runs else "-"


def _by_scenario(runs: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    grouped: dict[str, list[RunRecord]] = {}
    for r in runs:
        grouped.setdefault(r.scenario, []).append(r)
    return grouped


def _delta(a: float | None, b: float | None, fmt: str = "{:+.1f}") -> str:
    if a is None or b is None:
        return ""
    return "" if abs(b - a) < 1e-9 else fmt.format(b - a)


def compare(a_header: Mapping[str, Any], a: Sequence[RunRecord],
            b_header: Mapping[str, Any], b: Sequence[RunRecord]) -> str:
    """The side-by-side text: per scenario passed (solved, with evidence, grounded), cost,
    turns."""
    left, right = _by_scenario(a), _by_scenario(b)
    model_a, model_b = models(a), models(b)
    lines = [f"A: {model_a} (Ghost {a_header.get('ghost_version', '?')}, "
             f"{a_header.get('started_at', '?')})",
             f"B: {model_b} (Ghost {b_header.get('ghost_version', '?')}, "
             f"{b_header.get('started_at', '?')})", ""]
    head = ("scenario", "A passed", "B passed", "A cost", "B cost", "A turns", "B turns", "")
    body: list[tuple[str, ...]] = []
    changed: list[str] = []
    for name in sorted(set(left) | set(right)):
        sa, sb = Side.of(left.get(name, [])), Side.of(right.get(name, []))
        note = []
        if sa.runs and sb.runs:
            ra, rb = sa.passed / sa.runs, sb.passed / sb.runs
            if rb > ra:
                note.append("better")
            elif rb < ra:
                note.append("WORSE")
            if sa.sha and sb.sha and sa.sha != sb.sha:
                note.append("scenario file changed")
        else:
            note.append("only in A" if sa.runs else "only in B")
        if note:
            changed.append(name)
        body.append((name, sa.score(), sb.score(), sa.money(), sb.money(), sa.mean_turns(),
                     sb.mean_turns(), ", ".join(note)))
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h)
              for i, h in enumerate(head)]
    for row in (head, tuple("-" * w for w in widths), *body):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    ta, tb = totals(a), totals(b)
    lines += ["",
              f"Passed (solved, with evidence, grounded): A {ta.passed}/{ta.runs}, "
              f"B {tb.passed}/{tb.runs}"
              f"; solved: A {ta.solved}, B {tb.solved}",
              f"Cost: A {money(ta.cost)}, B {money(tb.cost)} "
              f"{_delta(ta.cost, tb.cost, '({:+.4f})')}".rstrip(),
              f"Turns per run: A {ta.turns / max(ta.runs, 1):.1f}, "
              f"B {tb.turns / max(tb.runs, 1):.1f}",
              f"Tokens: A {ta.tokens:,}, B {tb.tokens:,}",
              f"Changed: {', '.join(changed) if changed else 'nothing'}"]
    return "\n".join(lines) + "\n"
