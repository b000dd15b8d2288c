"""Entry point of the library: open a capture, run the single pass, return the analyzer."""

from __future__ import annotations

import struct

from .analyzer import Analyzer
from .errors import CorruptCaptureError
from .reader import open_capture


def analyze_capture(path: str) -> Analyzer:
    """Analyse one capture file.

    A capture that breaks part-way yields a partial analysis with a warning; a file that is
    not a capture at all raises NotACaptureError.
    """
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
    return analyzer
