"""Secrets inside base64: decode before looking, at every alignment.

A password inside base64 (`customData`, `userData`, a Kubernetes Secret's `azure.json`, a
ConfigMap's `binaryData`) is not a substring of the text unless it happens to start at a
multiple of three bytes, so patterns cannot see it. Each base64 run of 40+ characters is
decoded from each of its four possible starting characters (the run may begin mid-stream), and
the decoded bytes are judged: a DER private key (PKCS#1, PKCS#8, SEC1, encrypted PKCS#8) is a
secret; decoded text is redacted like any other text (one level deep), and when that finds a
secret the whole run goes, because the secret cannot be cut out of its encoding.

Bounded: runs are found by one linear scan, hex digests and runs already replaced are skipped,
at most `_MAX_RUNS` runs and `_MAX_DECODED` bytes per text are decoded.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from typing import Final

from core.safety.secret_pairs import learn, mark

_RUN_RE: Final = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{40,}={0,2}")
_HEX_RE: Final = re.compile(r"[0-9A-Fa-f]+")
_MAX_RUNS: Final = 2000
_MAX_DECODED: Final = 2 * 1024 * 1024
_DEPTH_LIMIT: Final = 2
#: OIDs of password-based encryption schemes (an encrypted PKCS#8 key starts with one).
_PBE_OIDS: Final = (bytes.fromhex("2a864886f70d01050d"), bytes.fromhex("2a864886f70d010c01"))


def _der_length(data: bytes, index: int) -> tuple[int, int] | None:
    """(length, index after the length bytes) of a DER length at `index`, or None."""
    if index >= len(data):
        return None
    first = data[index]
    if first < 0x80:
        return first, index + 1
    count = first & 0x7F
    if count == 0 or count > 3 or index + 1 + count > len(data):
        return None
    return int.from_bytes(data[index + 1:index + 1 + count], "big"), index + 1 + count


def der_private_key(data: bytes) -> bool:
    """Does `data` start like a DER private key (PKCS#1, PKCS#8, SEC1, encrypted PKCS#8)?"""
    if len(data) < 24 or data[0] != 0x30:
        return False
    found = _der_length(data, 1)
    if found is None:
        return False
    _, body = found
    head = data[body:body + 4]
    if head[:3] == b"\x02\x01\x00" and head[3:4] in (b"\x30", b"\x02"):
        return True  # PKCS#8 (version 0, AlgorithmIdentifier) or PKCS#1 (version 0, modulus)
    if head[:3] == b"\x02\x01\x01" and head[3:4] == b"\x04":
        return True  # SEC1 EC private key (version 1, OCTET STRING)
    return any(oid in data[body:body + 24] for oid in _PBE_OIDS) and data[body] == 0x30


def _decodings(run: str) -> list[bytes]:
    urlsafe = "-" in run or "_" in run
    body = run.rstrip("=")
    out: list[bytes] = []
    for offset in range(4):
        piece = body[offset:]
        piece = piece[: len(piece) - len(piece) % 4]
        if len(piece) < 32:
            continue
        try:
            out.append(base64.urlsafe_b64decode(piece) if urlsafe else
                       base64.b64decode(piece, validate=True))
        except (binascii.Error, ValueError):
            continue
    return out


def _gunzipped(data: bytes) -> bytes:
    """customData and userData are often gzip before base64: inflate (bounded) when they are."""
    if not data.startswith(b"\x1f\x8b"):
        return data
    try:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return inflater.decompress(data, 1024 * 1024)
    except zlib.error:
        return data


def _as_text(data: bytes) -> str | None:
    """Decoded bytes that are mostly printable text (a script, JSON, a config), else None."""
    data = _gunzipped(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # a run that starts mid-stream decodes its first character or two into garbage
        try:
            text = data[3:].decode("utf-8")
        except UnicodeDecodeError:
            return None
    visible = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    return text if text and visible >= 0.95 * len(text) else None


_DEPTH: ContextVar[int] = ContextVar("ghost_base64_depth", default=0)


def redact_base64(text: str, counts: Counter[str],
                  inner: Callable[[str], tuple[str, int]]) -> str:
    """Replace base64 runs that hold a private key or decode to text with a secret in it.

    `inner(text)` redacts decoded text and returns (text, number of secrets found).
    """
    if _DEPTH.get() >= _DEPTH_LIMIT:
        return text
    budget = [_MAX_RUNS, _MAX_DECODED]

    def replace(match: re.Match[str]) -> str:
        run = match.group(0)
        if budget[0] <= 0 or budget[1] <= 0 or _HEX_RE.fullmatch(run) or (
                ("/" in run or "+" in run) and ("-" in run or "_" in run)):
            return run  # a digest, or a path / resource id (it mixes the two alphabets)
        budget[0] -= 1
        for data in _decodings(run):
            budget[1] -= len(data)
            if der_private_key(data):
                return _gone(run, "private_key", counts)
            decoded = _as_text(data)
            if decoded is None or len(decoded) < 12:
                continue
            token = _DEPTH.set(_DEPTH.get() + 1)
            try:
                _, found = inner(decoded)
            finally:
                _DEPTH.reset(token)
            if found:
                return _gone(run, "encoded_secret", counts)
        return run
    return _RUN_RE.sub(replace, text)


def _gone(run: str, kind: str, counts: Counter[str]) -> str:
    learn(run, kind)
    counts[kind] += 1
    return mark(kind)
