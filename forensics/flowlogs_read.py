"""Find VNet flow-log blobs on disk and read their records one at a time.

A blob (``PT1H.json``, one per NIC and hour) is ``{"records": [ {...}, ... ]}`` with one record
per minute. It is read in 1 MB pieces and decoded record by record, so memory holds one piece
and one record whatever the blob's size, and a blob cut short (a download that stopped) still
gives every record before the cut. Anything else that is JSON (a list of records, one record)
is read whole.

Blob names: ``az storage blob download-batch`` writes the container's tree, so the path from
``flowLogResourceID=`` on is the blob's name in the container; elsewhere the path relative to
the folder given (or the file's own path) stands for it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import ForensicsError

CHUNK = 1 << 20
BLOB_MARK = "flowLogResourceID="
_DECODER = json.JSONDecoder()
_WS = re.compile(r"[\s,]*")
_HEAD = re.compile(r'\s*\{\s*"records"\s*:\s*\[')
_PATH_HOUR = re.compile(r"/y=(\d{4})/m=(\d{2})/d=(\d{2})/h=(\d{2})/")
_OWN_OUTPUT = re.compile(r"flowlogs.*_semantic\.json$")  # what this tool writes
_PATH_MAC = re.compile(r"/macAddress=([0-9A-Fa-f-]{12,17})/")


class NotFlowLogError(ForensicsError):
    """A file that is not a VNet flow-log blob (skipped with a warning when others are)."""


@dataclass
class Blob:
    """One input file: where it is, what it is called in the container, what reading it gave."""

    path: str
    name: str
    size: int
    records: int = 0
    tuples: int = 0
    macs: set[str] = field(default_factory=set)
    first_time: str | None = None
    last_time: str | None = None
    status: str = "ok"  # ok | partial | damaged | unreadable | skipped (not a VNet flow log)
    warnings: list[str] = field(default_factory=list)

    @property
    def looks_like_blob(self) -> bool:
        """Named as Azure names flow-log blobs (so unreadable content means damage)."""
        return BLOB_MARK in self.name or os.path.basename(self.path) == "PT1H.json"

    @property
    def path_hour(self) -> str | None:
        """The hour the blob's path names (``y=/m=/d=/h=``), as ISO, when it names one."""
        m = _PATH_HOUR.search("/" + self.name.replace(os.sep, "/"))
        return f"{m[1]}-{m[2]}-{m[3]}T{m[4]}:00Z" if m else None

    @property
    def path_mac(self) -> str | None:
        m = _PATH_MAC.search("/" + self.name.replace(os.sep, "/"))
        return m[1].replace("-", "").upper() if m else None

    def summary(self) -> dict[str, Any]:
        return {"blob": self.name, "path": self.path, "bytes": self.size, "status": self.status,
                "records": self.records, "tuples": self.tuples, "macs": sorted(self.macs),
                "hour": self.path_hour, "first_record": self.first_time,
                "last_record": self.last_time, "warnings": self.warnings}


def _name(path: str, root: str | None) -> str:
    norm = path.replace(os.sep, "/")
    at = norm.find(BLOB_MARK)
    if at >= 0:
        return norm[at:]
    if root is not None:
        return os.path.relpath(path, root).replace(os.sep, "/")
    return norm


def discover(paths: list[str]) -> list[Blob]:
    """Every blob under the paths, in name order (so hours and NICs read in a stable order).

    A folder is walked for ``*.json`` files (hidden ones and this tool's own
    ``flowlogs…_semantic.json`` left out); a file named on the command line is read whatever
    its name. A path given twice (or reached twice) counts once.
    """
    seen: set[str] = set()
    out: list[Blob] = []
    for path in paths:
        items: list[tuple[str, str | None]]
        if os.path.isdir(path):
            found = []
            for top, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(top, f) for f in files
                          if f.lower().endswith(".json") and not f.startswith(".")
                          and not _OWN_OUTPUT.match(f)]
            if not found:
                raise ForensicsError(f"no flow-log blobs (*.json) under {path}: give the folder "
                                     "that `az storage blob download-batch` wrote, or the "
                                     "PT1H.json files")
            items = [(f, path) for f in sorted(found)]
        elif os.path.isfile(path):
            items = [(path, None)]
        elif os.path.exists(path):
            raise ForensicsError(f"{path} is neither a file nor a folder")
        else:
            raise ForensicsError(f"not found: {path}")
        for f, root in items:
            real = os.path.realpath(f)
            if real in seen:
                continue
            seen.add(real)
            out.append(Blob(path=f, name=_name(f, root), size=os.path.getsize(f)))
    out.sort(key=lambda b: (b.name, b.path))
    return out


