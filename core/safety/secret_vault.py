"""Key Vault secret values: the `"value"` of an object whose id is a Key Vault secret URL.

The value of a secret can be anything (a password, a connection string, a PFX), so it is found
by where it sits, not by its form. Only the object the id belongs to counts: a Key Vault URL
elsewhere in the text (a `vaultUri`, a log line) does not make every `"value"` a secret. JSON is
parsed when the text is JSON; otherwise a `"value"` counts when a secret `"id"` precedes it in
the same object (no other `"id"` or `"value"` key between them, within 2 KB).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Final

from core.safety.secret_pairs import mark

_SECRET_URL_RE: Final = re.compile(
    r"(?i)^https://[a-z0-9-]{1,63}\.(?:vault\.azure\.net|vault\.azure\.cn|vault\.usgovcloudapi"
    r"\.net|managedhsm\.azure\.net)(?::443)?/secrets/")
_VALUE_RE: Final = re.compile(
    r"\"value\"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}\"(?P<s>(?:[^\"\\\r\n]|\\.){1,65536})\"")
_ID_RE: Final = re.compile(
    r"\"(?:id|kid|sid)\"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}\"(?P<u>[^\"\r\n]{1,2048})\"")
_KEY_RE: Final = re.compile(r"\"(?:id|value)\"[ \t\r\n]{0,20}:")
_PARSE_LIMIT: Final = 4 * 1024 * 1024
_LOOK_BACK: Final = 2048


def _collect(node: object, found: set[str]) -> None:
    if isinstance(node, dict):
        ids = [node.get(k) for k in ("id", "kid", "sid")]
        value = node.get("value")
        if isinstance(value, str) and any(isinstance(i, str) and _SECRET_URL_RE.match(i)
                                          for i in ids):
            found.add(value)
        for child in node.values():
            _collect(child, found)
    elif isinstance(node, list):
        for child in node:
            _collect(child, found)


def _decoded(raw: str) -> str | None:
    try:
        value = json.loads(f'"{raw}"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _after_secret_id(text: str, start: int) -> bool:
    window = text[max(0, start - _LOOK_BACK):start]
    ids = list(_ID_RE.finditer(window))
    if not ids or not _SECRET_URL_RE.match(ids[-1].group("u")):
        return False
    between = window[ids[-1].end():]
    return _KEY_RE.search(between) is None


def redact_vault_values(text: str, counts: Counter[str]) -> str:
    """Replace the values of Key Vault secret objects by [REDACTED:keyvault_secret]."""
    secrets: set[str] | None = None
    if text.lstrip()[:1] in ("{", "[") and len(text) <= _PARSE_LIMIT:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if doc is not None:
            secrets = set()
            _collect(doc, secrets)
            if not secrets:
                return text

    def replace(match: re.Match[str]) -> str:
        raw = match.group("s")
        if "[REDACTED:" in raw:
            return match.group(0)
        if secrets is not None:
            if _decoded(raw) not in secrets:
                return match.group(0)
        elif not _after_secret_id(text, match.start()):
            return match.group(0)
        counts["keyvault_secret"] += 1
        start = match.start("s") - match.start()
        return match.group(0)[:start] + mark("keyvault_secret") + '"'
    return _VALUE_RE.sub(replace, text)
