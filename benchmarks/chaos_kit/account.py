"""The drill's figures, each counted from two sides where it can be: Ghost's database and audit
log on one, what reached Slack and what the lab saw run (the side-effect trace) on the other."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.chaos_kit.gemini import risky_commands, risky_marker
from benchmarks.chaos_kit.slack import ChaosSlack

_TAG = re.compile(r"\[chaos-(\d+)\]")


@dataclass
class Started:
    """One investigation as the driver started it."""

    n: int
    channel: str
    session_id: str | None
    acked_at: float
    #: the HTTP status of the ack (0: no replica answered)
    status: int = 200


def from_database(store: Any, requested: list[Started]) -> tuple[list[Started], list[str]]:
    """Every investigation the drill caused (by the ``[chaos-NN]`` tag of its symptom: a slash
    command retried after a replica died before its ack makes two), and what was lost: a
    slash command acked with a session id that has no record, or never acked at all."""
    found: list[Started] = []
    for inv in store.list_investigations(limit=100_000):
        tag = _TAG.search(inv.symptom or "")
        if tag:
            found.append(Started(int(tag.group(1)), str(inv.channel_ref), inv.session_id, 0.0))
    known = {s.session_id for s in found}
    tags = {s.n for s in found}
    lost = [f"chaos-{r.n:02d}: acked with {r.session_id}, but there is no such investigation"
            for r in requested if r.session_id and r.session_id not in known]
    # Teams' ack names no session: an acked mention is lost when no investigation has its tag
    lost += [f"chaos-{r.n:02d}: acked, but no investigation carries its tag"
             for r in requested if r.session_id is None and r.status == 200 and r.n not in tags]
    lost += [f"chaos-{r.n:02d}: the request was answered HTTP {r.status}, no session id"
             if r.status else f"chaos-{r.n:02d}: no replica answered the request in 30 s"
             for r in requested if r.session_id is None and r.status != 200]
    return sorted(found, key=lambda s: (s.n, s.session_id or "")), lost


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


def of_approval(record: dict[str, Any]) -> str | None:
    details = record.get("details") or {}
    return details.get("approval_id") if isinstance(details, dict) else None


def executed_once(started: list[Started], store: Any, trace: list[dict[str, Any]]) -> Verdict:
    """Every approved command ran exactly once. RISKY probes: by the audit log (one executed
    record per investigation) and by the trace (as many runs of the tagged probe as executed
    records, over every investigation with that tag — a retried slash command makes two).
    Every other approval (the capture's): one command record naming it, once its
    investigation completed (one still ``approved`` then was never run)."""
    details: list[str] = []
    ran_argv = [" ".join(e.get("argv") or []) for e in trace if e.get("kind") == "command"]
    audited: Counter[tuple[int, int]] = Counter()
    expected = audit_ok = 0
    for inv in started:
        if inv.session_id is None:
            continue
        records = store.audit_records(inv.session_id)
        for which, command in enumerate(risky_commands(inv.n)):
            expected += 1
            ran = [r for r in records if r.get("kind") == "command"
                   and r.get("command") == command and r.get("action") == "user_approved"]
            audited[(inv.n, which)] += len(ran)
            audit_ok += len(ran) == 1
            if len(ran) != 1:
                details.append(f"chaos-{inv.n:02d} ({inv.session_id}) RISKY #{which + 1}: "
                               f"{len(ran)} executed record(s) in the audit log")
    trace_ok = 0
    for (n, which), count in sorted(audited.items()):
        seen = sum(1 for argv in ran_argv if risky_marker(n, which) in argv)
        trace_ok += seen == count
        if seen != count:
            details.append(f"chaos-{n:02d} RISKY #{which + 1}: ran {seen} time(s) on the estate, "
                           f"{count} executed record(s) in the audit log")
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
                   and of_approval(r) == approval.approval_id]
            once += len(ran) == 1
            if len(ran) != 1:
                details.append(f"chaos-{inv.n:02d} ({inv.session_id}) approval "
                               f"{approval.approval_id} ({approval.status}, decided "
                               f"{approval.decided_at:%H:%M:%S}): {len(ran)} command record(s) "
                               f"for {approval.command[:60]!r}")
    captures = sum(1 for e in trace if e.get("kind") == "capture")
    ok = audit_ok == expected and trace_ok == len(audited) and once == approved
    return Verdict(f"approved commands executed exactly once: RISKY probes {audit_ok}/{expected} "
                   f"by the audit log, {trace_ok}/{len(audited)} match their side effects; every "
                   f"approval (captures too) {once}/{approved} by the audit log; "
                   f"{captures} packet captures created", ok, details)


def verify_chains(started: list[Started], env: dict[str, str]) -> Verdict:
    """``ghost audit verify SID`` for every investigation (exit 0 each): the CLI's own entry
    point, run in this process with Ghost's environment (20 interpreter start-ups would take
    longer than the drill on a busy machine)."""
    import contextlib
    import io
    import os

    from bot.cli import main as ghost

    sids = [s.session_id for s in started if s.session_id]
    saved = dict(os.environ)
    os.environ.update(env)
    bad: list[str] = []
    try:
        for sid in sids:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    code = ghost(["audit", "verify", sid])
                except SystemExit as exc:
                    code = int(exc.code or 0)
            if code != 0:
                last = out.getvalue().strip().splitlines()[-1:] or [""]
                bad.append(f"{sid}: exit {code}: {last[0][:200]}")
    finally:
        os.environ.clear()
        os.environ.update(saved)
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


def approve_to_start(store: Any, first_click: dict[str, datetime]) -> dict[str, float]:
    """Per approval: ms from its first Approve click to its command's ``command_started``
    record (the audit record's own time); approvals whose command never started are left out."""
    out: dict[str, float] = {}
    for approval_id, clicked in first_click.items():
        approval = store.get_approval(approval_id)
        if approval is None:
            continue
        for record in store.audit_records(approval.session_id):
            if record.get("kind") == "command_started" and of_approval(record) == approval_id:
                moment = datetime.fromisoformat(str(record["timestamp"]).replace("Z", "+00:00"))
                out[approval_id] = (moment - clicked).total_seconds() * 1000
                break
    return out
