"""The hot loop writes flag bits as literals: each one must equal the constant it names."""

from __future__ import annotations

import inspect
import re

from forensics import tcp_analysis as T


def test_literal_flag_bits_match_their_named_constants() -> None:
    src = inspect.getsource(T.analyze) + inspect.getsource(T._empty_segment_flags)
    pairs = re.findall(r"(0x[0-9A-Fa-f]+)\s*#\s*([A-Z_]+)\b", src)
    named = {name for _lit, name in pairs}
    assert named == {name.upper() for name in T.ALL_FLAG_NAMES}  # every flag is set somewhere
    for lit, name in pairs:
        assert int(lit, 16) == getattr(T, name), f"{lit} is not {name}"


def test_flag_bits_are_distinct_single_bits() -> None:
    bits = [bit for bit, _name in T.FLAG_NAMES]
    assert len(set(bits)) == len(bits) == 14
    assert all(b & (b - 1) == 0 for b in bits)
