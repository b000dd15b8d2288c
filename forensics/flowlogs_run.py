"""Run the flow-log analysis over blobs: in this process, or split over cores by blob.

Blobs are independent, so a large input is cut into contiguous runs of blobs (in name order,
about equal bytes each); each run is read by its own forked process and the aggregates are
merged in order, which gives what one process gives. The split is checked, not assumed: if
the same record turns up in two runs (one blob downloaded twice under two names), the
input is read again in one process, which keeps only the first copy.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Callable

from .flowlogs_agg import Aggregator, NsgFlowLogError
from .flowlogs_model import Filter
from .flowlogs_read import Blob, NotFlowLogError, iter_records

PARALLEL_MIN_BYTES = 64 << 20
Progress = Callable[[int, int], None]
#: peak RSS (kB) and CPU time (s) of each forked reader, for the benchmark
CHILD_RSS_KB: list[int] = []
CHILD_CPU_S: list[float] = []


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def plan_jobs(blobs: list[Blob], jobs: int | None) -> int:
    if jobs is not None:
        return max(1, min(jobs, len(blobs) or 1))
    total = sum(b.size for b in blobs)
    return min(available_cores(), len(blobs)) if total >= PARALLEL_MIN_BYTES else 1


def read_blobs(blobs: list[Blob], filt: Filter, progress: Progress | None = None) -> Aggregator:
    """One process: every blob in order; a blob that cannot be read is skipped and says why."""
    agg = Aggregator(filt)
    done = 0
    total = sum(b.size for b in blobs)
    for blob in blobs:
        try:
            agg.add_blob(blob, iter_records(blob))
        except NotFlowLogError as exc:
            # a file named as a blob is a damaged blob; any other JSON is simply not one
            blob.status = "damaged" if blob.looks_like_blob else "skipped"
            blob.warnings.append(str(exc))
        except NsgFlowLogError:
            blob.status = "skipped"
            blob.warnings.append("an NSG flow log (NetworkSecurityGroupFlowEvent), not a VNet "
                                 "flow log: skipped (this reader reads VNet flow logs, "
                                 "flowLogVersion 4)")
        except OSError as exc:
            blob.status = "unreadable"
            blob.warnings.append(f"unreadable: {exc.strerror or exc}")
        done += blob.size
        if progress is not None:
            progress(done, total)
    return agg


def analyse(blobs: list[Blob], filt: Filter, jobs: int = 1,
            progress: Progress | None = None) -> Aggregator:
    """The aggregate of every blob, with ``jobs`` processes."""
    if jobs <= 1 or len(blobs) < 2 or not hasattr(os, "fork"):
        return read_blobs(blobs, filt, progress)
    runs = _split(blobs, jobs)
    children: list[tuple[int, int]] = []
    results: list[Aggregator | None] = []
    try:
        for part in runs[1:]:
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, which exits
                os.close(rfd)
                for _pid, fd in children:
                    os.close(fd)
                _child(wfd, part, filt)
            os.close(wfd)
            children.append((pid, rfd))
        share = sum(b.size for b in runs[0])
        total = sum(b.size for b in blobs)
        # the parent's own run stands for the whole (the others read alongside)
        scaled = None if progress is None else (
            lambda d, _t: progress(min(total, d * total // max(share, 1)), total))
        results.append(read_blobs(runs[0], filt, scaled))
        for pid, rfd in list(children):
            with os.fdopen(rfd, "rb") as inp:  # unpickled as it streams in: no second copy
                try:
                    got: Aggregator | None = pickle.load(inp)
                except (EOFError, pickle.UnpicklingError):
                    got = None
            children.remove((pid, rfd))
            usage = os.wait4(pid, 0)[2]
            CHILD_RSS_KB.append(usage.ru_maxrss)
            CHILD_CPU_S.append(usage.ru_utime + usage.ru_stime)
            results.append(got)
    finally:
        for pid, rfd in children:  # interrupted: leave nothing running
            os.close(rfd)
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
    if any(r is None for r in results):
        return read_blobs(blobs, filt, progress)
    agg = results[0]
    assert agg is not None
    for other in results[1:]:
        assert other is not None
        if agg.seen_records & other.seen_records:
            return read_blobs(blobs, filt, progress)
        agg.merge(other)
    return agg


def _child(wfd: int, part: list[Blob], filt: Filter) -> None:
    code = 0
    try:
        try:
            agg: Aggregator | None = read_blobs(part, filt)
        except Exception:  # noqa: BLE001 - the parent reads everything again itself
            agg = None
        with os.fdopen(wfd, "wb") as out:
            pickle.dump(agg, out, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # noqa: BLE001 - never run the parent's code in the child
        code = 1
    finally:
        os._exit(code)


def _split(blobs: list[Blob], jobs: int) -> list[list[Blob]]:
    """Contiguous runs of about equal bytes (the first a little smaller: it also writes the
    report)."""
    total = sum(b.size for b in blobs) or 1
    target = total / jobs
    runs: list[list[Blob]] = [[]]
    acc = 0
    for b in blobs:
        if runs[-1] and acc >= target * len(runs) and len(runs) < jobs:
            runs.append([])
        runs[-1].append(b)
        acc += b.size
    return [r for r in runs if r]


class TtyProgress:
    """``reading 120/576 MB (21 %)`` on stderr, rewritten in place, only on a terminal."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.on or now - self.last < 0.5 or total < (32 << 20):
            return
        self.last = now
        self.shown = True
        pct = 100 * done // max(total, 1)
        print(f"\rreading {done >> 20:,}/{total >> 20:,} MB ({pct} %)", end="",
              file=sys.stderr, flush=True)

    def clear(self) -> None:
        if self.shown:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)
