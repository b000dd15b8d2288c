"""Analysis on every core: the capture's flows split among processes, merged exactly.

Each share (one process; the parent is share 0) reads the whole file itself and skips the
packets of other shares after a look at the IP and port fields (``analyzer.share_of``): a
flow's packets, both directions, always go to the same share, so each share runs the
single-process analysis on whole flows and nothing per packet crosses processes. Share 0
takes every packet whose flow cannot be told that cheaply or whose state spans flows:
fragments, tunnels, ICMP, DNS, non-IP and exotic link types. Only the per-flow results
travel back (one pickle per share), and ``merge`` puts them together in frame order, so the
output is byte for byte the single-process one.

The split is checked, not assumed: if a flow turns up in two shares (the same 5-tuple both
inside a tunnel or a fragment and in plain packets), or a share stopped early on a corrupt
record, the capture is analysed again in one process.
"""

from __future__ import annotations

import functools
import mmap
import os
import pickle
import struct
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar, cast

from .analyzer import EVIDENCE_PER_FLAG, Analyzer
from .app import MAX_EXAMPLES as APP_EXAMPLES
from .errors import CorruptCaptureError
from .flows import F_FIRST_FRAME
from .linklayer import L3_AT
from .reader import CHUNK, MAX_RECORD, CaptureInfo, identify, open_capture
from .tcp_analysis import FLAG_NAMES

#: below this size one process is faster than starting others (measured: ~0.1 s of start,
#: pickling and merging against ~0.2 s saved per 24 MB on two cores)
PARALLEL_MIN_BYTES = 24 * 1024 * 1024
T = TypeVar("T")
#: peak RSS (kB) and CPU time (s) of each process forked here, for the benchmark
SHARE_RSS_KB: list[int] = []
SHARE_CPU_S: list[float] = []


def _reap(pid: int) -> None:
    usage = os.wait4(pid, 0)[2]
    SHARE_RSS_KB.append(usage.ru_maxrss)
    SHARE_CPU_S.append(usage.ru_utime + usage.ru_stime)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, so a container's limit counts)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def plan_jobs(path: str, jobs: int | None) -> int:
    """How many processes analyse ``path``: ``jobs`` when given (even for a small file),
    else one per available core for a capture of at least PARALLEL_MIN_BYTES."""
    if jobs is not None:
        return max(1, jobs)
    try:
        size = os.path.getsize(path)
    except OSError:
        return 1
    return available_cores() if size >= PARALLEL_MIN_BYTES else 1


def run_share(path: str, share: int, shares: int) -> Analyzer | None:
    """Analyse one share of the capture, every share reading the whole file and the analyzer
    skipping other shares' packets after its link-layer decode (pcapng, uncommon link types);
    None when it stopped early (corrupt record)."""
    info, records = open_capture(path)
    a = Analyzer(info)
    a.share, a.shares = share, shares
    try:
        a.run(records)
    except (CorruptCaptureError, struct.error, IndexError):
        return None
    return a


def _send(wfd: int, work: Callable[[], Analyzer | None]) -> None:
    """Body of a forked share: analyse, send the pickled result down the pipe, exit."""
    code = 0
    try:
        try:
            blob = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - the parent redoes the analysis in one process
            blob = pickle.dumps(None)
        with os.fdopen(wfd, "wb") as out:
            out.write(blob)
    except BaseException:  # noqa: BLE001 - never run the parent's code in the child
        code = 1
    finally:
        os._exit(code)


def analyze_parallel(path: str, shares: int) -> Analyzer | None:
    """The merged analysis of ``path`` by ``shares`` processes, or None when it must be redone
    in one process (no fork on this platform, a share failed, or a flow straddled shares)."""
    if not hasattr(os, "fork"):
        return None
    from .chunks import map_file, unmap  # numpy loaded once, before the fork

    info, fh, pcap = identify(path)
    with fh:  # a mapping outlives its file's descriptor
        mm = map_file(fh) if pcap is not None and pcap[2] in L3_AT else None
        start = fh.tell()  # after the file header
    if pcap is None or mm is None:
        return _gather(shares, lambda share: run_share(path, share, shares))
    try:
        return _dealt(info, mm, start, pcap, shares)
    finally:
        unmap(mm)


