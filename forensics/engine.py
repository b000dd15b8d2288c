"""Entry point of the library: open a capture, run the single pass, return the analyzer."""

from __future__ import annotations

import struct

from .analyzer import Analyzer
from .errors import CorruptCaptureError
from .findings import UNDECODABLE_MARK, mostly_undecodable
from .parallel import analyze_parallel
from .reader import check_capture, open_capture


def analyze_capture(path: str, jobs: int = 1) -> Analyzer:
    """Analyse one capture file, in ``jobs`` processes (parallel.py; the same result).

    A capture that breaks part-way yields a partial analysis with a warning; a file that is
    not a capture at all raises NotACaptureError.
    """
    if jobs > 1:
        check_capture(path)  # not a capture: the error here, before any process starts
        merged = analyze_parallel(path, jobs)
        if merged is not None:
            _warn_undecodable(merged)
            return merged
    info, records = open_capture(path)
    analyzer = Analyzer(info)
    try:
        analyzer.run(records)
    except CorruptCaptureError as exc:
        info.warnings.append(f"{exc}; analysis stops at frame {analyzer.packets}")
    except (struct.error, IndexError) as exc:  # defensive: a record we failed to bound-check
        info.warnings.append(
            f"could not decode a packet near frame {analyzer.packets} ({exc}); analysis stops there"
        )
    _warn_undecodable(analyzer)
    return analyzer


def _warn_undecodable(a: Analyzer) -> None:
    """Say so when most packets could not be decoded: 'no problem seen' would be a lie."""
    if not mostly_undecodable(a.packets, a.undecodable_packets):
        return
    types = ", ".join(str(t) for t in a.info.linktypes) or "unknown"
    a.info.warnings.append(
        f"{a.undecodable_packets} of {a.packets} {UNDECODABLE_MARK} (link type "
        f"{types}); the analysis covers only the rest. Re-capture on an Ethernet or Linux "
        "cooked interface, or convert the file (editcap) to a standard link type"
    )
