"""Writing contract documents: compact JSON, ``--fields`` projection, ``--limit`` on arrays.

``--fields a,b.c`` keeps only those paths (a path through an array applies to each element);
the envelope keys are always kept. List outputs name one array (``items_key``) whose elements
the fields refer to, so ``ghost session list --json --fields session_id,state`` reads naturally.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from bot.contract.codes import Code, ContractError
from bot.contract.envelope import ENVELOPE_KEYS, envelope

Tree = dict[str, "Tree"]


def parse_fields(text: str | None) -> list[str] | None:
    """``"a,b.c"`` -> ["a", "b.c"]; None when not given; an empty or malformed list is an
    INVALID_ARGUMENT."""
    if text is None:
        return None
    fields = [f.strip() for f in text.split(",") if f.strip()]
    if not fields or any("" in f.split(".") for f in fields):
        raise ContractError(Code.INVALID_ARGUMENT, f"--fields {text!r} names no field.",
                            "Give dotted field names separated by commas, e.g. "
                            "--fields state,phase.waiting_for")
    return fields


def _tree(fields: Sequence[str]) -> Tree:
    root: Tree = {}
    for field in fields:
        node = root
        for part in field.split("."):
            node = node.setdefault(part, {})
    return root


def _project(value: Any, tree: Tree) -> Any:
    if not tree:
        return value
    if isinstance(value, Mapping):
        return {k: _project(value[k], sub) for k, sub in tree.items() if k in value}
    if isinstance(value, list):
        return [_project(v, tree) for v in value]
    return value


def project(doc: Mapping[str, Any], fields: Sequence[str] | None, *,
            items_key: str | None = None) -> dict[str, Any]:
    """Keep ``fields`` of ``doc`` (of each element of ``doc[items_key]`` for list outputs)."""
    if not fields:
        return dict(doc)
    tree = _tree(fields)
    if items_key is not None:
        out = {k: v for k, v in doc.items() if k != items_key}
        out[items_key] = _project(doc.get(items_key) or [], tree)
        return out
    kept = {k: v for k, v in doc.items() if k in ENVELOPE_KEYS}
    return {**kept, **_project(doc, tree)}


def dumps(doc: Mapping[str, Any]) -> str:
    """Compact JSON on one line (token-efficient; pipe to ``jq`` to read it)."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=str)


def emit(body: Mapping[str, Any], *, session_id: str | None = None,
         fields: Sequence[str] | None = None, items_key: str | None = None,
         out: TextIO | None = None) -> None:
    """Print one enveloped, projected document as a JSON line."""
    doc = project(envelope(body, session_id=session_id), fields, items_key=items_key)
    stream = out or sys.stdout
    stream.write(dumps(doc) + "\n")
    stream.flush()
