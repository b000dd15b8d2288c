"""open_data_file re-checks at open time and never follows symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.safety.files import DataFileError, read_data_file
from core.safety.paths import DataPathError, open_data_file, resolve_under


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "r.md").write_text("report")
    (data / "sub" / "i.md").write_text("inner")
    (tmp_path / "secret").write_text("secret")
    (data / "ln").symlink_to(tmp_path / "secret")
    (data / "inside_ln").symlink_to(data / "r.md")
    (data / "dirln").symlink_to(tmp_path)
    return data


def test_reads_regular_files(tree: Path) -> None:
    with open_data_file(tree / "r.md", tree) as handle:
        assert handle.read() == b"report"
    with open_data_file("sub/i.md", tree, cwd=tree) as handle:
        assert handle.read() == b"inner"


@pytest.mark.parametrize("name", ["ln", "inside_ln", "dirln/secret", "../secret", "sub/../r.md",
                                  "sub", "missing"])
def test_refuses_symlinks_dotdot_dirs_and_missing(tree: Path, name: str) -> None:
    with pytest.raises(DataPathError):
        open_data_file(tree / name if not name.startswith("..") else f"{tree}/{name}", tree)


def test_refuses_outside_and_fifo(tree: Path, tmp_path: Path) -> None:
    with pytest.raises(PermissionError):
        open_data_file(tmp_path / "secret", tree)
    os.mkfifo(tree / "fifo")
    with pytest.raises(DataPathError):
        open_data_file(tree / "fifo", tree)


def test_symlink_swapped_after_classification_is_refused(tree: Path, tmp_path: Path) -> None:
    target = tree / "swap.md"
    target.write_text("fine")
    assert resolve_under(target, tree) is not None
    target.unlink()
    target.symlink_to(tmp_path / "secret")
    with pytest.raises(DataPathError):
        open_data_file(target, tree)


def test_read_data_file_is_bounded(tree: Path) -> None:
    (tree / "big").write_text("z" * 1000)
    text = read_data_file(tree / "big", tree, max_bytes=10)
    assert text.startswith("z" * 10) and "not read" in text
    with pytest.raises(DataFileError):
        read_data_file(tree / "ln", tree, max_bytes=10)
