"""Credentials that tcpdump's protocol decoders print at default verbosity.

tcpdump is not headers-only without -A/-X: for some protocols it prints one line per application
message. Checked against tcpdump 4.99 output captured on loopback in a network namespace
(tests/safety/data/tcpdump_decoders_*.txt):

    RESP "AUTH" "S3cretRedis"            RESP "AUTH" "default" "AclPassw0rd1"
    FTP: PASS FtpS3cret!                 SMTP: AUTH PLAIN AGFsaWNl...   SMTP: U210cFMz... (LOGIN)
    C="SnmpS3cret" GetRequest(25) ...    { SNMPv2c C="SnmpS3cret" { GetRequest(25) ...

With -v the decoders print whole header blocks on tab-indented lines (the gate makes such
captures RISKY); the same lines are redacted here where they can be recognised.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Final

from core.safety.secret_pairs import learn, mark

_RESP_AUTH_RE: Final = re.compile(
    r"(?i)\"(?:AUTH|AUTH2|requirepass|masterauth)\"(?P<args>(?:[ \t]\"[^\"\r\n]{0,512}\"){1,2})")
_RESP_ARG_RE: Final = re.compile(r"\"([^\"\r\n]{0,512})\"")
_REDIS_WORD_RE: Final = re.compile(r"^[A-Z]{2,16}$")
#: One application line per message: `FTP: PASS x`, `SMTP: AUTH PLAIN x`, `IMAP: a1 LOGIN u p`;
#: with -v the same lines appear tab-indented without the protocol name.
_LINE_SECRET: Final = (
    r"(?:[Pp][Aa][Ss][Ss]|[Aa][Cc][Cc][Tt])[ \t]+(?P<s>[^\r\n]{1,512})"
    r"|[Aa][Uu][Tt][Hh][ \t]+(?:PLAIN|LOGIN|XOAUTH2|OAUTHBEARER|CRAM-MD5|NTLM|plain|login)"
    r"[ \t]+(?P<s2>[^\s]{1,4096})"
    r"|[A-Za-z0-9.]{1,20}[ \t]+(?:LOGIN|login)[ \t]+[^\s]{1,256}[ \t]+(?P<s3>[^\r\n]{1,512})")
_PREFIXED_RE: Final = re.compile(r"(?:FTP|POP3?|IMAP|SMTP): (?:" + _LINE_SECRET + ")")
#: With -A the payload itself is printed, after the packet's header bytes on the same line.
_PAYLOAD_RE: Final = re.compile(
    r"(?m)(?:PASS|ACCT|AUTHINFO PASS)[ \t]+(?P<s>[^\r\n]{1,512}?)\r?$"
    r"|AUTH[ \t]+(?:PLAIN|LOGIN|XOAUTH2|OAUTHBEARER|CRAM-MD5|NTLM)[ \t]+(?P<s2>[^\s]{1,4096})"
    r"|LOGIN[ \t]+[^\s]{1,256}[ \t]+(?P<s3>[^\r\n]{1,512}?)\r?$")
_TCPDUMP_HEADER_RE: Final = re.compile(r"(?m)^[0-9:.]{8,20} IP6? ")
_INDENTED_RE: Final = re.compile(r"(?m)^\t[ \t]*(?:" + _LINE_SECRET + ")")
_PREFIX_NEEDLES: Final = ("ftp: ", "pop: ", "pop3: ", "imap: ", "smtp: ")
_INDENT_NEEDLES: Final = ("\tpass", "\tacct", "\tauth", " login ")
#: SMTP AUTH LOGIN sends the user name and password as bare base64 lines.
_SMTP_B64_RE: Final = re.compile(r"(?m)SMTP: (?P<s>[A-Za-z0-9+/]{4,4096}={0,2})[ \t]*$")
#: The same lines in -v output (tab-indented) and in -A payloads (after the header bytes).
_LOGIN_B64_RE: Final = re.compile(
    r"(?m)(?:^\t[ \t]*|(?<=\.\.\.))(?P<s>[A-Za-z0-9+/]{4,4096}={0,2})\r?$")
_SNMP_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_])C=(?:\"(?P<s>[^\"\r\n]{1,256})\"|(?P<s2>[^\s\"]{1,256}))[ \t]+(?:\{[ \t]*)?"
    r"(?:Get|Set|GetNext|GetBulk|Inform|Trap|V2Trap|Report|Response)")


def _base64_secret(value: str) -> bool:
    """A client's base64 line, not an SMTP verb (QUIT, DATA, RSET are valid base64 too)."""
    return not (value.isalpha() and value.isupper())


def _replace_group(match: re.Match[str], counts: Counter[str]) -> str:
    for group in ("s", "s2", "s3"):
        if group in match.re.groupindex and match.group(group) is not None:
            start, end = match.start(group) - match.start(), match.end(group) - match.start()
            value = match.group(group)
            if "[REDACTED:" in value:
                return match.group(0)
            learn(value, "decoder_secret")
            counts["decoder_secret"] += 1
            whole = match.group(0)
            return whole[:start] + mark("decoder_secret") + whole[end:]
    return match.group(0)  # pragma: no cover - every pattern sets one group


def _resp(match: re.Match[str], counts: Counter[str]) -> str:
    args = match.group("args")
    values = _RESP_ARG_RE.findall(args)
    # AUTH password | AUTH user password; a second word in capitals is the next command
    index = 1 if len(values) == 2 and not _REDIS_WORD_RE.match(values[1]) else 0
    secret = values[index]
    if not secret or "[REDACTED:" in secret:
        return match.group(0)
    learn(secret, "decoder_secret")
    counts["decoder_secret"] += 1
    quoted = [f'"{v}"' for v in values]
    quoted[index] = f'"{mark("decoder_secret")}"'
    head = match.group(0)[: match.start("args") - match.start()]
    return head + "".join(f" {q}" for q in quoted)


def redact_decoders(text: str, lower: str, counts: Counter[str]) -> str:
    """Apply each decoder rule whose needle occurs in `lower`."""
    if '"auth' in lower or '"requirepass"' in lower or '"masterauth"' in lower:
        text = _RESP_AUTH_RE.sub(lambda m: _resp(m, counts), text)
    if any(n in lower for n in _PREFIX_NEEDLES):
        text = _PREFIXED_RE.sub(lambda m: _replace_group(m, counts), text)
    if any(n in lower for n in _INDENT_NEEDLES):
        text = _INDENTED_RE.sub(lambda m: _replace_group(m, counts), text)
    if ("pass" in lower or "login" in lower or "auth" in lower) and _TCPDUMP_HEADER_RE.search(
            text):
        text = _PAYLOAD_RE.sub(lambda m: _replace_group(m, counts), text)
    if "auth login" in lower and _TCPDUMP_HEADER_RE.search(text):
        text = _LOGIN_B64_RE.sub(lambda m: _replace_group(m, counts)
                                 if _base64_secret(m.group("s")) else m.group(0), text)
    if "smtp: " in lower:
        text = _SMTP_B64_RE.sub(lambda m: _replace_group(m, counts)
                                if _base64_secret(m.group("s")) else m.group(0), text)
    if (' c="' in lower) or (" c=" in lower and any(
            pdu in lower for pdu in ("get", "set", "trap", "inform", "report"))):
        text = _SNMP_RE.sub(lambda m: _replace_group(m, counts), text)
    return text
