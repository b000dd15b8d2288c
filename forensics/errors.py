"""Typed errors of the forensic engine.

Each one carries a message written for an on-call engineer; the CLI prints it on
one line and exits 2 instead of showing a traceback.
"""

from __future__ import annotations


class ForensicsError(Exception):
    """Base class: anything the CLI turns into a one-line message."""


class NotACaptureError(ForensicsError):
    """The file is not a pcap or pcapng capture (or is empty)."""


class CorruptCaptureError(ForensicsError):
    """The capture's structure is broken beyond the point where reading can go on."""


class UnsupportedLinkTypeError(ForensicsError):
    """The capture uses a link layer the engine cannot decode."""


def reader_went_away() -> int:
    """The reader of stdout closed it (``| head``): the files are written, so say nothing.

    Points stdout at /dev/null so the interpreter's final flush cannot fail again; exit 0."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0
