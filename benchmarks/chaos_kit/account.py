"""The drill's figures, each counted from two sides where it can be: Ghost's database and audit
log on one, what reached Slack and what the lab saw run (the side-effect trace) on the other."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.chaos_kit.gemini import risky_commands, risky_marker
from benchmarks.chaos_kit.procs import ROOT
from benchmarks.chaos_kit.slack import ChaosSlack


@dataclass
class Started:
    """One investigation as the driver started it."""

    n: int
    channel: str
    session_id: str | None
    acked_at: float


@dataclass
class Verdict:
    """One figure: its line, and whether it met its target."""

    line: str
    ok: bool
    details: list[str] = field(default_factory=list)


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def side_effects(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def executed_once(started: list[Started], store: Any, trace: list[dict[str, Any]]) -> Verdict:
    """Every approved RISKY command ran exactly once: by the audit log and by the trace."""
    expected = audit_ok = trace_ok = 0
    details: list[str] = []
    ran_argv = [" ".join(e.get("argv") or []) for e in trace if e.get("kind") == "command"]
    for inv in started:
        if inv.session_id is None:
            continue
        records = store.audit_records(inv.session_id)
        for which, command in enumerate(risky_commands(inv.n)):
            expected += 1
            ran = [r for r in records if r.get("kind") == "command"
                   and r.get("command") == command and r.get("action") == "user_approved"]
            marker = risky_marker(inv.n, which)
            seen = sum(1 for argv in ran_argv if marker in argv)
            audit_ok += len(ran) == 1
            trace_ok += seen == 1
            if len(ran) != 1 or seen != 1:
                details.append(f"chaos-{inv.n:02d} ({inv.session_id}) RISKY #{which + 1}: audit "
                               f"{len(ran)} executed record(s), side effects {seen}")
    approved = once = 0
    for inv in started:
        if inv.session_id is None:
            continue
        records = store.audit_records(inv.session_id)
        finished = store.get_investigation(inv.session_id).status == "completed"
        for approval in store.approvals(inv.session_id):
            if approval.decided_by is None or approval.status in ("denied", "expired"):
                continue
            if approval.status == "approved" and not finished:
                continue  # in flight when the drill stopped: counted under "completed"
            approved += 1
            ran = [r for r in records if r.get("kind") == "command"
                   and r.get("approval_id") == approval.approval_id]
            if not ran:  # records without the approval id: match the command
                ran = [r for r in records if r.get("kind") == "command"
                       and r.get("command") == approval.command
                       and r.get("action") == "user_approved"]
            once += len(ran) == 1
            if len(ran) != 1:
                details.append(f"chaos-{inv.n:02d} ({inv.session_id}) approval "
                               f"{approval.approval_id} ({approval.status}): {len(ran)} "
                               f"command record(s) for {approval.command[:60]!r}")
    captures = sum(1 for e in trace if e.get("kind") == "capture")
    ok = audit_ok == expected and trace_ok == expected and once == approved
    return Verdict(f"approved commands executed exactly once: RISKY probes {audit_ok}/{expected} "
                   f"by the audit log, {trace_ok}/{expected} by their side effects; every "
                   f"approved command (captures too) {once}/{approved} by the audit log; "
                   f"{captures} packet captures created", ok, details)


def verify_chains(started: list[Started], env: dict[str, str]) -> Verdict:
    """``ghost audit verify SID`` for every investigation (exit 0 each)."""
    sids = [s.session_id for s in started if s.session_id]

    def one(sid: str) -> tuple[str, int, str]:
        done = subprocess.run([sys.executable, "-m", "bot.cli", "audit", "verify", sid],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        return sid, done.returncode, (done.stdout + done.stderr).strip().splitlines()[-1:] \
            and (done.stdout + done.stderr).strip().splitlines()[-1] or ""

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, sids))
    bad = [f"{sid}: exit {code}: {last}" for sid, code, last in results if code != 0]
    return Verdict(f"audit chains verified (`ghost audit verify`): {len(sids) - len(bad)}"
                   f"/{len(sids)}", not bad and bool(sids), bad)


def thread_posts(started: list[Started], store: Any, slack: ChaosSlack) -> tuple[Verdict, Verdict]:
    """(duplicate or lost thread posts, RCA files uploaded exactly once)."""
    posts = slack.posts()
    completes = [c for c in slack.called("files.completeUploadExternal")
                 if "_fault" not in c.args]
    dup: list[str] = []
    lost: list[str] = []
    rca_ok = 0
    for inv in started:
        tag = f"chaos-{inv.n:02d}"
        if inv.session_id is None:
            lost.append(f"{tag}: acked without a session id")
            continue
        sid = inv.session_id
        roots = [m for m in posts if not m.get("thread_ts") and f"`{sid}`" in json.dumps(m)]
        if len(roots) != 1:
            (dup if roots else lost).append(f"{tag} ({sid}): {len(roots)} thread roots")
        if not roots:
            continue
        root_ts = roots[0]["ts"]
        thread = [m for m in posts if m.get("thread_ts") == root_ts]
        texts = Counter(str(m.get("text")) for m in thread)
        for text, count in texts.items():
            if count > 1:
                dup.append(f"{tag} ({sid}): posted {count}×: {text[:90]!r}")
        cards = Counter(c["_approval"] for c in slack.cards() if c.get("thread_ts") == root_ts)
        for approval in store.approvals(sid):
            shown = cards.get(approval.approval_id, 0)
            if shown == 0:
                lost.append(f"{tag} ({sid}): no card for approval {approval.approval_id} "
                            f"({approval.status})")
            elif shown > 1:
                dup.append(f"{tag} ({sid}): {shown} cards for approval {approval.approval_id}")
        uploads = [c for c in completes if c.args.get("thread_ts") == root_ts
                   and f"ghost_rca_{sid}" in json.dumps(c.args.get("files"))]
        if len(uploads) == 1:
            rca_ok += 1
        elif len(uploads) > 1:
            dup.append(f"{tag} ({sid}): the RCA uploaded {len(uploads)} times")
        elif store.get_investigation(sid).status == "completed":
            lost.append(f"{tag} ({sid}): completed, but no RCA file in the thread")
    total = len(started)
    posts_v = Verdict(f"duplicate thread posts: {len(dup)}   lost thread posts: {len(lost)}",
                      not dup and not lost, dup + lost)
    rca_v = Verdict(f"RCA files uploaded exactly once: {rca_ok}/{total}", rca_ok == total)
    return posts_v, rca_v


def rca_times(started: list[Started], slack: ChaosSlack) -> list[float]:
    """Monotonic times of the successful RCA uploads of these investigations."""
    sids = {s.session_id for s in started if s.session_id}
    return [c.at for c in slack.called("files.completeUploadExternal")
            if "_fault" not in c.args and any(f"ghost_rca_{sid}" in json.dumps(
                c.args.get("files")) for sid in sids)]
