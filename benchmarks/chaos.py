"""The reliability drill (issue #23): Ghost's replicas, workers and database under kills and
outages, with figures and targets. One command, bounded in time; exit 1 when a target is missed.

    .venv/bin/python benchmarks/chaos.py                    # PostgreSQL, 2 replicas, 2 workers
    .venv/bin/python benchmarks/chaos.py --no-faults        # the same, nothing breaks
    .venv/bin/python benchmarks/chaos.py --sqlite           # one `ghost serve` on SQLite
    .venv/bin/python benchmarks/chaos.py --minutes 30       # soak: slow steady rate, flat memory?
    .venv/bin/python benchmarks/chaos.py --platform teams   # Teams: 2 `ghost serve` replicas

Everything is real except Slack (or Teams) and Gemini: `ghost serve` (Slack HTTP mode, signed
requests; or Teams' /api/messages with Bot Framework tokens) and `ghost worker` as processes on
the lab (GHOST_LAB=service-down: SAFE az reads, two RISKY in-VM probes approved by a second
engineer, a packet capture, the forensics on its pcap, the RCA uploaded into the thread), the
mock Slack Web API (or the Bot Framework connector, login and Graph stand-ins) and a scripted
Gemini on 127.0.0.1 with fault switches. docs/reliability.md explains the figures and targets.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.chaos_kit import account, pg  # noqa: E402
from benchmarks.chaos_kit.account import Verdict, pct  # noqa: E402
from benchmarks.chaos_kit.drill import Approver, Monkey, Requester  # noqa: E402
from benchmarks.chaos_kit.faults import Faults  # noqa: E402
from benchmarks.chaos_kit.gemini import SCENARIO, ChaosGemini  # noqa: E402
from benchmarks.chaos_kit.procs import ROOT, Ghost, Sampler  # noqa: E402
from benchmarks.chaos_kit.slack import SlackChat  # noqa: E402
from benchmarks.chaos_kit.teams import TeamsChat, TeamsUsers  # noqa: E402

COMMON_KINDS = ("kills", "pg", "gemini503", "geminihang")
CHAT_KINDS = {"slack": ("slack429", "slack500"), "teams": ("teams429", "teams500")}
ACK_TARGET_MS = 300.0
#: Approve → command start, and ack → thread root (issue 34), at p99
START_TARGET_MS = ROOT_TARGET_MS = 2000.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", choices=("slack", "teams"), default="slack",
                    help="drive Slack (2 `ghost serve` + 2 `ghost worker`) or Teams (2 `ghost "
                    "serve`, each with its worker, behind the Bot Framework connector stand-in)")
    ap.add_argument("--investigations", "-n", type=int, default=20)
    ap.add_argument("--channels", type=int, default=5)
    ap.add_argument("--sqlite", action="store_true",
                    help="one `ghost serve` (with its worker) on SQLite: what SQLite promises")
    ap.add_argument("--no-faults", action="store_true", help="nothing breaks (a baseline)")
    ap.add_argument("--faults", default=None,
                    help="comma-separated subset of "
                    f"{','.join(COMMON_KINDS + CHAT_KINDS['slack'])} (Slack) or of "
                    f"{','.join(COMMON_KINDS + CHAT_KINDS['teams'])} (Teams); default: all")
    ap.add_argument("--no-pg-restart", action="store_true",
                    help="do not restart the local PostgreSQL server (pg_ctlcluster)")
    ap.add_argument("--kill-every", type=float, default=5.0, help="seconds between kills")
    ap.add_argument("--chaos-seconds", type=float, default=100.0,
                    help="how long faults are injected (from the first slash command)")
    ap.add_argument("--budget", type=float, default=None,
                    help="wall-clock limit of the run after start-up, seconds (default 300; "
                    "Teams 480: an RCA upload a kill cut is known cut 180 s after its claim)")
    ap.add_argument("--start-every", type=float, default=None,
                    help="seconds between slash commands or mentions; 0: all at once "
                    "(default: 1 for Slack, 0 for Teams)")
    ap.add_argument("--lease", type=float, default=6.0, help="GHOST_LEASE_SECONDS")
    ap.add_argument("--ack-target-ms", type=float, default=ACK_TARGET_MS,
                    help="the ack latency p99 target (default %(default)g ms; the smoke test "
                    "checks Slack's own 3,000 ms deadline, as CI machines are busy)")
    ap.add_argument("--minutes", type=float, default=0.0,
                    help="soak: start investigations at a slow steady rate for this long and "
                    "check memory and open connections stay flat")
    ap.add_argument("--cleanup", action="store_true",
                    help="the model also cleans its capture up (three more approvals each: "
                    "a longer run)")
    ap.add_argument("--post-interval", type=float, default=0.0,
                    help="GHOST_SLACK_POST_INTERVAL_S (0: Ghost's Slack pacing off, so the "
                    "run is bounded by Ghost, not by Slack's budget of ~50 edits a minute)")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--keep", action="store_true", help="keep the data directory and logs")
    ns = ap.parse_args(argv)
    known = COMMON_KINDS + CHAT_KINDS[ns.platform]
    if ns.budget is None:
        ns.budget = 480.0 if ns.platform == "teams" else 300.0
    if ns.start_every is None:
        ns.start_every = 0.0 if ns.platform == "teams" else 1.0
    if ns.faults is None:
        ns.faults = ",".join(known)
    if ns.no_faults:
        ns.faults = ""
    kinds = {k for k in ns.faults.split(",") if k}
    unknown = kinds - set(known)
    if unknown:
        ap.error(f"unknown fault kinds: {sorted(unknown)}")
    if ns.no_pg_restart or ns.sqlite:
        kinds.discard("pg")
    ns.kinds = kinds
    if ns.minutes:
        ns.kinds.discard("kills")  # a kill resets a process's memory: it would hide a leak
        ns.chaos_seconds = ns.minutes * 60
        ns.budget = ns.minutes * 60 + 240
        ns.start_every = max(ns.start_every, ns.minutes * 60 / max(1, ns.investigations))
    return ns


def fault_plan(kinds: set[str], chaos_s: float) -> list[tuple[float, str, float]]:
    """When each timed fault opens (s after the first slash command), and for how long."""
    f = chaos_s / 100.0
    plan: list[tuple[float, str, float]] = []
    windows = {"slack429": [(20, 6)], "gemini503": [(35, 6)], "pg": [(50, 0)],
               "slack500": [(65, 6)], "geminihang": [(80, 10)],
               "teams429": [(20, 6)], "teams500": [(65, 6)]}
    if chaos_s > 300:  # soak: the same faults again every five minutes
        windows = {k: [(at + 300 * i, s) for i in range(int(chaos_s // 300))
                       for at, s in v] for k, v in windows.items()}
        f = 1.0
    names = {"gemini503": "gemini_503", "geminihang": "gemini_hang", "pg": "pg_restart",
             **SlackChat.fault_names, **TeamsChat.fault_names}
    for kind, entries in windows.items():
        if kind in kinds:
            plan += [(at * f, names[kind], seconds) for at, seconds in entries]
    return plan


def ghost_env(ns: argparse.Namespace, tmp: Path, db_url: str, chat: SlackChat | TeamsChat,
              gemini: ChaosGemini) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GHOST_", "SLACK_", "GEMINI_", "GOOGLE_", "Microsoft"))}
    env.update({
        "PYTHONPATH": str(ROOT), "GHOST_DATA_DIR": str(tmp / "data"),
        "GHOST_DATABASE_URL": db_url, "GHOST_LAB": SCENARIO, "GHOST_MODEL": "gemini-chaos",
        "GEMINI_API_KEY": gemini.api_key, "GOOGLE_GEMINI_BASE_URL": gemini.base_url,
        **chat.env(), "GHOST_LEASE_SECONDS": str(ns.lease),
        "GHOST_SLACK_POST_INTERVAL_S": str(ns.post_interval), "GHOST_WORKER_THREADS": "4",
        # Slack: separate workers; Teams: each `ghost serve` runs its own
        "GHOST_SERVE_RUNS_WORKER": "true" if ns.sqlite or ns.platform == "teams" else "false",
        "CHAOS_SIDE_EFFECTS": str(tmp / "side_effects.jsonl"),
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    return env


def mb(kb: int) -> str:
    return f"{kb / 1024:.0f} MB"


class Drill:
    """One run: set up, drive, account, tear down (whatever happens)."""

    def __init__(self, ns: argparse.Namespace) -> None:
        self.ns = ns
        self.tmp = Path(tempfile.mkdtemp(prefix="ghost-chaos-"))
        self.faults = Faults()
        self.channels = [f"CCHAOS{i}" for i in range(ns.channels)]
        self.gemini = ChaosGemini(self.faults, cleanup=ns.cleanup)
        self.chat: SlackChat | TeamsChat = (TeamsChat if ns.platform == "teams" else SlackChat)(
            self.faults, self.channels)
        self.db_name = None if ns.sqlite else f"ghost_chaos_{os.getpid()}"
        self.ghosts: list[Ghost] = []
        self.halt = threading.Event()
        self.store: Any = None
        self.conn_samples: list[tuple[float, int]] = []

    # ------------------------------------------------------------------ set-up and tear-down
    def setup(self) -> dict[str, str]:
        self.gemini.start()
        self.chat.start()
        if self.db_name:
            url = pg.create_database(self.db_name)
        else:
            url = f"sqlite:///{self.tmp / 'data' / 'ghost.db'}"
        (self.tmp / "data").mkdir(parents=True, exist_ok=True)
        env = ghost_env(self.ns, self.tmp, url, self.chat, self.gemini)
        done = subprocess.run([sys.executable, "-m", "bot.cli", "db", "upgrade"], env=env,
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"ghost db upgrade failed: {done.stdout}{done.stderr}")
        logs = self.tmp / "logs"
        logs.mkdir()
        def replica(name: str) -> Ghost:
            port = free_port()
            return Ghost(name, "serve", {**env, **self.chat.replica_env(port)},
                         logs / f"{name}.log", port,
                         with_worker=self.ns.sqlite or self.ns.platform == "teams")

        if self.ns.sqlite:
            self.ghosts = [replica("serve")]
        else:
            self.ghosts = [replica(f"replica-{i}") for i in (1, 2)]
        if not self.ns.sqlite and self.ns.platform == "slack":
            self.ghosts += [Ghost(f"worker-{i}", "worker", env, logs / f"worker-{i}.log")
                            for i in (1, 2)]
        for ghost in self.ghosts:
            ghost.start()
        for ghost in self.ghosts:
            ghost.wait_ready()
        from storage.db import Database
        from storage.store import Store

        self.store = Store(Database(url))
        return env

    def teardown(self) -> None:
        self.halt.set()
        for ghost in self.ghosts:
            try:
                ghost.stop()
            except Exception:  # noqa: BLE001 - tear everything down regardless
                pass
        for stop in (self.chat.stop, self.gemini.stop):
            try:
                stop()
            except Exception:  # noqa: BLE001
                pass
        if self.store is not None:
            self.store.db.engine.dispose()
        if self.db_name and self.ns.keep:
            print(f"database {self.db_name} kept (drop it with: psql -h 127.0.0.1 -U root "
                  f"postgres -c 'DROP DATABASE {self.db_name} WITH (FORCE)')")
        elif self.db_name:
            try:
                pg.drop_database(self.db_name)
            except Exception as exc:  # noqa: BLE001
                print(f"could not drop database {self.db_name}: {exc}", file=sys.stderr)
        if self.ns.keep:
            print(f"data and logs kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ the run
    def finished(self, started: list[account.Started]) -> bool:
        """Every investigation the slash commands made is over, and each completed one's RCA
        reached Slack."""
        if len(started) < self.ns.investigations:
            return False
        try:
            rows = self.store.list_investigations(limit=10_000)
        except Exception:  # noqa: BLE001 - the database may be restarting
            return False
        if any(i.status not in ("completed", "failed", "cancelled") for i in rows):
            return False
        completed = [i.session_id for i in rows if i.status == "completed"]
        try:
            return self.chat.settled(self.store, completed)
        except Exception:  # noqa: BLE001 - the database may be restarting
            return False

    def run(self) -> int:
        ns = self.ns
        t_setup = time.monotonic()
        env = self.setup()
        shape = "SQLite, 1 ghost serve" if ns.sqlite else \
            "PostgreSQL, 2 ghost serve replicas + 2 ghost workers" if ns.platform == "slack" \
            else "PostgreSQL, 2 ghost serve replicas, each with its worker"
        start = "all at once" if ns.start_every <= 0 else f"{ns.start_every:g}s apart"
        print(f"chaos drill ({ns.platform}): {shape}; {ns.investigations} investigations "
              f"({start}) in {ns.channels} channels (lab {SCENARIO}); "
              f"faults: {','.join(sorted(ns.kinds)) or 'none'}; lease {ns.lease:g}s; "
              f"start-up {time.monotonic() - t_setup:.1f}s", flush=True)
        bases = [f"http://127.0.0.1:{g.port}" for g in self.ghosts if g.port]
        users = self.chat.users(bases)
        if isinstance(users, TeamsUsers):
            users.warm_up()
        sampler = Sampler(self.ghosts)
        sampler.start()
        requester = Requester(users, self.channels, ns.investigations, ns.start_every, self.halt)
        approver = Approver(users, self.chat, self.store, self.halt)
        restart_pg = pg.restart_server if "pg" in ns.kinds else None
        monkey = Monkey([g for g in self.ghosts], self.faults,
                        fault_plan(ns.kinds, ns.chaos_seconds),
                        kill_every_s=ns.kill_every if "kills" in ns.kinds else 0,
                        chaos_s=ns.chaos_seconds, halt=self.halt, restart_pg=restart_pg,
                        seed=ns.seed)
        t0 = time.monotonic()
        requester.start()
        approver.start()
        if ns.kinds:
            monkey.start()
        deadline = t0 + ns.budget
        next_conn = t0
        next_note = t0 + 30
        while time.monotonic() < deadline:
            if time.monotonic() >= next_note:
                next_note += 30
                self.progress(t0, requester)
            if time.monotonic() >= next_conn and self.db_name:
                self.conn_samples.append((time.monotonic(), pg.connections(self.db_name)))
                next_conn = time.monotonic() + 5
            if not monkey.is_alive() and not requester.is_alive() \
                    and self.finished(requester.started):
                break
            time.sleep(1.0)
        elapsed = time.monotonic() - t0
        self.halt.set()
        if monkey.is_alive():
            monkey.join(timeout=120)
        sampler.halt.set()
        for ghost in self.ghosts:
            ghost.sample()
        for ghost in self.ghosts:  # stop them before counting: nothing moves under the count
            ghost.stop()
        return self.report(env, requester.started, users, approver, monkey, t0, elapsed)

    def progress(self, t0: float, requester: Requester) -> None:
        """One line every 30 s: where the investigations stand."""
        try:
            counts: dict[str, int] = {}
            for inv in self.store.list_investigations(limit=10_000):
                counts[inv.status] = counts.get(inv.status, 0) + 1
        except Exception as exc:  # noqa: BLE001 - the database may be restarting
            counts = {f"database: {type(exc).__name__}": 1}
        kills = sum(g.kills for g in self.ghosts)
        print(f"  t={time.monotonic() - t0:5.0f}s  started {len(requester.started)}  "
              + "  ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + f"  (kills so far {kills})", flush=True)

    # ------------------------------------------------------------------ the figures
    def report(self, env: dict[str, str], started: list[account.Started], users: Any,
               approver: Approver, monkey: Monkey, t0: float, elapsed: float) -> int:
        ns = self.ns
        print(f"\nran {elapsed:.0f}s; faults injected:" if monkey.log else
              f"\nran {elapsed:.0f}s; no faults injected")
        for line in monkey.log:
            print(line)
        print(f"  {self.chat.faulted_line()};"
              f" Gemini {self.gemini.faulted['503']}×503, {self.gemini.faulted['hang']} hung; "
              f"kills {sum(g.kills for g in self.ghosts)}; clicks: "
              f"{len(approver.clicked)} cards, {approver.double_clicks} double-clicked, "
              f"{approver.replays} replayed, {len(approver.reclicks)} clicked again after "
              f"{approver.reclick_s:g}s without effect")
        if ns.keep:
            self.chat.keep(self.tmp)
        requested = started
        started, lost = account.from_database(self.store, requested)
        statuses = {i.session_id: i.status for i in self.store.list_investigations(limit=10_000)}
        done = [s for s in started if statuses.get(s.session_id or "") == "completed"]
        verdicts: list[Verdict] = []
        not_done = [f"chaos-{s.n:02d} ({s.session_id}): {statuses.get(s.session_id or '')}"
                    for s in started if statuses.get(s.session_id or "") != "completed"]
        tags = [s.n for s in started]
        twice = sorted({n for n in tags if tags.count(n) > 1})
        names = ", ".join(f"chaos-{n:02d}" for n in twice)
        extra = (f"; {len(started) - len(set(tags))} more from slash commands retried after "
                 f"a replica died before its ack ({names})" if twice else "")
        # Teams redelivers a request with its activity id: a second investigation is a bug
        once = not twice or ns.platform == "slack"
        what = "slash commands" if ns.platform == "slack" else "mentions"
        verdicts.append(Verdict(
            f"investigations completed / started: {len(done)}/{len(started)} "
            f"({len(requested)} {what}{extra})",
            len(done) == len(started) and not lost and len(requested) == ns.investigations
            and once, lost + not_done))
        trace = account.side_effects(self.tmp / "side_effects.jsonl")
        verdicts.append(account.executed_once(started, self.store, trace))
        verdicts.append(account.verify_chains(started, env))
        posts, rcas = self.chat.thread_posts(started, self.store,
                                             kills=sum(g.kills for g in self.ghosts))
        verdicts += [posts, rcas]
        verdicts += self.latency_verdicts(started, requested, approver)
        rca_at = self.chat.rca_times(started)
        last_fault = self.faults.last_end()
        if rca_at and last_fault is not None and max(rca_at) >= last_fault:
            line = f"time from the last fault to the last RCA: {max(rca_at) - last_fault:.1f}s"
        elif rca_at and last_fault is not None:
            line = (f"the last RCA reached Slack {last_fault - max(rca_at):.1f}s before the last "
                    "fault ended")
        elif rca_at:
            line = f"time from the first slash command to the last RCA: {max(rca_at) - t0:.1f}s"
        else:
            line = f"no RCA reached {ns.platform.capitalize()}"
        verdicts.append(Verdict(line, bool(rca_at)))
        acks = [a for a in users.acks if a.status in (200, 201)]
        during = [a.ms for a in acks if self.faults.any_active(a.at, slack=2.0)]
        all_ms = [a.ms for a in acks]
        # Teams answers a message 200 or 201; a 5xx is redelivered by the connector (counted)
        bad_status = [a for a in users.acks if a.status not in (200, 201)]
        target = float(ns.ack_target_ms)
        lat_ok = (pct(during, 99) < target if during else True) and \
            pct(all_ms, 99) < target and not bad_status
        verdicts.append(Verdict(
            f"ack latency during faults: p50 {pct(during, 50):.0f} ms  p99 {pct(during, 99):.0f} ms"
            f"  (n={len(during)});  all: p50 {pct(all_ms, 50):.0f} ms  p99 {pct(all_ms, 99):.0f} ms"
            f"  max {max(all_ms, default=0):.0f} ms (n={len(all_ms)}; target p99 < "
            f"{target:.0f} ms); non-200 acks {len(bad_status)}; refused connections "
            f"{users.refused} (retried on the other replica)"
            + (f"; 5xx redelivered {users.redelivered}" if users.redelivered else ""), lat_ok,
            [f"{a.kind} → replica {a.replica}: HTTP {a.status}" for a in bad_status[:10]]
            + [f"slow ack: {a.kind} → replica-{a.replica + 1} {a.ms:.0f} ms at t="
               f"{a.at - t0:.1f}s; open: {', '.join(self.faults.open_at(a.at, 2.0)) or '-'}"
               for a in sorted(acks, key=lambda a: -a.ms)[:3] if a.ms >= target]))
        roles: dict[str, int] = {}
        for ghost in self.ghosts:
            roles[ghost.name] = ghost.peak_kb
        verdicts.append(Verdict("peak memory (RSS) per process: " + ", ".join(
            f"{name} {mb(kb)}" for name, kb in roles.items()), True))
        if ns.minutes:
            verdicts += self.soak_verdicts()
        problems = [f"Gemini rejected: {r}" for r in self.gemini.rejected[:20]]
        problems += users.errors[:20] + monkey.errors
        problems += [f"{n}× a replica did not answer: {why}" for why, n in
                     users.refusals.most_common(5)]
        print()
        for v in verdicts:
            print(f"{'ok  ' if v.ok else 'MISS'}  {v.line}")
            for d in v.details[:25]:
                print(f"        - {d}")
        if problems:
            print("\nother problems seen:")
            for p in problems:
                print(f"  - {p}")
        print(f"\nlogs: {self.tmp / 'logs'}" if ns.keep else "")
        missed = [v for v in verdicts if not v.ok]
        print(f"{'ALL TARGETS MET' if not missed else f'{len(missed)} TARGET(S) MISSED'}")
        return 1 if missed else 0

    def latency_verdicts(self, started: list[account.Started], requested: list[account.Started],
                         approver: Approver) -> list[Verdict]:
        """Ack → thread root, and Approve → command start (issue 34's 2 s at p99). Both are
        targets on Teams; on Slack (one slash command a second, not a burst) they are reported,
        and `benchmarks/slack_ack.py` holds them to the target. A click whose investigation a
        fault could have held up (a window open from one lease before the click to 2 s after:
        its holder killed, the database restarting) is reported apart: its wait is the lease's."""
        acked = {r.n: r.acked_at for r in requested if r.status == 200}
        roots = [r * 1000 for r in self.chat.root_times(started, acked)]
        target = self.ns.platform == "teams"
        burst = " (all started at once)" if self.ns.start_every <= 0 else ""
        root_ok = bool(roots) and len(roots) == len(started) and pct(roots, 99) < ROOT_TARGET_MS
        out = [Verdict(
            f"ack → thread root (as the {self.ns.platform} stand-in received it){burst}: "
            f"p50 {pct(roots, 50):.0f} ms  p99 {pct(roots, 99):.0f} ms  max "
            f"{max(roots, default=0):.0f} ms  ({len(roots)} of {len(started)}"
            + (f"; target p99 < {ROOT_TARGET_MS:.0f} ms)" if target else "; reported)"),
            root_ok or not target)]
        waits = account.approve_to_start(self.store, approver.first_click)
        lease = float(self.ns.lease)
        quiet = [ms for a, ms in waits.items()
                 if not self.faults.overlaps(approver.first_at[a] - lease,
                                             approver.first_at[a] + 2.0)]
        held = [ms for a, ms in waits.items() if ms not in quiet]
        start_ok = bool(waits) and (pct(quiet, 99) < START_TARGET_MS if quiet else True)
        out.append(Verdict(
            f"Approve → command start, no fault near the click: p50 {pct(quiet, 50):.0f} ms  "
            f"p99 {pct(quiet, 99):.0f} ms (n={len(quiet)}"
            + (f"; target p99 < {START_TARGET_MS:.0f} ms)" if target else "; reported)")
            + f";  near a fault: p50 {pct(held, 50):.0f} ms  p99 {pct(held, 99):.0f} ms  max "
            f"{max(held, default=0):.0f} ms (n={len(held)})",
            start_ok or not target))
        return out

    def soak_verdicts(self) -> list[Verdict]:
        """Memory and open connections flat: the last third's mean within 20 % (+16 MB, +2
        connections) of the first third's, per process."""
        out: list[Verdict] = []
        lines = []
        flat = True
        for ghost in self.ghosts:
            kb = [k for _t, k in ghost.samples if k]
            if len(kb) < 6:
                continue
            third = len(kb) // 3
            first, last = sum(kb[:third]) / third, sum(kb[-third:]) / third
            grew = last > first * 1.2 + 16 * 1024
            flat &= not grew
            lines.append(f"{ghost.name} {mb(int(first))} → {mb(int(last))}")
        out.append(Verdict("soak memory (first third → last third): " + ", ".join(lines), flat))
        conns = [c for _t, c in self.conn_samples if c >= 0]
        if len(conns) >= 6:
            third = len(conns) // 3
            first_c, last_c = sum(conns[:third]) / third, sum(conns[-third:]) / third
            out.append(Verdict(f"soak open PostgreSQL connections: {first_c:.1f} → {last_c:.1f} "
                               f"(max {max(conns)})", last_c <= first_c * 1.2 + 2))
        return out


def main(argv: list[str] | None = None) -> int:
    ns = parse(argv)
    drill = Drill(ns)

    def on_term(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # SIGINT too: a shell
        signal.signal(sig, on_term)  # starting the drill in the background ignores it
    try:
        return drill.run()
    except KeyboardInterrupt:
        print("interrupted: stopping every process the drill started", file=sys.stderr)
        return 130
    finally:
        drill.teardown()


if __name__ == "__main__":
    sys.exit(main())
