"""Writes the app package's two icons (192x192 color, 32x32 white outline on transparent) with
the standard library only: a ghost shape, drawn per pixel, PNG-encoded with zlib and struct."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _inside_ghost(x: float, y: float) -> bool:
    """A ghost in the unit square: round head, straight sides, wavy hem."""
    cx, r = 0.5, 0.32
    if y < 0.5:
        return (x - cx) ** 2 + (y - 0.5) ** 2 <= r * r
    if abs(x - cx) > r:
        return False
    wave = 0.82 + 0.05 * (1 if int((x - (cx - r)) / (2 * r / 4)) % 2 == 0 else -1)
    return y <= wave


def _eye(x: float, y: float) -> bool:
    return any((x - ex) ** 2 + (y - 0.45) ** 2 <= 0.05 ** 2 for ex in (0.4, 0.6))


def _png(width: int, rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + row for row in rows)
    header = struct.pack(">IIBBBBB", width, len(rows), 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def color(size: int = 192) -> bytes:
    rows = []
    for j in range(size):
        row = bytearray()
        for i in range(size):
            x, y = (i + 0.5) / size, (j + 0.5) / size
            if _inside_ghost(x, y):
                row += bytes((30, 30, 60, 255)) if _eye(x, y) else bytes((255, 255, 255, 255))
            else:
                row += bytes((70, 90, 200, 255))  # the tile's background
        rows.append(bytes(row))
    return _png(size, rows)


def outline(size: int = 32) -> bytes:
    """White on transparent, as Teams requires for the outline icon."""
    rows = []
    for j in range(size):
        row = bytearray()
        for i in range(size):
            x, y = (i + 0.5) / size, (j + 0.5) / size
            edge = _inside_ghost(x, y) and not _inside_ghost(
                0.5 + (x - 0.5) * 1.25, 0.5 + (y - 0.5) * 1.15)
            row += bytes((255, 255, 255, 255)) if edge or (
                _inside_ghost(x, y) and _eye(x, y)) else bytes((0, 0, 0, 0))
        rows.append(bytes(row))
    return _png(size, rows)


if __name__ == "__main__":
    (HERE / "color.png").write_bytes(color())
    (HERE / "outline.png").write_bytes(outline())
    print("wrote color.png (192x192) and outline.png (32x32)")
