"""Remove secrets from command output and command lines before they are stored or shown.

Design rules:
- Linear time: every pattern starts at a literal or behind a negative look-behind boundary, with
  no nested unbounded quantifiers, and every scan window is bounded, so no input can make
  redaction slow (tests feed 1 MB adversarial inputs).
- Token-shaped secrets (JWTs, GitHub/Slack/AWS tokens, PEM blocks ...) are found by form
  (`secret_patterns`); key/value secrets by the *name* that holds them (`secret_names`), so
  innocent neighbours are left alone.
- Innocent output stays byte-identical: IPs, GUIDs, resource IDs, MACs, hex hashes, DNSKEY and
  RRSIG records, certificates and SSH fingerprints have no pattern that can match them, and the
  bare 88-character key rule skips DNS records and public PEM blocks.
- JSON stays parseable: values inside JSON strings are replaced inside the quotes, and a bare
  JSON value is replaced by a quoted marker.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from core.safety.fast_sub import ci_sub
from core.safety.secret_auth_wire import redact_auth_exchanges
from core.safety.secret_base64 import redact_base64
from core.safety.secret_commands import redact_command_secrets
from core.safety.secret_decoders import redact_decoders
from core.safety.secret_formats import FORMAT_PATTERNS
from core.safety.secret_judge import (
    enum_like,
    innocent_value,
    is_secret,
    name_class,
    not_secret_name,
    setting_under_secret_word,
)
from core.safety.secret_names import (
    credential_like,
    env_secret,
    is_placeholder,
    kv_secret,
    looks_empty,
    normalise_name,
    secret_name,
)
from core.safety.secret_pairs import learn, learning, mark, redact_pairs, replace_value
from core.safety.secret_patterns import PROGRAM_FLAGS, TOKEN_PATTERNS
from core.safety.secret_stream import redact_echoes, redact_hex_dumps, redact_resp
from core.safety.secret_structure import (
    redact_json_document,
    redact_lines,
    redact_query_and_headers,
    redact_xml,
)
from core.safety.secret_syntax import (
    redact_escaped_json,
    redact_password_schemes,
    redact_short_password_options,
    redact_word_pairs,
)
from core.safety.secret_templates import redact_bicep_secure
from core.safety.secret_vault import redact_vault_values


@dataclass(frozen=True)
class RedactionResult:
    text: str
    count: int
    #: kind -> number of redactions
    kinds: dict[str, int] = field(default_factory=dict)


_PEM_BEGIN_RE: Final = re.compile(
    r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END_RE: Final = re.compile(r"-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_MARKER_RE: Final = re.compile(r"-----(BEGIN|END) ([A-Z0-9 ]{1,40})-----")
_PUTTY_RE: Final = re.compile(
    r"Private-Lines:[ \t]*[0-9]{1,4}\r?\n(?:[A-Za-z0-9+/=]{1,200}\r?\n){0,400}"
    r"(?:Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]{1,200})?")
_NAME_CHARS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.$")
_KV_NEEDLES: Final = ("pass", "pwd", "secret", "token", "key", "credential", "connection",
                      "auth", "sig", "pat", "psk", "primary", "secondary")
_STORAGE_KEY_RE: Final = re.compile(
    r"(?<![A-Za-z0-9+/=-])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])")
_DNS_CONTEXT_RE: Final = re.compile(
    r"\b(?:DNSKEY|RRSIG|CDNSKEY|CDS|DS|KEY|SIG|NSEC3PARAM|TLSA|SSHFP|IPSECKEY|DNSSEC)\b"
    r"|(?i:dnssec|dnskey)"
    r"|publicKey|public_key|PublicKey|ssh-|ecdsa-|BEGIN CERTIFICATE")
#: A base64 value named as a hash (NuGet `contentHash`, `sha512:`, `integrity`) is no key.
_HASH_CONTEXT_RE: Final = re.compile(r"(?i)hash|sha-?(?:1|256|384|512)|digest|checksum|integrity"
                                     r"|etag|md5")
#: `dig +short` DNSSEC records have no type word: DNSKEY rdata is `FLAGS 3 ALG KEY`, RRSIG
#: rdata `TYPE ALG LABELS TTL EXPIRY INCEPTION KEYTAG SIGNER. SIGNATURE`.
#: DNSKEY/CDNSKEY rdata right before the key (`257 3 13 KEY`), wherever the record starts.
_DNSKEY_BEFORE_RE: Final = re.compile(r"(?<![0-9])[0-9]{1,5} 3 [0-9]{1,3}[ \t]+$")
_DNS_RDATA_RE: Final = re.compile(
    r"[ \t]*(?:[0-9]{1,5} 3 [0-9]{1,3} |[A-Z0-9]{1,10} [0-9]{1,3} [0-9]{1,3} [0-9]{1,10} "
    r"[0-9]{14} [0-9]{14} [0-9]{1,5} \S{1,255} )")
_CLI_FLAG_RE: Final = re.compile(
    r"(?i)(?<![A-Za-z0-9_-])--?(?P<n>(?:[a-z0-9]{1,20}-){0,3}[a-z0-9]{0,12}?(?:password|passwd|passphrase|"
    r"secret|token|key|string|sas|pass|pat|storepass|keypass|passin|passout))"
    r"(?:=|[ \t]{1,5})(?P<s>\"[^\"\r\n]{0,4096}\"|'[^'\r\n]{0,4096}'|[^\s\"']{1,4096})")
_AZ_LOGIN_P_RE: Final = re.compile(
    r"(?i)\baz[ \t]+(?:login|acr[ \t]+login|(?:vm|vmss)[ \t]+user[ \t]+[a-z-]{1,20})\b"
    r"[^\r\n]{0,400}?[ \t]-p(?:[ \t]+|=|(?=[^\s-]))(?P<s>\S{1,1024})")
#: NAME=VALUE with an UPPER_CASE name (env, printenv, .env files, docker inspect "Env")
_ENV_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<n>[A-Z][A-Z0-9_]{1,63})=(?:\"(?P<s2>[^\"\r\n]{1,4096})\""
    r"|'(?P<s3>[^'\r\n]{1,4096})'|(?P<s>[^\s\"',;&|]{1,4096}))")
_ENV_NEEDLES: Final = ("PASS", "PWD", "SECRET", "TOKEN", "KEY", "AUTH", "CREDENTIAL", "PAT",
                       "PSK", "CONNSTR", "SAS", "COOKIE", "SIGNATURE")
_IS_SECRET_RE: Final = re.compile(r"(?i)\"is_?secret\"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}true")
_KV_RE: Final = re.compile(
    r"(?i)(?:pass(?:word|wd|phrase)?|pwd|secret|token|key(?:value)?|credential|"
    r"connection_?string|auth|sig|pat|psk|primary|secondary)(?:s|[-_]?[0-9])?(?P<q>[\"']?)"
    r"[ \t]{0,3}(?:[:=][=>]?|%3[Dd])[ \t]{0,3}"
    r"(?P<v>\"(?P<dq>(?:[^\"\\\r\n]|\\.){0,4096})\""
    r"|'(?P<sq>[^'\r\n]{0,4096})'|(?P<bare>[^\s\"',;&}<>)\]=:(][^\s\"',;&}<>)\]]{0,4095}))")
_WORD_HEAD_RE: Final = re.compile(r"[A-Za-z_]+")
_XML_RE: Final = re.compile(r"<([A-Za-z_:-]{1,40})>([^<\r\n]{1,4096})</\1>")
#: innermost JSON objects (no nested braces), for name/value pairs such as app settings
_JSON_OBJECT_RE: Final = re.compile(r"\{[^{}]{1,4096}\}")
_JSON_NAME_RE: Final = re.compile(
    r"\"(?:name|keyName|settingName|Name|KeyName|key|Key|variable|Variable|var|param|parameter"
    r"|setting|field)\"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}"
    r"\"(?P<n>[^\"\\\r\n]{1,200})\"")
_JSON_VALUE_RE: Final = re.compile(
    r"\"(?:value|Value|val|secureValue|secretValue)\"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}"
    r"\"(?P<s>(?:[^\"\\\r\n]|\\.){1,4096})\"")
_ARM_VALUE_RE: Final = re.compile(
    r"\"(?:value|Value|defaultValue|DefaultValue|secureValue|SecureValue)\"[ \t\r\n]{0,20}:"
    r"[ \t\r\n]{0,20}\"(?P<s>(?:[^\"\\\r\n]|\\.){1,4096})\"")
_JSON_STRING_PAIR_RE: Final = re.compile(
    r"\"[^\"\\\r\n]{1,200}\"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}\"(?P<s>(?:[^\"\\\r\n]|\\.){1,4096})\"")
#: "adminPassword": {"value": "..."}, "functionKeys": {"default": "..."}
_SECRET_OBJECT_RE: Final = re.compile(
    r"\"(?P<n>[^\"\\\r\n{}]{1,100})\"[ \t]{0,5}:[ \t\r\n]{0,20}(?P<o>\{[^{}]{0,4096}\})")


def _spans(match: re.Match[str]) -> tuple[int, int] | None:
    """The span of the secret part of a match: group s, s2 or s3, else None (whole match)."""
    for group in ("s", "s2", "s3"):
        if group in match.re.groupindex and match.group(group) is not None:
            return match.start(group), match.end(group)
    return None


def _redact_pem(text: str, counts: Counter[str]) -> str:
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        begin = _PEM_BEGIN_RE.search(text, pos)
        if begin is None:
            break
        end = _PEM_END_RE.search(text, begin.end())
        out.append(text[pos:begin.start()])
        out.append(mark("private_key"))
        counts["private_key"] += 1
        if end is None:
            pos = len(text)
            break
        pos = end.end()
    out.append(text[pos:])
    return "".join(out)


def _token_replacer(kind: str, counts: Counter[str],
                    accept: Callable[[str], bool] | None) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        span = _spans(match)
        if span is None:
            learn(whole, kind)
            counts[kind] += 1
            return mark(kind)
        start, end = span[0] - match.start(), span[1] - match.start()
        value = whole[start:end]
        if ("[REDACTED:" in value or is_placeholder(value)
                or (accept is not None and not accept(value))):
            return whole
        if looks_empty(value) and kind in ("authorization_header", "credential_header"):
            return whole
        if not value.startswith("{") and innocent_value(value) and kind in (
                "connection_string_secret", "cli_secret", "credential_header"):
            return whole
        learn(value, kind)
        counts[kind] += 1
        return whole[:start] + mark(kind) + whole[end:]
    return replace


def _program_flag_pass(text: str, lower: str, counts: Counter[str]) -> str:
    """mysql -pX, sshpass -p X, sqlcmd -P X ...: only on lines where the program is named."""
    for needles, program_re, flag_re, per_line in PROGRAM_FLAGS:
        if not any(n in lower for n in needles):
            continue
        replace = _token_replacer("cli_secret", counts, lambda v: not looks_empty(v.strip("'\"")))
        out: list[str] = []
        pos = 0
        for match in program_re.finditer(text):
            if match.start() < pos:
                continue
            eol = text.find("\n", match.end())
            eol = len(text) if eol == -1 else eol
            out.append(text[pos:match.end()])
            out.append(flag_re.sub(replace, text[match.end():eol], count=per_line))
            pos = eol
        out.append(text[pos:])
        text = "".join(out)
    return text


def _name_before(text: str, index: int) -> str:
    start = index
    while start > 0 and index - start < 64 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:index]


def _kv_pass(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        head = _WORD_HEAD_RE.match(whole)
        name = _name_before(text, match.start()) + (head.group(0) if head else "")
        for group in ("dq", "sq", "bare"):
            value = match.group(group)
            if value is not None:
                offset = match.start(group) - match.start()
                break
        else:  # pragma: no cover - the pattern always sets one group
            return whole
        if (not kv_secret(name, value) or name_class(name) == "pointer" or innocent_value(value)
                or not_secret_name(name) or (name_class(name) == "weak" and enum_like(value))
                or setting_under_secret_word(name, value)):
            return whole  # `authKey: ManagedIdentity`: a weak name with an enum is a setting
        if group == "bare" and text[match.end():match.end() + 1] in ("'", '"'):
            return whole  # SQL's N'…' / E'…': the literal after the prefix is the value
        learn(value, "secret_value")
        counts["secret_value"] += 1
        shown = mark("secret_value")
        if group == "bare" and match.group("q") == '"':
            shown = f'"{shown}"'  # "password": 12345678901 stays valid JSON
        return whole[:offset] + shown + whole[offset + len(value):]
    return ci_sub(_KV_RE, replace, text)


def _placeholder(value: str) -> bool:
    """--token TOKEN, --password PASSWORD: a help text's metavar, not a secret."""
    value = value.rstrip(",;]).")
    bare = value.replace("_", "").replace("-", "")
    return bare.isalpha() and value.isupper() and len(value) <= 30


