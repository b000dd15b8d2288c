"""Benchmark of ``ghost-forensics flowlogs`` on generated VNet flow logs (issue #33).

    .venv/bin/python benchmarks/flowlogs.py [--gb 1.0] [--also-gb 0.25] [--repeat 1]
                                            [--work /tmp/ghost-bench/flowlogs]

Generates (once, cached under ``--work``) about ``--gb`` GB of realistic version-4 blobs with
``benchmarks/flowlogs_gen.py``: 24 NICs over 12 hours, one PT1H.json per NIC and hour, a busy
NIC with six times the records, thousands of tuples a minute, scanners, a planted denial
window, a one-way flow and a sudden stop, and their activity log. Then runs the real CLI
(``ghost-forensics flowlogs DIR --events FILE --out TMP``) with ``--jobs 1`` and with its
default (one process per core) and prints, for each, the wall time, the throughput (MB/s of
JSON), the CPU time and peak RSS of every process, and whether the findings match the
planted truth. ``--also-gb`` runs the same on a smaller set first, so that the peak RSS of the
two sizes can be compared: it must not grow with the input. About 40 s to generate a GB the
first time, and a minute to run on an idle two-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.flowlogs_gen import Plan, generate  # noqa: E402

BYTES_PER_TUPLE = 69  # measured on the generator's output
NICS, HOURS, BUSY = 24, 12, 6
# Runs the real CLI, then reports its own and its readers' peak RSS (kB) and CPU (s).
_CLI = (
    "import json, resource, sys\n"
    "from forensics import flowlogs_run\n"
    "from forensics.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "me = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print('RSS ' + json.dumps([me.ru_maxrss] + flowlogs_run.CHILD_RSS_KB), file=sys.stderr)\n"
    "print('CPU ' + json.dumps([me.ru_utime + me.ru_stime] + flowlogs_run.CHILD_CPU_S),\n"
    "      file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _plan(gb: float) -> Plan:
    minutes = HOURS * 60
    webs = NICS - 2
    per_minute = gb * 1e9 / BYTES_PER_TUPLE / minutes
    # web NICs log tuples_per_minute each (the busy one BUSY times), Redis and the API mirror
    # a few per web NIC
    tpm = max(50, int(per_minute / (webs + BUSY - 1 + 0.1 * webs)))
    return Plan(nics=NICS, hours=HOURS, tuples_per_minute=tpm, busy=BUSY,
                deny_from=300, deny_until=345, one_way_from=500, stop_at=600)


def dataset(work: str, gb: float) -> tuple[str, dict[str, Any]]:
    """The blobs folder and the truth, generated once per size."""
    plan = _plan(gb)
    d = os.path.join(work, f"{gb:g}gb-{plan.tuples_per_minute}tpm-v1")
    done = os.path.join(d, "truth.json")
    if not os.path.exists(done):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        truth = generate(d, plan)
        truth.pop("files")
        with open(done, "w", encoding="utf-8") as fh:
            json.dump(truth, fh, default=str)
    with open(done, encoding="utf-8") as fh:
        return d, json.load(fh)


def _run(argv: list[str]) -> tuple[float, list[int], list[float]]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                            text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"ghost-forensics flowlogs failed: {err.strip()[-500:]}")
    rss, cpu = [usage.ru_maxrss], [usage.ru_utime + usage.ru_stime]
    for line in err.splitlines():
        if line.startswith("RSS "):
            rss = json.loads(line[4:])
        elif line.startswith("CPU "):
            cpu = json.loads(line[4:])
    return wall, rss, cpu


def _check(doc: dict[str, Any], truth: dict[str, Any]) -> str:
    """The planted denial window, one-way flow and stop, each found as planted."""
    f = {x["id"]: x for x in reversed(doc["findings"])}
    misses = []
    den = [x for x in doc["findings"] if x["id"] == "flow_denied"
           and x["rule"]["name"] == truth["deny_rule"]]
    first = min(d["first_minute"] for d in truth["denied"])[:16].replace(" ", "T") + "Z"
    last = max(d["last_minute"] for d in truth["denied"])[:16].replace(" ", "T") + "Z"
    if not den or den[0]["window"]["from"] != first or den[0]["window"]["until"] != last or \
            den[0]["counts"]["flow_records"] != sum(d["tuples"] for d in truth["denied"]):
        misses.append("denial window")
    ow = f.get("flow_one_way")
    if not ow or ow["counts"]["flow_records"] != sum(d["tuples"] for d in truth["one_way"]):
        misses.append("one-way flow")
    st = f.get("flow_sudden_stop")
    stop_last = max(d["last_minute"] for d in truth["stopped"])[:16].replace(" ", "T") + "Z"
    if not st or st["window"]["last_active"] != stop_last or not st["event"]:
        misses.append("sudden stop")
    return "findings match the planted truth" if not misses else "MISSED: " + ", ".join(misses)


def bench(work: str, gb: float, repeat: int) -> None:
    t0 = time.perf_counter()
    d, truth = dataset(work, gb)
    size = truth["bytes"]
    print(f"{size / 1e6:,.0f} MB of flow-log JSON, {truth['tuples']:,} tuples, "
          f"{len(os.listdir(os.path.join(d, 'blobs')))} flow log(s) "
          f"(ready in {time.perf_counter() - t0:.1f} s)")
    out = tempfile.mkdtemp(prefix="ghost-bench-fl-")
    try:
        base = [sys.executable, "-c", _CLI, "flowlogs", os.path.join(d, "blobs"),
                "--events", os.path.join(d, "events.json"), "--out", out]
        for name, extra in (("--jobs 1", ["--jobs", "1"]), ("default jobs", [])):
            walls, peak, cpus = [], [0], [0.0]
            for _ in range(repeat):
                wall, rss, cpu = _run(base + extra)
                if not walls or wall < min(walls):
                    cpus = cpu
                walls.append(wall)
                if sum(rss) > sum(peak):
                    peak = rss
            best = min(walls)
            spread = f" (median {statistics.median(walls):.1f} s)" if repeat > 1 else ""
            print(f"  {name:<13}{best:6.1f} s{spread}  {size / 1e6 / best:6.1f} MB/s  "
                  f"{truth['tuples'] / best / 1e6:5.2f} M tuples/s  CPU "
                  f"{' + '.join(f'{c:.1f}' for c in cpus)} s  peak RSS "
                  f"{' + '.join(f'{r / 1024:.0f}' for r in peak)} MB")
        with open(os.path.join(out, "flowlogs_semantic.json"), encoding="utf-8") as fh:
            doc = json.load(fh)
        print(f"  {doc['inputs']['flows']:,} flows; " + _check(doc, truth))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ghost-bench",
                                                   "flowlogs"))
    ap.add_argument("--gb", type=float, default=1.0, help="size of the main set (GB of JSON)")
    ap.add_argument("--also-gb", type=float, default=0.25,
                    help="a smaller set run first, to compare peak RSS (0: none)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command (best kept)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    for gb in ([args.also_gb] if args.also_gb else []) + [args.gb]:
        bench(args.work, gb, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
