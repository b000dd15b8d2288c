"""Reading a data file for `cat` without a subprocess: the open-time half of the cat rule.

A thin text-level wrapper over `paths.open_data_file` for the shell: bounded read, decoded.
"""

from __future__ import annotations

from pathlib import Path

from core.safety.paths import DataPathError, open_data_file

#: The error the shell catches; the same class as `paths.DataPathError`.
DataFileError = DataPathError


def read_data_file(path: str | Path, data_dir: Path, *, max_bytes: int,
                   cwd: Path | None = None) -> str:
    """Read at most max_bytes of a regular file under data_dir (no symlinks), as text.

    A note is appended when the file is longer, so the reader knows it was cut.
    """
    with open_data_file(path, data_dir, cwd) as handle:
        data = handle.read(max_bytes + 1)
    text = data[:max_bytes].decode("utf-8", errors="replace")
    if len(data) > max_bytes:
        text += f"\n[file longer than {max_bytes} bytes; the rest was not read]\n"
    return text
