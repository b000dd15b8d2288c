"""Authentication exchanges as `tcpdump -A` prints them: the credential follows a verb, not a name.

- SMTP/IMAP/POP3 SASL: after `AUTH LOGIN` (or `AUTHENTICATE LOGIN`) the client sends the user
  name and the password as base64 lines, one per packet; after `AUTH PLAIN` the base64
  `\\0user\\0password` is on the same line or the next. Each base64 line the client sends is
  removed (the `334 ...` server prompts are kept); IMAP `LOGIN user password` and POP3 `PASS`
  lose the password.
- PostgreSQL PasswordMessage: `p`, a 4-byte length, the password, a NUL. `-A` prints the
  non-printable bytes as dots, so the message is `p....PASSWORD.` at the end of a line; the
  length byte, when printable, must equal the password's length + 5, which ties the match to
  the protocol rather than to any `p` followed by dots. In a `-X` payload rebuilt from its hex
  the length bytes are real and must match exactly.
Work is bounded: a fixed number of lines after each verb, and line-anchored patterns.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Final

from core.safety.secret_pairs import learn, mark

_SASL_VERB_RE: Final = re.compile(
    r"(?i)(?<![A-Za-z])AUTH(?:ENTICATE)?[ \t]+(?P<mech>LOGIN|PLAIN|CRAM-MD5|XOAUTH2|NTLM"
    r"|OAUTHBEARER)(?:[ \t]+(?P<s>[A-Za-z0-9+/]{4,4096}={0,2}))?[ \t]*\r?$")
#: A base64 run ending the line, after -A's dots (or alone on the line).
_B64_TAIL_RE: Final = re.compile(r"(?<![A-Za-z0-9+/=])(?P<s>[A-Za-z0-9+/]{4,4096}={0,2})\r?$")
_SERVER_PROMPT_RE: Final = re.compile(r"(?<![0-9])334[ \t-]")
_PACKET_HEAD_RE: Final = re.compile(r"^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,9} ")
_IMAP_LOGIN_RE: Final = re.compile(
    r"(?i)(?<![A-Za-z0-9])[A-Za-z0-9.]{1,20}[ \t]+LOGIN[ \t]+(?:\"[^\"\r\n]{1,200}\"|\S{1,200})"
    r"[ \t]+(?P<s>\"[^\"\r\n]{1,512}\"|\S{1,512})\r?$")
_PG_PASSWORD_RE: Final = re.compile(
    r"(?<![A-Za-z])p\.\.\.(?P<len>.)(?P<s>[!-~]{1,200})\.[ \t]*\r?$")
#: The same message as raw bytes (a `-X` payload rebuilt from its hex): the length is exact.
_PG_RAW_RE: Final = re.compile(
    r"(?<![A-Za-z])p\x00\x00(?P<len>[\x00-\xff]{2})(?P<s>[!-~]{1,200})\x00")
#: How many lines after the verb may still hold the client's answers (headers between them).
_WINDOW: Final = 24


def _replace_tail(lines: list[str], row: int, counts: Counter[str]) -> bool:
    found = _B64_TAIL_RE.search(lines[row])
    if found is None or "[REDACTED:" in lines[row]:
        return False
    learn(found.group("s"), "decoder_secret")
    counts["decoder_secret"] += 1
    lines[row] = lines[row][:found.start("s")] + mark("decoder_secret") + lines[row][
        found.end("s"):]
    return True


def _sasl(lines: list[str], row: int, mech: str, inline: bool, counts: Counter[str]) -> bool:
    """Remove the client's base64 answers in the packets after `AUTH <mech>`."""
    wanted = 0 if inline else (2 if mech == "LOGIN" else 1)
    changed = False
    for probe in range(row + 1, min(len(lines), row + _WINDOW)):
        if wanted == 0:
            break
        line = lines[probe]
        if _PACKET_HEAD_RE.match(line) or not line.strip():
            continue
        if _SERVER_PROMPT_RE.search(line) or _SASL_VERB_RE.search(line):
            continue
        if _B64_TAIL_RE.search(line) and _replace_tail(lines, probe, counts):
            wanted -= 1
            changed = True
    return changed


def _pg_password(line: str) -> re.Match[str] | None:
    found = _PG_PASSWORD_RE.search(line)
    if found is None:
        return None
    size = ord(found.group("len"))
    if found.group("len") != "." and size != len(found.group("s")) + 5:
        return None
    return found


def _pg_raw(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        size = int.from_bytes(match.group("len").encode("latin-1"), "big")
        if size != len(match.group("s")) + 5:
            return match.group(0)
        learn(match.group("s"), "decoder_secret")
        counts["decoder_secret"] += 1
        return match.group(0)[:5] + mark("decoder_secret") + "\x00"
    return _PG_RAW_RE.sub(replace, text)


def redact_auth_exchanges(text: str, counts: Counter[str]) -> str:
    """SASL AUTH answers, IMAP LOGIN and PostgreSQL PasswordMessage passwords in -A output."""
    if "p\x00\x00" in text:
        text = _pg_raw(text, counts)
    lower_has_auth = "auth" in text or "AUTH" in text or "LOGIN" in text
    if not lower_has_auth and "p..." not in text:
        return text
    lines = text.split("\n")
    changed = False
    for row, line in enumerate(lines):
        if "AUTH" in line.upper():
            verb = _SASL_VERB_RE.search(line)
            if verb is not None:
                if verb.group("s"):
                    changed = _replace_tail(lines, row, counts) or changed
                changed = _sasl(lines, row, verb.group("mech").upper(), bool(verb.group("s")),
                                counts) or changed
                continue
        if "LOGIN" in line.upper():
            imap = _IMAP_LOGIN_RE.search(line)
            if imap is not None and "[REDACTED:" not in imap.group("s"):
                value = imap.group("s").strip('"')
                learn(value, "decoder_secret")
                counts["decoder_secret"] += 1
                lines[row] = line[:imap.start("s")] + mark("decoder_secret") + line[
                    imap.end("s"):]
                changed = True
                continue
        if "p..." in line:
            pg = _pg_password(line)
            if pg is not None and "[REDACTED:" not in pg.group("s"):
                learn(pg.group("s"), "decoder_secret")
                counts["decoder_secret"] += 1
                lines[row] = line[:pg.start("s")] + mark("decoder_secret") + line[pg.end("s"):]
                changed = True
    return "\n".join(lines) if changed else text
