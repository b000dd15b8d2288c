"""File access confined to the audit/data directory.

`classify` checks the resolved real path (symlinks followed) when a data directory is configured;
`open_data_file` checks again at open time and walks the path one component at a time with
O_NOFOLLOW relative to the directory's file descriptor, so a symlink swapped in between the check
and the open (TOCTOU) cannot point the read elsewhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class DataPathError(PermissionError):
    """A path that leaves the data directory, crosses a symlink or is not a regular file."""


def resolve_under(path: str | Path, data_dir: Path, cwd: Path | None = None) -> Path | None:
    """The real path if it lies inside the real data_dir, else None."""
    raw = Path(path)
    if not raw.is_absolute():
        raw = (cwd if cwd is not None else Path.cwd()) / raw
    real = Path(os.path.realpath(raw))
    root = Path(os.path.realpath(data_dir))
    if real == root or root in real.parents:
        return real
    return None


def open_data_file(path: str | Path, data_dir: Path, cwd: Path | None = None) -> BinaryIO:
    """Open a regular file under data_dir for reading, refusing symlinks anywhere below it.

    Raises DataPathError (a PermissionError) with a message for the engineer.
    """
    root = Path(os.path.realpath(data_dir))
    raw = Path(path)
    if not raw.is_absolute():
        raw = (cwd if cwd is not None else Path.cwd()) / raw
    absolute = Path(os.path.abspath(raw))
    if ".." in Path(path).parts:
        raise DataPathError(f"{path}: '..' is not allowed in data file paths")
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        # the caller may have given the unresolved spelling of data_dir itself
        try:
            relative = absolute.relative_to(Path(os.path.abspath(data_dir)))
        except ValueError:
            raise DataPathError(f"{path}: outside the data directory {root}") from None
    parts = relative.parts
    if not parts:
        raise DataPathError(f"{path}: is the data directory itself, not a file")
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, flags_dir, dir_fd=dir_fd)
            except OSError as exc:
                raise DataPathError(f"{path}: component {part!r} is not a plain directory "
                                    f"({exc.strerror})") from None
            os.close(dir_fd)
            dir_fd = next_fd
        flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(
            os, "O_NONBLOCK", 0)
        try:
            fd = os.open(parts[-1], flags, dir_fd=dir_fd)
        except OSError as exc:
            raise DataPathError(f"{path}: cannot open without following symlinks "
                                f"({exc.strerror})") from None
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DataPathError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")
