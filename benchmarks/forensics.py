"""Benchmark of ghost-forensics against tshark on a generated two-ended capture (issue #21).

    .venv/bin/python benchmarks/forensics.py [--work /tmp/ghost-bench] [--flows 10450]
                                             [--repeat 1] [--no-compare] [--no-tshark]

In one run, on the same file (the client end of benchmarks/forensics_gen.py's pair: about a
million packets in 10,450 TCP connections, ~700 MB, generated once and cached under
``--work``): the ``ghost-forensics`` CLI with ``--jobs 1`` and with one job per available
core, ``tshark -n -q -r FILE -z expert``, and ``ghost-forensics A --compare B`` of the two
ends. For each it prints the wall time, packets/s, the ratio to tshark's wall time, the
peak RSS of each process and in total, and the CPU time of each process (on a busy machine
the largest of these is what the wall time would be on an idle one). ``--repeat N`` runs each
N times and prints the best and the median. About 1 minute on an idle two-core machine (plus
~15 s to generate the pair the first time).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.forensics_gen import two_ended_pair  # noqa: E402
from forensics.parallel import available_cores  # noqa: E402

# Runs the real CLI, then reports its own and its share processes' peak RSS (kB) on stderr.
_CLI = (
    "import json, resource, sys\n"
    "from forensics import parallel\n"
    "from forensics.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "me = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print('RSS ' + json.dumps([me.ru_maxrss] + parallel.SHARE_RSS_KB), file=sys.stderr)\n"
    "print('CPU ' + json.dumps([me.ru_utime + me.ru_stime] + parallel.SHARE_CPU_S),\n"
    "      file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _run(argv: list[str]) -> tuple[float, list[int], list[float]]:
    """Wall time, peak RSS (kB) and CPU time (s) of each process of a command."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=ROOT, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {err.strip()[-500:]}")
    rss = [usage.ru_maxrss]
    cpu = [usage.ru_utime + usage.ru_stime]
    for line in err.splitlines():
        if line.startswith("RSS "):
            rss = json.loads(line[4:])
        elif line.startswith("CPU "):
            cpu = json.loads(line[4:])
    return wall, rss, cpu


def _ghost(capture: str, out: str, *extra: str) -> list[str]:
    return [sys.executable, "-c", _CLI, capture, "--semantic-dir", out, "--report-dir", out,
            *extra]


def _line(name: str, walls: list[float], rss: list[int], cpu: list[float], packets: int,
          tshark: float | None) -> str:
    best, typical = min(walls), statistics.median(walls)
    ratio = f"{best / tshark:.2f}x tshark" if tshark else "tshark not run"
    rs = " + ".join(f"{r / 1024:.0f}" for r in rss)
    cs = " + ".join(f"{c:.1f}" for c in cpu)
    spread = f" (median {typical:.2f} s)" if len(walls) > 1 else ""
    return (f"{name:<34}{best:7.2f} s{spread}  {packets / best:>9,.0f} packets/s  {ratio:<15}"
            f"  peak RSS {rs} = {sum(rss) / 1024:.0f} MB  CPU {cs} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ghost-bench"),
                    help="where the generated pair is cached (default: %(default)s)")
    ap.add_argument("--flows", type=int, default=10_450, help="TCP connections to generate")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command")
    ap.add_argument("--no-compare", action="store_true", help="skip the two-ended comparison")
    ap.add_argument("--no-tshark", action="store_true", help="skip tshark")
    args = ap.parse_args()
    t0 = time.perf_counter()
    cap_a, cap_b = two_ended_pair(args.work, args.flows)
    print(f"capture {cap_a}: {os.path.getsize(cap_a) / 1e6:.0f} MB "
          f"(ready in {time.perf_counter() - t0:.1f} s); {available_cores()} cores available")
    out = tempfile.mkdtemp(prefix="ghost-bench-out-")
    try:
        jobs = available_cores()
        runs: dict[str, tuple[list[float], list[int], list[float]]] = {}
        plan = [("ghost-forensics --jobs 1", _ghost(cap_a, out, "--jobs", "1")),
                (f"ghost-forensics (auto: {jobs} jobs)", _ghost(cap_a, out))]
        if not args.no_tshark and shutil.which("tshark"):
            plan.append(("tshark -n -q -z expert",
                         ["tshark", "-n", "-q", "-r", cap_a, "-z", "expert"]))
        if not args.no_compare:
            plan.append(("ghost-forensics A --compare B", _ghost(cap_a, out, "--compare", cap_b)))
        for _ in range(args.repeat):  # interleaved, so that load changes hit all alike
            for name, argv in plan:
                wall, rss, cpu = _run(argv)
                walls, peak, cpus = runs.setdefault(name, ([], [], []))
                if not walls or wall < min(walls):
                    cpus[:] = cpu  # the CPU times of the best run
                walls.append(wall)
                if not peak or sum(rss) > sum(peak):
                    peak[:] = rss
        with open(os.path.join(out, Path(cap_a).stem + "_semantic.json"), encoding="utf-8") as fh:
            packets = int(json.load(fh)["capture"]["packets"])
        tshark = min(runs["tshark -n -q -z expert"][0]) if "tshark -n -q -z expert" in runs \
            else None
        print(f"{packets:,} packets; best of {args.repeat}; load average "
              f"{os.getloadavg()[0]:.1f}")
        for name, (walls, peak, cpus) in runs.items():
            print(_line(name, walls, peak, cpus, packets, tshark))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
