"""Secrets that sit in a structure rather than behind their own name, found per structure.

- `<add key="DbPassword" value="..."/>`, `<parameter name="adminPassword" value="..."/>`:
  .NET configuration and publish settings, where the name and the value are two attributes;
- Kubernetes and compose env lists in YAML: `- name: DB_PASSWORD` then `value: ...`;
- JSON whose value starts on the line after its name (`"password":` NEWLINE `"..."`);
- an AWS secret access key printed beside its key id (credentials CSV, `aws configure`);
- `user:password` piped into chpasswd, `net user NAME PASSWORD`.

The same rules as `redact`: linear-time patterns that start at a literal, bounded windows,
and decisions about names made by `secret_names`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from core.safety.secret_judge import is_secret
from core.safety.secret_names import credential_like, kv_secret, looks_empty

_ATTR_PAIR_RE: Final = re.compile(
    r"(?i)(?<![A-Za-z0-9_-])(?:key|name)[ \t]{0,3}=[ \t]{0,3}(?P<qa>[\"'])"
    r"(?P<n>[^\"'\r\n<>]{1,200})(?P=qa)[ \t\r\n]{1,40}value[ \t]{0,3}=[ \t]{0,3}(?P<qb>[\"'])"
    r"(?P<s>[^\"'\r\n<>]{1,4096})(?P=qb)")
_YAML_PAIR_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_-])name:[ \t]{0,5}(?P<qa>[\"']?)(?P<n>[A-Za-z0-9_.-]{1,100})(?P=qa)"
    r"[ \t]{0,20}\r?\n[ \t]{0,40}(?:-[ \t]{1,5})?value:[ \t]{0,5}"
    r"(?:\"(?P<s>[^\"\r\n]{1,4096})\"|'(?P<s2>[^'\r\n]{1,4096})'|(?P<s3>[^\s#\"'][^\r\n]{0,4095}))")
#: The same pair with the value in a YAML block scalar (`value: |`, `|-`, `>-`, `>+2`) on the
#: lines below; `vi` is the indent of the `value:` line, the block is what is indented deeper.
_YAML_BLOCK_PAIR_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_-])name:[ \t]{0,5}(?P<qa>[\"']?)(?P<n>[A-Za-z0-9_.-]{1,100})(?P=qa)"
    r"[ \t]{0,20}\r?\n(?P<vi>[ \t]{0,40})(?:-[ \t]{1,5})?value:[ \t]{0,5}[|>][+-]?[0-9]?[+-]?"
    r"[ \t]{0,20}(?:#[^\r\n]{0,200})?\r?\n")
_JSON_NEWLINE_RE: Final = re.compile(
    r"\"(?P<n>[^\"\\\r\n]{1,100})\"[ \t]{0,3}:[ \t]{0,3}\r?\n[ \t]{0,40}"
    r"\"(?P<s>(?:[^\"\\\r\n]|\\.){1,4096})\"")
_AWS_SECRET_RE: Final = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_CHPASSWD_RE: Final = re.compile(
    r"(?<![\w-])[A-Za-z_][A-Za-z0-9_.-]{0,31}:(?P<s>[^\s\"':|]{1,256})"
    r"(?=[\"']?[ \t]{0,5}\|[ \t]{0,5}(?:sudo[ \t]{1,5})?chpasswd)")
_NET_USER_RE: Final = re.compile(
    r"(?i)(?<![\w-])net[ \t]{1,5}user[ \t]{1,5}(?:\"[^\"\r\n]{1,64}\"|[^\s/\"]{1,64})[ \t]{1,5}"
    r"(?:\"(?P<s>[^\"\r\n]{1,256})\"|(?P<s2>[^\s/*\"][^\s]{0,255}))")


MARK: Final = "[REDACTED:{}]"
#: Secret values found by any pass in the redaction under way (value -> kind), so that the same
#: value is removed wherever else it appears (a password a decoder printed on one line and the
#: payload printed on the next, a token split across hex-dump lines).
_LEARNED: ContextVar[dict[str, str] | None] = ContextVar("ghost_redaction_learned",
                                                         default=None)
#: Shorter values are too likely to occur by chance to be removed everywhere; longer ones
#: (key blobs) are found again by the pattern that found them, and searching for them is slow.
ECHO_MIN: Final = 6
ECHO_MAX: Final = 1024


def mark(kind: str) -> str:
    """What stands where a secret was: ``[REDACTED:kind]``."""
    return MARK.format(kind)


def learn(value: str, kind: str) -> None:
    """Remember a secret value so that its other occurrences go too."""
    store = _LEARNED.get()
    value = value.strip()
    if (store is not None and ECHO_MIN <= len(value) <= ECHO_MAX
            and "[REDACTED:" not in value):
        store.setdefault(value, kind)


@contextmanager
def learning() -> Iterator[dict[str, str]]:
    """The values learned in this redaction (shared with any redaction nested in it)."""
    store = _LEARNED.get()
    if store is not None:
        yield store
        return
    store = {}
    token = _LEARNED.set(store)
    try:
        yield store
    finally:
        _LEARNED.reset(token)


AWS_MARK: Final = mark("aws_access_key_id")


def _value_span(match: re.Match[str]) -> tuple[int, int, str]:
    for group in ("s", "s2", "s3"):
        if group in match.re.groupindex and match.group(group) is not None:
            return match.start(group), match.end(group), match.group(group)
    raise AssertionError("every pattern here sets a value group")  # pragma: no cover


def replace_value(match: re.Match[str], counts: Counter[str], kind: str) -> str:
    """The match with its value group (s, s2 or s3) replaced by the mark, counted."""
    start, end, value = _value_span(match)
    learn(value, kind)
    counts[kind] += 1
    whole = match.group(0)
    return whole[: start - match.start()] + mark(kind) + whole[end - match.start():]


def _setting_value_secret(name: str, value: str) -> bool:
    """A setting's value, judged by its name and its shape (secret_judge)."""
    value = value.strip()
    if looks_empty(value) or "[REDACTED:" in value:
        return False
    return is_secret(name, value)