def _dealt(info: CaptureInfo, mm: mmap.mmap, start: int, pcap: tuple[str, bool, int],
           shares: int) -> Analyzer | None:
    """Share 0 walks the mapped pcap from ``start`` and deals the other shares their records
    (share_reader.py); each share analyses its own, through the mapping it inherits."""
    from .share_reader import deal, dealt_records, own_records

    endian, ns, linktype = pcap
    with tempfile.TemporaryFile(prefix="ghost-forensics-") as spool:
        notices: list[int] = []
        reading: list[int] = []

        def other(share: int) -> Analyzer | None:
            for fd in notices:  # share 0's ends of the other shares' pipes
                os.close(fd)
            a = Analyzer(info)
            a.share, a.shares, a.frames_given_linktype = share, shares, linktype
            a.run(dealt_records(mm, spool.fileno(), reading[share - 1]))
            a.frames_given_linktype = 0
            return a

        def first() -> Analyzer | None:
            for fd in reading:
                os.close(fd)
            reading.clear()
            try:
                own, totals = deal(mm, start, endian, ns, linktype, shares, spool.fileno(),
                                   notices, CHUNK, MAX_RECORD)
            except OSError:  # the spool's disk is full, say: redone in one process
                return None
            finally:
                for fd in notices:
                    os.close(fd)
                notices.clear()
            a = Analyzer(info)
            a.share, a.shares, a.frames_given_linktype = 0, shares, linktype
            try:
                a.run(own_records(mm, own))
            except (CorruptCaptureError, struct.error, IndexError):
                return None
            a.frames_given_linktype = 0
            info.warnings.extend(totals.warnings)
            (a.packets, a.bytes, a.truncated_packets, a.ts_backwards, a.first_ts,
             a.last_ts) = (totals.frames, totals.bytes, totals.truncated, totals.backwards,
                           totals.first_ts, totals.last_ts)
            return a

        try:
            for _share in range(1, shares):
                rfd, wfd = os.pipe()
                reading.append(rfd)
                notices.append(wfd)
            return _gather(shares, lambda share: first() if share == 0 else other(share))
        finally:  # a fork that failed, say: no pipe left open
            for fd in reading + notices:
                os.close(fd)


def _gather(shares: int, work: Callable[[int], Analyzer | None]) -> Analyzer | None:
    """Run ``work(share)`` for shares 1.. in forked processes and share 0 here; merge."""
    children: list[tuple[int, int]] = []
    try:
        for share in range(1, shares):
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child, which exits
                os.close(rfd)
                for _pid, fd in children:
                    os.close(fd)
                _send(wfd, functools.partial(work, share))
            os.close(wfd)
            children.append((pid, rfd))
        results: list[Analyzer | None] = [work(0)]
        for pid, rfd in children:
            with os.fdopen(rfd, "rb") as inp:
                blob = inp.read()
            children = [c for c in children if c[0] != pid]
            _reap(pid)
            results.append(pickle.loads(blob) if blob else None)
    finally:
        for pid, rfd in children:  # interrupted: do not leave shares running
            os.close(rfd)
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
    done = [a for a in results if a is not None]
    if len(done) != len(results):
        return None
    return merge(done)


