"""Shared fixtures: the real captures (captures by Chris Sanders) and their tshark truth."""

from __future__ import annotations

from pathlib import Path

import pytest

# tests/forensics/conftest.py -> repo root is parents[2]; shared/ sits beside the repo.
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
PCAPS = SHARED / "pcaps"
TRUTH = PCAPS / "truth"


def truth_files() -> list[Path]:
    return sorted(TRUTH.glob("*.json")) if TRUTH.is_dir() else []


@pytest.fixture
def pcaps_dir() -> Path:
    if not PCAPS.is_dir():
        pytest.skip("shared/pcaps not found beside the repository")
    return PCAPS