def redact_pairs(text: str, lower: str, counts: Counter[str]) -> str:
    """Apply every structural pass whose cheap needle occurs in `lower`."""
    if "value=" in lower or "value =" in lower:
        text = _ATTR_PAIR_RE.sub(
            lambda m: replace_value(m, counts, "secret_value")
            if _setting_value_secret(m.group("n"), m.group("s")) else m.group(0), text)
    if "name:" in lower and "value:" in lower:
        text = _YAML_PAIR_RE.sub(
            lambda m: replace_value(m, counts, "secret_value")
            if _setting_value_secret(m.group("n"), _value_span(m)[2]) else m.group(0), text)
        if "value: |" in lower or "value: >" in lower or "value:|" in lower:
            text = _yaml_block_pairs(text, counts)
    if '":\n' in text or '": \n' in text or '":\r\n' in text or '": \r\n' in text:
        text = _JSON_NEWLINE_RE.sub(
            lambda m: replace_value(m, counts, "secret_value")
            if kv_secret(m.group("n"), m.group("s")) and "[REDACTED:" not in m.group("s")
            else m.group(0), text)
    if AWS_MARK in text:
        lines = text.split("\n")
        for index, line in enumerate(lines):
            if AWS_MARK in line:
                lines[index] = _AWS_SECRET_RE.sub(
                    lambda m: _count(counts, "aws_secret_key")
                    if credential_like(m.group(0)) else m.group(0), line)
        text = "\n".join(lines)
    if "chpasswd" in lower:
        text = _CHPASSWD_RE.sub(lambda m: replace_value(m, counts, "cli_secret"), text)
    if "net user" in lower or "net\tuser" in lower:
        text = _NET_USER_RE.sub(
            lambda m: replace_value(m, counts, "cli_secret")
            if not looks_empty(_value_span(m)[2]) else m.group(0), text)
    return text


_BLOCK_LINE_LIMIT: Final = 200


def _yaml_block_pairs(text: str, counts: Counter[str]) -> str:
    """`- name: DB_PASSWORD` / `value: >-` / the secret on the deeper-indented lines below."""
    out: list[str] = []
    pos = 0
    for match in _YAML_BLOCK_PAIR_RE.finditer(text):
        if match.start() < pos:
            continue
        indent = len(match.group("vi"))
        end = match.end()
        rows: list[tuple[int, int]] = []  # (start, end) of each content line
        probe = end
        while len(rows) < _BLOCK_LINE_LIMIT and probe < len(text):
            stop = text.find("\n", probe)
            stop = len(text) if stop == -1 else stop
            line = text[probe:stop].rstrip("\r")
            if line.strip():
                if len(line) - len(line.lstrip(" \t")) <= indent:
                    break
                rows.append((probe, probe + len(line)))
            probe = stop + 1
        value = "\n".join(text[a:b].strip() for a, b in rows)
        if not rows or not _setting_value_secret(match.group("n"), value):
            continue
        out.append(text[pos:end])
        for number, (a, b) in enumerate(rows):
            line = text[a:b]
            pad = line[:len(line) - len(line.lstrip(" \t"))]
            learn(line.strip(), "secret_value")
            out.append(text[end if number == 0 else rows[number - 1][1]:a])
            out.append(pad + (mark("secret_value") if number == 0 else ""))
        counts["secret_value"] += 1
        pos = rows[-1][1]
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _count(counts: Counter[str], kind: str) -> str:
    counts[kind] += 1
    return mark(kind)
