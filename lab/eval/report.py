"""The eval report: a plain-text table for the terminal, and ``eval.md``.

Plain text on purpose (no terminal library): it reads the same in a CI log, a pipe and a
terminal. Every lost point shows its reason under the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lab.eval.record import RunRecord

COLUMNS = ("scenario", "solved", "evidence", "grounded", "turns", "cmds", "caps", "safe", "risky+",
           "risky-", "forbid", "tokens", "cost", "time")


@dataclass(frozen=True)
class Totals:
    runs: int
    solved: int
    evidenced: int
    grounded: int
    passed: int
    errors: int
    tokens: int
    prompt: int
    output: int
    thinking: int
    cost: float | None  # None when some run's model has no price
    wall_s: float
    turns: int

    @property
    def solved_pct(self) -> float:
        return 100.0 * self.solved / self.runs if self.runs else 0.0

    @property
    def passed_pct(self) -> float:
        return 100.0 * self.passed / self.runs if self.runs else 0.0


def totals(runs: Sequence[RunRecord]) -> Totals:
    costs = [r.cost_usd for r in runs]
    return Totals(
        runs=len(runs), solved=sum(r.solved for r in runs),
        evidenced=sum(r.evidence for r in runs), grounded=sum(r.grounded for r in runs),
        passed=sum(r.passed for r in runs),
        errors=sum(1 for r in runs if r.error), tokens=sum(r.tokens for r in runs),
        prompt=sum(r.prompt_tokens for r in runs), output=sum(r.output_tokens for r in runs),
        thinking=sum(r.thinking_tokens for r in runs),
        cost=None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6),
        wall_s=round(sum(r.wall_s for r in runs), 2), turns=sum(r.turns for r in runs))


def models(runs: Sequence[RunRecord]) -> str:
    """The models of a set of runs; the replays as one name."""
    names = sorted({"replay" if r.model.startswith("replay:") else r.model for r in runs})
    return ", ".join(names) or "?"


def money(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def _mark(ok: bool, error: str | None = None) -> str:
    return "ERROR" if error else ("yes" if ok else "NO")


def label(run: RunRecord, repeats: bool) -> str:
    return f"{run.scenario} #{run.repeat + 1}" if repeats else run.scenario


def rows(runs: Sequence[RunRecord]) -> list[tuple[str, ...]]:
    repeats = any(r.repeat for r in runs)
    return [(label(r, repeats), _mark(r.solved, r.error), _mark(r.evidence, r.error),
             _mark(r.grounded, r.error), str(r.turns), str(r.commands), str(r.captures),
             str(r.safe), str(r.risky_approved),
             str(r.risky_denied), str(r.forbidden), f"{r.tokens:,}", money(r.cost_usd),
             f"{r.wall_s:.1f}s") for r in runs]


def reasons(runs: Sequence[RunRecord]) -> list[str]:
    """One line per lost point: the run, then why."""
    repeats = any(r.repeat for r in runs)
    lines: list[str] = []
    for r in runs:
        name = label(r, repeats)
        if r.error:
            lines.append(f"{name}: error: {r.error}")
        lines += [f"{name}: unsolved: {why}" for why in r.solved_reasons]
        lines += [f"{name}: evidence: {why}" for why in r.evidence_reasons]
        lines += [f"{name}: ungrounded: {why}" for why in r.grounded_reasons]
    return lines


def headline(runs: Sequence[RunRecord], wall_s: float | None = None) -> str:
    t = totals(runs)
    wall = wall_s if wall_s is not None else t.wall_s
    return (f"Solved {t.solved}/{t.runs} ({t.solved_pct:.0f}%), with cited evidence "
            f"{t.evidenced}/{t.runs}, grounded {t.grounded}/{t.runs}; passed (all three) "
            f"{t.passed}/{t.runs} ({t.passed_pct:.0f}%); errors {t.errors}; tokens "
            f"{t.tokens:,} (prompt {t.prompt:,}, output {t.output:,}, thinking "
            f"{t.thinking:,}); cost {money(t.cost)}; wall time {wall:.1f}s")


def table(runs: Sequence[RunRecord], wall_s: float | None = None) -> str:
    """The terminal table, its headline and the reasons for every lost point."""
    body = rows(runs)
    widths = [max(len(c), *(len(row[i]) for row in body)) if body else len(c)
              for i, c in enumerate(COLUMNS)]
    numeric = set(range(4, len(COLUMNS)))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(COLUMNS), line(["-" * w for w in widths]), *(line(r) for r in body), "",
           headline(runs, wall_s)]
    why = reasons(runs)
    if why:
        out += ["", "Why points were lost:", *(f"  - {w}" for w in why)]
    return "\n".join(out) + "\n"


def markdown(runs: Sequence[RunRecord], *, model: str, ghost_version: str, started_at: str,
             wall_s: float, policy: str) -> str:
    """``eval.md``: the same figures, for a pull request or a wiki page."""
    out = [f"# Ghost eval — {model}", "",
           f"Ghost {ghost_version}, started {started_at}, approve policy `{policy}`, "
           f"{len(runs)} run(s). Scoring: docs/eval.md.", "",
           f"**{headline(runs, wall_s)}**", "",
           "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
            for row in rows(runs)]
    why = reasons(runs)
    if why:
        out += ["", "## Why points were lost", "", *(f"- {w}" for w in why)]
    conclusions = [(label(r, any(x.repeat for x in runs)), r.root_cause) for r in runs
                   if r.root_cause]
    if conclusions:
        out += ["", "## Conclusions", ""]
        out += [f"- **{name}**: {' '.join(str(text).split())}" for name, text in conclusions]
    return "\n".join(out) + "\n"