def _cli_pass(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group("n")
        value = match.group("s").strip("\"'")
        if (not secret_name(name) or looks_empty(value) or _placeholder(value)
                or value.startswith("-")):
            return match.group(0)
        counts["cli_secret"] += 1
        start = match.start("s") - match.start()
        return match.group(0)[:start] + mark("cli_secret")
    return ci_sub(_CLI_FLAG_RE, replace, text)


def _public_pem_spans(text: str) -> list[tuple[int, int]]:
    """Spans of certificate / public key PEM blocks, where an 88-character line is no key.

    One sweep over the BEGIN/END markers (a BEGIN left open is replaced by the next one), so
    a text full of unmatched markers costs no more than one pass.
    """
    spans: list[tuple[int, int]] = []
    open_label: str | None = None
    open_start = 0
    for marker in _PEM_MARKER_RE.finditer(text):
        kind, label = marker.group(1), marker.group(2)
        if kind == "BEGIN":
            open_label = None if "PRIVATE" in label else label
            open_start = marker.start()
        elif label == open_label:
            spans.append((open_start, marker.end()))
            open_label = None
    return spans


def _storage_key_pass(text: str, counts: Counter[str]) -> str:
    spans = _public_pem_spans(text) if "-----BEGIN " in text else []
    starts = [s for s, _ in spans]

    def replace(match: re.Match[str]) -> str:
        index = bisect.bisect_right(starts, match.start()) - 1
        if index >= 0 and match.start() < spans[index][1]:
            return match.group(0)
        line_start = text.rfind("\n", max(0, match.start() - 400), match.start()) + 1
        line_end = text.find("\n", match.end(), match.end() + 400)
        context = text[max(line_start, match.start() - 400):
                       line_end if line_end != -1 else match.end() + 400]
        if _DNS_CONTEXT_RE.search(context) or _HASH_CONTEXT_RE.search(
                text, max(line_start, match.start() - 80), match.start()) or _DNS_RDATA_RE.match(
                text, line_start, match.start()) or _DNSKEY_BEFORE_RE.search(
                text, max(line_start, match.start() - 24), match.start()):
            return match.group(0)
        counts["storage_key"] += 1
        return mark("storage_key")
    return _STORAGE_KEY_RE.sub(replace, text)


def _json_pairs_pass(text: str, counts: Counter[str]) -> str:
    """{"name": "DB_PASSWORD", "value": "..."}: app settings, env lists, key lists."""
    def fix(match: re.Match[str]) -> str:
        body = match.group(0)
        if not any(k in body for k in ('"value"', '"Value"', '"val"', '"secureValue"',
                                        '"secretValue"')):
            return body
        named = _JSON_NAME_RE.search(body)
        name = named.group("n") if named else ""
        flagged = _IS_SECRET_RE.search(body) is not None

        def value(vm: re.Match[str]) -> str:
            v = vm.group("s")
            if looks_empty(v) or "[REDACTED:" in v:
                return vm.group(0)
            if flagged:
                return replace_value(vm, counts, "secret_value")
            if name_class(name) is not None:  # the setting's name decides, with the value
                if not is_secret(name, v):
                    return vm.group(0)  # KEYVAULT_NAME, AUTH_TYPE=ManagedIdentity, a KV ref
            elif not (credential_like(v) and ("key" in body.lower() or "secret" in body.lower())):
                return vm.group(0)
            return replace_value(vm, counts, "secret_value")
        return _JSON_VALUE_RE.sub(value, body)
    return _JSON_OBJECT_RE.sub(fix, text)


def _secret_object_pass(text: str, counts: Counter[str]) -> str:
    """Every string inside an object whose own name is secret: {"adminPassword": {"value": ..}}."""
    def fix(match: re.Match[str]) -> str:
        name = match.group("n")
        if not (secret_name(name) or name_class(name) == "strong"):
            return match.group(0)

        def value(vm: re.Match[str]) -> str:
            v = vm.group("s")
            if looks_empty(v) or "[REDACTED:" in v:
                return vm.group(0)
            return replace_value(vm, counts, "secret_value")
        body = match.group("o")
        if '"value"' in body or '"defaultValue"' in body or '"secureValue"' in body:
            obj = _ARM_VALUE_RE.sub(value, body)  # an ARM parameter: its value, not its type
        elif normalise_name(match.group("n")).endswith(("keys", "secrets", "credentials",
                                                        "tokens", "passwords")):
            obj = _JSON_STRING_PAIR_RE.sub(value, body)  # a map of names to keys
        else:
            return match.group(0)  # a schema ({"type": "string"}) or settings of a secret
        return match.group(0)[: match.start("o") - match.start()] + obj
    return _SECRET_OBJECT_RE.sub(fix, text)


def _xml_pass(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if not secret_name(match.group(1)) or looks_empty(match.group(2)):
            return match.group(0)
        counts["secret_value"] += 1
        return f"<{match.group(1)}>{mark('secret_value')}</{match.group(1)}>"
    return _XML_RE.sub(replace, text)


def _env_pass(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        for group in ("s", "s2", "s3"):
            value = match.group(group)
            if value is not None:
                break
        else:  # pragma: no cover - the pattern always sets one group
            return match.group(0)
        if ("[REDACTED:" in value or not env_secret(match.group("n"), value)
                or innocent_value(value) or name_class(match.group("n")) == "pointer"
                or setting_under_secret_word(match.group("n"), value)):
            return match.group(0)
        return replace_value(match, counts, "secret_value")
    return _ENV_RE.sub(replace, text)


def redact_with_counts(text: str) -> RedactionResult:
    """Redact secrets and report how many of each kind were removed."""
    with learning() as learned:
        result = _redact(text)
        counts = Counter(result.kinds)
        text = result.text
        text = redact_resp(text, counts)
        text = redact_auth_exchanges(text, counts)
        text = redact_hex_dumps(text, counts, learned, _inner)
        text = redact_echoes(text, counts, learned)
        return RedactionResult(text, sum(counts.values()), dict(counts))


def _redact(text: str) -> RedactionResult:
    counts: Counter[str] = Counter()
    lower = text.lower()
    if "vault.azure.net" in lower:
        # first, so a connection string stored as a secret goes whole, not piece by piece
        text = redact_vault_values(text, counts)
    text = _redact_pem(text, counts)
    if "private-lines:" in lower:
        text = _PUTTY_RE.sub(_token_replacer("private_key", counts, None), text)
    for pattern in TOKEN_PATTERNS + FORMAT_PATTERNS:
        if any(needle in lower for needle in pattern.needles):
            text = ci_sub(pattern.pattern,
                          _token_replacer(pattern.kind, counts, pattern.accept), text)
    text = _program_flag_pass(text, lower, counts)
    if "==" in text:
        text = _storage_key_pass(text, counts)
    text = redact_decoders(text, lower, counts)
    if "login" in text or " user " in text:
        text = ci_sub(_AZ_LOGIN_P_RE, _token_replacer("cli_secret", counts, None), text)
    if any(needle in lower for needle in _KV_NEEDLES):
        text = _cli_pass(text, counts)
        text = _kv_pass(text, counts)
        if "{" in text:
            text = _secret_object_pass(text, counts)
    if "=" in text and any(word in text for word in _ENV_NEEDLES):
        text = _env_pass(text, counts)
    if ('"value"' in lower or '"val"' in lower or '"securevalue"' in lower
            or '"secretvalue"' in lower) and "{" in text:
        text = _json_pairs_pass(text, counts)
    if "</" in text:
        text = _xml_pass(text, counts)
    text = redact_pairs(text, lower, counts)
    text = redact_command_secrets(text, text.lower(), counts)
    text = redact_bicep_secure(text, counts)
    # words rather than key=value: directive configs, SQL, escaped JSON, -p of any program
    text = redact_escaped_json(text, counts)
    text = redact_word_pairs(text, text.lower(), counts)
    text = redact_short_password_options(text, counts)
    text = redact_password_schemes(text, counts)
    # structure first for what the patterns above cannot name (issue 28)
    text = redact_json_document(text, counts)
    text = redact_lines(text, text.lower(), counts)
    if "</" in text:
        text = redact_xml(text, counts)
    text = redact_query_and_headers(text, text.lower(), counts)
    text = redact_base64(text, counts, _inner)
    return RedactionResult(text, sum(counts.values()), dict(counts))


def _inner(text: str) -> tuple[str, int]:
    """Redaction of decoded text (base64 content), for `redact_base64`."""
    result = redact_with_counts(text)
    return result.text, result.count


def redact(text: str) -> str:
    """Return `text` with every recognised secret replaced by [REDACTED:kind]."""
    return redact_with_counts(text).text
