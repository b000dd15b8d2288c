"""Remove secrets from command output and command lines before they are stored or shown.

Design rules:
- Every pattern starts at a literal or behind a negative look-behind boundary, and has no
  nested unbounded quantifiers, so each start position costs a bounded amount of work and no
  input can make redaction slow (tests feed 1 MB adversarial inputs).
- Key/value secrets are found by the value's *name* (password, client_secret, AccountKey, ...);
  names are judged in Python after a cheap regex hit, so innocent neighbours (tokenType,
  sshPublicKey, skipToken, tags named "key") are left alone.
- Innocent output stays byte-identical: IPs, GUIDs, resource IDs, MACs, hex hashes, DNSKEY and
  RRSIG records, certificates and SSH fingerprints have no pattern that can match them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

MARK: Final = "[REDACTED:{}]"


@dataclass(frozen=True)
class RedactionResult:
    text: str
    count: int
    #: kind -> number of redactions
    kinds: dict[str, int] = field(default_factory=dict)


# ---- names of secret-bearing fields ------------------------------------------------------------

_KEY_QUALIFIERS: Final = (
    "account", "access", "shared", "sharedaccess", "primary", "secondary", "private", "api",
    "secret", "master", "subscription", "admin", "query", "function", "functions", "storage",
    "service", "signing", "sas", "client", "app", "apim", "auth", "encryption", "session",
    "license", "webhook", "host_function", "system", "masterkey", "readonly", "readwrite",
    "x-api", "x_api", "xapi", "ocp-apim-subscription",
)
_NOT_SECRET_NAMES: Final = frozenset({
    "skiptoken", "$skiptoken", "continuationtoken", "nexttoken", "pagetoken", "synctoken",
    "paginationtoken", "tokentype", "token_type", "maxtokens", "max_tokens", "pwd", "oldpwd",
    "usetoken", "tokenendpoint", "nextpagetoken", "resumetoken", "cancellationtoken",
    "x-ms-continuation-token", "continuation-token", "ms-continuation-token",
})
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.$")
_FALSE_VALUES: Final = frozenset({"", "null", "true", "false", "none", "nil", "undefined",
                                  "[]", "{}", "''", '""'})


def _secret_name(name: str) -> bool:
    """Does a field/option/variable with this name hold a secret value?"""
    name = name.lower().strip("-_.$")
    if not name or name in _NOT_SECRET_NAMES:
        return False
    if name.endswith(("password", "passwd", "passphrase", "secret", "secrets", "credential",
                      "credentials", "connectionstring", "connection_string",
                      "connection-string", "token", "tokens")):
        return not any(name.endswith(n) for n in _NOT_SECRET_NAMES)
    if name.endswith("pwd") or name in ("auth", "sig"):
        return True
    for suffix in ("keys", "key"):
        if name.endswith(suffix):
            prefix = name[: -len(suffix)].rstrip("_-.")
            return bool(prefix) and prefix.endswith(_KEY_QUALIFIERS)
    return False


def _looks_empty(value: str) -> bool:
    v = value.strip().lower()
    return (v in _FALSE_VALUES or v.startswith(("[redacted", "{", "[")) or set(v) <= {"*"}
            or (v.isdigit() and len(v) <= 10))


# ---- the patterns ------------------------------------------------------------------------------

_PEM_BEGIN_RE: Final = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END_RE: Final = re.compile(r"-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----")

# (kind, pattern); the named group "s" is replaced when present, else the whole match.
_TOKEN_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("url_password", re.compile(
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@\"'<>]{0,256}:"
        r"(?P<s>[^\s/@\"'<>]{1,512})@")),
    ("jwt", re.compile(
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*")),
    ("bearer_token", re.compile(r"(?i)\bbearer[ \t]{1,10}(?P<s>[A-Za-z0-9._~+/=-]{8,})")),
    ("authorization_header", re.compile(
        r"(?i)(?<![A-Za-z0-9_-])(?:proxy-)?authorization[\"']?[ \t]{0,5}[:=][ \t]{0,5}[\"']?"
        r"(?P<s>[^\r\n\"']{1,4096})")),
    ("credential_header", re.compile(
        r"(?i)(?<![A-Za-z0-9_-])(?:set-cookie|cookie|x-api-key|api-key|"
        r"ocp-apim-subscription-key|x-functions-key|x-ms-token-[a-z-]{1,40}|x-auth-token)"
        r"[\"']?[ \t]{0,5}:[ \t]{0,5}[\"']?(?P<s>[^\r\n\"']{1,4096})")),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9-])(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}")),
    ("slack_webhook", re.compile(
        r"hooks\.slack\.com/(?:services|workflows)/(?P<s>[A-Za-z0-9/_-]{8,})")),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}")),
    ("google_oauth", re.compile(
        r"(?<![A-Za-z0-9_-])(?:ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[A-Za-z0-9_-]{20,})")),
    ("github_token", re.compile(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})")),
    ("aws_access_key_id", re.compile(
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"
        r"(?![A-Z0-9])")),
    ("api_token", re.compile(
        r"(?<![A-Za-z0-9_-])(?:sk_live_[A-Za-z0-9]{16,}|rk_live_[A-Za-z0-9]{16,}|"
        r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}|npm_[A-Za-z0-9]{36}|glpat-[A-Za-z0-9_-]{20,})")),
    ("entra_client_secret", re.compile(
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])")),
    ("connection_string_secret", re.compile(
        r"(?i)(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey|SharedAccessSignature|Password|"
        r"SharedSecret|AccessKey|ClientSecret)=(?P<s>[^;\"'\s<>]{1,4096})")),
    ("connection_string_secret", re.compile(r"(?i);[ \t]{0,3}pwd=(?P<s>[^;\"'\s<>]{1,4096})")),
    ("sas_signature", re.compile(r"(?i)(?<![A-Za-z0-9_])sig=(?P<s>[^&\s\"'<>;]{1,4096})")),
    ("cli_password", re.compile(
        r"(?<![A-Za-z0-9_-])(?:-u|--user)[ \t]{1,5}[\"']?[^\s:\"']{1,256}:"
        r"(?P<s>[^\s\"']{1,1024})")),
)

#: Lower-case literals without which a pattern cannot match: a cheap `in` check skips the pass.
_NEEDLES: Final[dict[str, tuple[str, ...]]] = {
    "url_password": ("://",),
    "jwt": ("eyj",),
    "bearer_token": ("bearer",),
    "authorization_header": ("authorization",),
    "credential_header": ("cookie", "api-key", "subscription-key", "functions-key",
                          "x-ms-token-", "x-auth-token"),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack.com",),
    "google_api_key": ("aiza",),
    "google_oauth": ("ya29.", "gocspx-"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "aws_access_key_id": ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa",
                          "anva", "aipa"),
    "api_token": ("sk_live_", "rk_live_", "sk-", "npm_", "glpat-"),
    "entra_client_secret": ("q~",),
    "connection_string_secret": ("key=", "signature=", "password=", "pwd=", "secret="),
    "sas_signature": ("sig=",),
    "cli_password": ("-u", "--user"),
}
_KV_NEEDLES: Final = ("pass", "pwd", "secret", "token", "key", "credential", "connection",
                      "auth", "sig")

_STORAGE_KEY_RE: Final = re.compile(
    r"(?<![A-Za-z0-9+/=-])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])")
_DNS_CONTEXT_RE: Final = re.compile(
    r"\b(?:DNSKEY|RRSIG|CDNSKEY|CDS|DS|KEY|SIG|NSEC3PARAM|TLSA|SSHFP|IPSECKEY|DNSSEC)\b"
    r"|publicKey|public_key|PublicKey|ssh-|ecdsa-|BEGIN CERTIFICATE")
_VAULT_VALUE_RE: Final = re.compile(r"\"value\"[ \t]{0,5}:[ \t]{0,5}\"(?P<s>[^\"\r\n]{1,65536})\"")
_CLI_FLAG_RE: Final = re.compile(
    r"(?i)(?<![A-Za-z0-9_-])--?(?P<n>(?:[a-z0-9]{1,20}-){0,3}(?:password|passwd|secret|token|"
    r"key|string|sas))(?:=|[ \t]{1,5})(?P<s>\"[^\"\r\n]{0,4096}\"|'[^'\r\n]{0,4096}'|"
    r"[^\s\"']{1,4096})")
_AZ_LOGIN_P_RE: Final = re.compile(
    r"(?i)\baz[ \t]+login\b[^\r\n]{0,400}?[ \t]-p[ \t]+(?P<s>\S{1,1024})")
_KV_RE: Final = re.compile(
    r"(?i)(?:password|passwd|passphrase|pwd|secret|token|key|credential|connectionstring|"
    r"connection_string|auth|sig)s?[\"']?[ \t]{0,3}[:=][ \t]{0,3}"
    r"(?P<v>\"(?P<dq>[^\"\r\n]{0,4096})\""
    r"|'(?P<sq>[^'\r\n]{0,4096})'|(?P<bare>[^\s\"',;&}<>)\]]{1,4096}))")
_WORD_HEAD_RE: Final = re.compile(r"[A-Za-z_]+")
_XML_RE: Final = re.compile(r"<([A-Za-z_:-]{1,40})>([^<\r\n]{1,4096})</\1>")


def _mark(kind: str) -> str:
    return MARK.format(kind)


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
        out.append(_mark("private_key"))
        counts["private_key"] += 1
        if end is None:
            pos = len(text)
            break
        pos = end.end()
    out.append(text[pos:])
    return "".join(out)


def _group_replacer(kind: str, counts: Counter[str]) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if "s" in match.re.groupindex and match.group("s") is not None:
            value = match.group("s")
            if "[REDACTED:" in value:
                return whole
            if _looks_empty(value) and kind in ("authorization_header", "credential_header"):
                return whole
            counts[kind] += 1
            start = match.start("s") - match.start()
            return whole[:start] + _mark(kind) + whole[start + len(value):]
        counts[kind] += 1
        return _mark(kind)
    return replace


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
        if not _secret_name(name) or _looks_empty(value):
            return whole
        counts["secret_value"] += 1
        return whole[:offset] + _mark("secret_value") + whole[offset + len(value):]
    return _KV_RE.sub(replace, text)


def _cli_pass(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group("n")
        value = match.group("s").strip("\"'")
        if not _secret_name(name) or _looks_empty(value):
            return match.group(0)
        counts["cli_secret"] += 1
        start = match.start("s") - match.start()
        return match.group(0)[:start] + _mark("cli_secret")
    return _CLI_FLAG_RE.sub(replace, text)


def _storage_key_pass(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        line_start = text.rfind("\n", max(0, match.start() - 400), match.start()) + 1
        line_end = text.find("\n", match.end(), match.end() + 400)
        context = text[max(line_start, match.start() - 400):
                       line_end if line_end != -1 else match.end() + 400]
        if _DNS_CONTEXT_RE.search(context):
            return match.group(0)
        counts["storage_key"] += 1
        return _mark("storage_key")
    return _STORAGE_KEY_RE.sub(replace, text)


def _xml_pass(text: str, counts: Counter[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if not _secret_name(match.group(1)) or _looks_empty(match.group(2)):
            return match.group(0)
        counts["secret_value"] += 1
        return f"<{match.group(1)}>{_mark('secret_value')}</{match.group(1)}>"
    return _XML_RE.sub(replace, text)


def redact_with_counts(text: str) -> RedactionResult:
    """Redact secrets and report how many of each kind were removed."""
    counts: Counter[str] = Counter()
    lower = text.lower()
    text = _redact_pem(text, counts)
    for kind, pattern in _TOKEN_PATTERNS:
        if any(needle in lower for needle in _NEEDLES[kind]):
            text = pattern.sub(_group_replacer(kind, counts), text)
    if "==" in text:
        text = _storage_key_pass(text, counts)
    if "vault.azure.net/secrets/" in text or "vault.azure.net:443/secrets/" in text:
        text = _VAULT_VALUE_RE.sub(_group_replacer("keyvault_secret", counts), text)
    if "login" in text:
        text = _AZ_LOGIN_P_RE.sub(_group_replacer("cli_secret", counts), text)
    if any(needle in lower for needle in _KV_NEEDLES):
        text = _cli_pass(text, counts)
        text = _kv_pass(text, counts)
    if "</" in text:
        text = _xml_pass(text, counts)
    return RedactionResult(text, sum(counts.values()), dict(counts))


def redact(text: str) -> str:
    """Return `text` with every recognised secret replaced by [REDACTED:kind]."""
    return redact_with_counts(text).text