def _describe(text: str) -> str:
    """What a non-flow-log JSON document looks like, for the warning."""
    return f"starts {text.strip()[:40]!r}" if text.strip() else "is empty"


def iter_records(blob: Blob) -> Iterator[dict[str, Any]]:
    """The blob's records in order. A cut or broken blob yields what came before the damage
    and records why in ``blob.warnings`` (status ``partial``); a file that is not a flow-log
    blob raises :class:`NotFlowLogError`."""
    with open(blob.path, encoding="utf-8-sig", errors="replace") as fh:
        buf = fh.read(CHUNK)
        head = _HEAD.match(buf)
        if head is None:
            yield from _whole(blob, buf + fh.read())
            return
        pos = head.end()
        eof = len(buf) < CHUNK
        consumed = 0  # characters dropped from the front of buf, for positions in warnings
        while True:
            m = _WS.match(buf, pos)
            pos = m.end() if m else pos
            if pos >= len(buf) and not eof:
                consumed += pos
                buf, pos = fh.read(CHUNK), 0
                eof = len(buf) < CHUNK
                continue
            if buf.startswith("]", pos):
                tail = buf[pos + 1:].strip()
                if not eof:
                    tail = (tail + fh.read(64)).strip()
                if not tail.startswith("}"):
                    blob.warnings.append("unexpected text after the records list "
                                         f"(at character {consumed + pos + 1:,})")
                    blob.status = "partial"
                return
            if pos >= len(buf):
                _cut(blob, consumed + pos, "the blob ends before its records list is closed")
                return
            try:
                rec, end = _DECODER.raw_decode(buf, pos)
            except json.JSONDecodeError as exc:
                # a record that runs on into the next piece fails near the end of this one;
                # a fault well before the end is damage, however much more there is to read
                if not eof and exc.pos >= len(buf) - 4096:
                    more = fh.read(CHUNK)
                    eof = len(more) < CHUNK
                    consumed += pos
                    buf, pos = buf[pos:] + more, 0
                    continue
                why = "the blob is cut short" if exc.pos >= len(buf) - 4096 else \
                    f"invalid JSON ({exc.msg})"
                _cut(blob, consumed + exc.pos, why)
                return
            if end >= len(buf) and not eof:  # a number or literal may continue: re-read
                more = fh.read(CHUNK)
                eof = len(more) < CHUNK
                consumed += pos
                buf, pos = buf[pos:] + more, 0
                continue
            pos = end
            if isinstance(rec, dict):
                yield rec
            else:
                blob.warnings.append(f"a record that is not a JSON object was skipped "
                                     f"(at character {consumed + pos:,})")
            if pos > CHUNK and not eof:  # keep the buffer to about one piece
                consumed += pos
                buf, pos = buf[pos:], 0


def _cut(blob: Blob, at: int, why: str) -> None:
    blob.status = "partial"
    blob.warnings.append(f"{why} at character {at:,}: the {blob.records:,} records before "
                         "it were analysed, the rest of the blob is lost")


def _whole(blob: Blob, text: str) -> Iterator[dict[str, Any]]:
    """A JSON document that does not start like a blob: a list of records, one record, or
    ``{"records": [...]}`` with other keys first."""
    what = "a damaged blob" if blob.looks_like_blob else "not a flow-log blob"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotFlowLogError(f"{what}: invalid JSON at character {exc.pos:,} ({exc.msg}); "
                              f"the file {_describe(text)}") from None
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):
        items = doc["records"]
    elif isinstance(doc, list) and all(isinstance(r, dict) for r in doc) and doc \
            and all("flowRecords" in r or "properties" in r for r in doc[:3]):
        items = doc
    elif isinstance(doc, dict) and ("flowRecords" in doc or "properties" in doc):
        items = [doc]
    else:
        raise NotFlowLogError(f"{what}: no \"records\" list of flow-log records (the file "
                              f"{_describe(text)})")
    for rec in items:
        if isinstance(rec, dict):
            yield rec
        else:
            blob.warnings.append("a record that is not a JSON object was skipped")