def background(fn: Callable[..., T], *args: Any) -> Callable[[], T]:
    """Start ``fn(*args)`` in a forked process; the returned function waits for its result.

    Where there is no fork, or the process fails, the result is computed in this process
    when asked for (the same result, later), so a caller never sees the difference.
    """
    if not hasattr(os, "fork"):
        return lambda: fn(*args)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which exits
        os.close(rfd)
        code = 0
        try:
            try:
                blob = pickle.dumps(("ok", fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - the parent computes it again itself
                blob = pickle.dumps(("failed", None))
            with os.fdopen(wfd, "wb") as out:
                out.write(blob)
        except BaseException:  # noqa: BLE001 - never run the parent's code in the child
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)

    def join() -> T:
        try:
            with os.fdopen(rfd, "rb") as inp:
                blob = inp.read()
        finally:
            _reap(pid)
        status, value = pickle.loads(blob) if blob else ("failed", None)
        return cast(T, value) if status == "ok" else fn(*args)

    return join


def _first_frames(lists: list[list[int]], limit: int) -> list[int]:
    return sorted(f for frames in lists for f in frames)[:limit]


def _by_frame(lists: list[list[dict[str, Any]]], limit: int) -> list[dict[str, Any]]:
    return sorted((e for items in lists for e in items), key=lambda e: int(e["frame"]))[:limit]


def _add_counts(dst: dict[Any, int], src: dict[Any, int]) -> None:
    for k, v in src.items():
        dst[k] = dst.get(k, 0) + v


def merge(parts: list[Analyzer]) -> Analyzer | None:
    """One analyzer holding what the shares found, as the single-process run would have it;
    None when a flow was seen by two shares (the split did not hold for this capture)."""
    a = parts[0]
    if len(parts) == 1:
        return a
    rest = parts[1:]
    seen: set[Any] = set(a.tcp_convs)
    seen_other: set[Any] = set(a.other_flows)
    for p in rest:
        if not seen.isdisjoint(p.tcp_convs) or not seen_other.isdisjoint(p.other_flows):
            return None
        seen.update(p.tcp_convs)
        seen_other.update(p.other_flows)
    # the capture totals: share 0 counted them over every record (``a`` is share 0)
    for p in rest:
        a.oversized_packets += p.oversized_packets
        a.ip_len_zero += p.ip_len_zero
        a.non_ip_packets += p.non_ip_packets
        a.undecodable_packets += p.undecodable_packets
        a.ipv4_packets += p.ipv4_packets
        a.ipv6_packets += p.ipv6_packets
        a.fragments += p.fragments
        a.tcp_resets += p.tcp_resets
        a.max_ip_len = max(a.max_ip_len, p.max_ip_len)
        _add_counts(a.flag_counts, p.flag_counts)
        a.frame_flags.update(p.frame_flags)
        a.tcp_convs.update(p.tcp_convs)
        a.other_flows.update(p.other_flows)
        _add_counts(a.app.tls_alerts, p.app.tls_alerts)
        _add_counts(a.app.http_status, p.app.http_status)
    a.reset_frames = _first_frames([p.reset_frames for p in parts], EVIDENCE_PER_FLAG)
    for bit in {b for p in parts for b in p.flag_frames}:
        a.flag_frames[bit] = _first_frames([p.flag_frames.get(bit, []) for p in parts],
                                           EVIDENCE_PER_FLAG)
    # insertion order as in one process: by first flagged frame, then tcp_analysis.FLAG_NAMES
    rank = {bit: i for i, (bit, _name) in enumerate(FLAG_NAMES)}
    order = sorted(a.flag_frames, key=lambda b: (a.flag_frames[b][0], rank.get(b, 99)))
    a.flag_frames = {b: a.flag_frames[b] for b in order}
    a.flag_counts = {b: a.flag_counts[b] for b in order}
    a.app.tls_alert_examples = _by_frame([p.app.tls_alert_examples for p in parts],
                                         APP_EXAMPLES)
    a.app.http_error_examples = _by_frame([p.app.http_error_examples for p in parts],
                                          APP_EXAMPLES)
    # creation order = first frame; a frame's flows all belong to one share (stable sort)
    flows = [f for p in parts for f in p.flows]
    flows.sort(key=lambda f: f[F_FIRST_FRAME])
    a.flows = flows
    a.share, a.shares = 0, 1
    return a
