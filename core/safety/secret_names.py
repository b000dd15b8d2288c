"""Judging names and values for redaction: does a field called X hold a secret, is V one?

Redaction finds most secrets by the *name* of the field, option or variable that holds them
(`password=`, `"clientSecret":`, `--account-key`). The regexes in `redact` only find candidate
name/value pairs cheaply; the decisions live here, in plain Python, so innocent neighbours
(`tokenType`, `sshPublicKey`, `$skiptoken`, tags named "key", `--token TOKEN` in help text) are
left alone.
"""

from __future__ import annotations

import re
from typing import Final

_KEY_QUALIFIERS: Final = (
    "account", "access", "shared", "sharedaccess", "primary", "secondary", "private", "api",
    "secret", "master", "subscription", "admin", "query", "function", "functions", "storage",
    "service", "signing", "sas", "client", "app", "apim", "auth", "encryption", "session",
    "license", "webhook", "host_function", "system", "masterkey", "readonly", "readwrite",
    "x-api", "x_api", "xapi", "ocp-apim-subscription", "host", "routing", "durabletask",
    "decryption", "validation", "machine", "symmetric", "hmac", "jwt", "aes", "cookie",
    "authorization", "integration", "openai", "redis", "cognitive", "search", "maps",
    "translator", "speech", "vision", "eventgrid", "topic", "webhook_signing", "pusher",
    "sendgrid", "mailgun", "stripe", "twilio", "datadog", "dd", "newrelic", "sentry",
)
#: Service Bus / Relay / App Service hybrid connections: "sendKeyValue", "listenKeyValue".
_KEY_VALUE_QUALIFIERS: Final = ("send", "listen", "primary", "secondary", "shared", "access")
NOT_SECRET_NAMES: Final = frozenset({
    "skiptoken", "$skiptoken", "continuationtoken", "nexttoken", "pagetoken", "synctoken",
    "paginationtoken", "tokentype", "token_type", "maxtokens", "max_tokens", "pwd", "oldpwd",
    "usetoken", "tokenendpoint", "nextpagetoken", "resumetoken", "cancellationtoken",
    "x-ms-continuation-token", "continuation-token", "ms-continuation-token", "bypass",
    "compass", "nopass", "csrf_token_name", "idtokenexpiry", "total_tokens", "input_tokens",
    "output_tokens", "prompt_tokens", "completion_tokens", "num_tokens", "token_count",
})
_SECRET_SUFFIXES: Final = (
    "password", "passwd", "passphrase", "secret", "secrets", "credential", "credentials",
    "connectionstring", "connection_string", "connection-string", "token", "tokens",
)
#: Names that are secret only when the value looks like a credential (see `credential_like`):
#: `"primary": true` and `"key1": "2024-01-01T00:00:00Z"` are not.
_AMBIGUOUS_RE: Final = re.compile(r"^(?:key|primary|secondary)[-_]?[0-9]?$")
_FALSE_VALUES: Final = frozenset({"", "null", "true", "false", "none", "nil", "undefined",
                                  "[]", "{}", "''", '""', "<none>", "n/a", "-", "*",
                                  # what other tools print where they removed a value
                                  "redacted", "filtered", "masked", "hidden", "removed",
                                  "obfuscated", "sanitized", "scrubbed", "omitted",
                                  "sensitive", "<sensitive>", "(sensitive value)"})
#: Names that carry a secret only when the value looks like one: Cosmos DB's session token
#: (`0:-1#12345`, a log position) shares its name with AWS's SessionToken (a credential).
_VALUE_DECIDES: Final = frozenset({"sessiontoken", "session_token", "session-token",
                                   "x-ms-session-token"})
#: "(none)", "<not set>", "(hidden)": how tools print that there is no value to show.
_SHOWN_EMPTY_RE: Final = re.compile(
    r"^[(<](?:none|null|empty|not set|unset|hidden|masked|redacted|n/a|nil)[)>]$")
#: `--token TOKEN`, `--password <password>`, `password=${DB_PASSWORD}`: placeholders and
#: references to a variable, not the secret itself.
_PLACEHOLDER_RE: Final = re.compile(
    r"^(?:<[^<>]{1,40}>|\{\{?[^{}]{1,40}\}\}?|\$\{?[A-Z_][A-Z0-9_]{0,60}\}?|\.\.\.|x{3,}|X{3,}"
    r"|\[REDACTED[^\]]*\]|%\([a-z_]{1,40}\)s)$")
_GUID_RE: Final = re.compile(
    r"^\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?$")
_TOKEN_CHARS_RE: Final = re.compile(r"^[A-Za-z0-9+/=_~.%-]{16,4096}$")
_DATE_RE: Final = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}")
#: words in app-setting names that mark the value as a secret (DB_PASSWORD, STRIPE_KEY ...)
SETTING_WORDS: Final = ("password", "passwd", "pwd", "secret", "token", "key", "credential",
                         "connection", "connstr", "conn_str", "sas", "auth", "private", "cert",
                         "signing", "pat")


def normalise_name(name: str) -> str:
    return name.lower().strip("-_.$\"' ")


def secret_name(name: str) -> bool:
    """Does a field/option/variable with this name hold a secret value (whatever it is)?"""
    name = normalise_name(name)
    if not name or name in NOT_SECRET_NAMES:
        return False
    if name.startswith("existing"):
        return False  # Helm's existingSecret: NAME names a Kubernetes secret, it is not one
    if "secret_key" in name or "secretkey" in name:
        return True
    if name.endswith(_SECRET_SUFFIXES):
        return not any(name.endswith(n) for n in NOT_SECRET_NAMES)
    if name.endswith(("pwd", "_pass", "-pass", ".pass", "_pat", "-pat", "psk", "storepass",
                      "keypass", "key-data", "key_data", "keydata")) or name in (
            "auth", "sig", "pass", "pat", "passin", "passout"):
        return True
    if name.endswith("keyvalue"):
        return name[: -len("keyvalue")].rstrip("_-.").endswith(_KEY_VALUE_QUALIFIERS)
    for suffix in ("keys", "key"):
        if name.endswith(suffix):
            prefix = name[: -len(suffix)].rstrip("_-.")
            return bool(prefix) and prefix.endswith(_KEY_QUALIFIERS)
    return False


def ambiguous_name(name: str) -> bool:
    """Names (key, key1, primary, secondary) that hold a secret only if the value looks like one."""
    return bool(_AMBIGUOUS_RE.match(normalise_name(name)))


def looks_empty(value: str) -> bool:
    """Values that carry nothing: null, booleans, short numbers, masks, placeholders, objects."""
    v = value.strip()
    low = v.lower()
    return (low in _FALSE_VALUES or low.startswith(("[redacted", "{", "[")) or set(low) <= {"*"}
            or (low.isdigit() and len(low) <= 10) or bool(_PLACEHOLDER_RE.match(v))
            or bool(_SHOWN_EMPTY_RE.match(low)))


def is_placeholder(value: str) -> bool:
    """A metavar, template or variable reference (PASSWORD, <token>, ${DB_PASSWORD})."""
    return bool(_PLACEHOLDER_RE.match(value.strip()))


def hex_key(value: str) -> bool:
    """A 32-64 digit hex string with letters and digits: Cognitive Services, Search and
    Translator keys look like this. Only a secret where the field's name says key/key1/primary."""
    return bool(re.fullmatch(r"[0-9a-fA-F]{32,64}", value)) and not (
        value.isdigit() or value.isalpha())


def credential_like(value: str) -> bool:
    """A random-looking token: 16+ token characters with letters and digits, not an identifier.

    GUIDs, dates, hex digests (md5/sha*/git), paths and URLs are identifiers, not credentials.
    A JSON-escaped slash (`\\/`, as PHP and .NET write it) counts as the slash it stands for.
    """
    value = value.replace("\\/", "/")
    if not _TOKEN_CHARS_RE.match(value) or _GUID_RE.match(value) or _DATE_RE.match(value):
        return False
    if "://" in value or value.startswith("/") or (value.count(".") >= 2 and "~" not in value):
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", value) and len(value) in (32, 40, 56, 64, 96, 128):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha


def password_like(value: str) -> bool:
    """A 12+ character word mixing cases and digits or symbols: `hunter2-Secret`, not
    `app1-config-prod` or `eastus2`. Used only where the name is `key`/`primary`."""
    if len(value) < 12 or len(value) > 256 or any(c.isspace() for c in value):
        return False
    if _GUID_RE.match(value) or _DATE_RE.match(value) or "://" in value or value[0] in "/~":
        return False
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    symbol = any(c in "!@#$%^&*+=~" for c in value)
    return has_digit and (mixed or symbol)


#: Words of an UPPER_CASE environment name that mark its value secret, and name endings that
#: say the value only points at one (a path, a URL, a name, a type).
_ENV_SECRET_WORDS: Final = frozenset({
    "password", "passwd", "pass", "pwd", "secret", "secrets", "token", "key", "keys", "auth",
    "credential", "credentials", "apikey", "pat", "psk", "connstr", "connectionstring", "sas",
    "accesskey", "secretkey", "privatekey", "signature", "cookie",
})
_ENV_POINTER_ENDINGS: Final = (
    "_path", "_file", "_dir", "_url", "_uri", "_name", "_id", "_type", "_mode", "_enabled",
    "_length", "_size", "_header", "_endpoint", "_host", "_port", "_version", "_region",
    "_expiry", "_expires", "_ttl", "_algorithm", "_alg", "_format", "_issuer", "_audience",
    "_scope", "_vault", "_method", "_provider", "_strategy", "_required", "_timeout",
)
_ENV_INNOCENT_KEYS: Final = ("partition_key", "sort_key", "cache_key", "row_key", "public_key",
                             "hot_key", "idempotency_key", "foreign_key", "primary_key_name")


def env_secret(name: str, value: str) -> bool:
    """Is VALUE secret in `NAME=VALUE` for an UPPER_CASE environment name?"""
    low = name.lower()
    if low in ("pwd", "oldpwd") or low.endswith(_ENV_POINTER_ENDINGS) or low.endswith(
            _ENV_INNOCENT_KEYS):
        return False
    if not any(word in _ENV_SECRET_WORDS for word in low.split("_")):
        return False
    value = value.strip("\"'")
    pointer = value.startswith(("/", "~", "http://", "https://")) and not any(
        c in value for c in "@?")
    return not (looks_empty(value) or pointer)


def kv_secret(name: str, value: str) -> bool:
    """Is `value`, held by a field/option/variable called `name`, a secret?"""
    if looks_empty(value):
        return False
    if normalise_name(name) in _VALUE_DECIDES:
        return credential_like(value)
    if ambiguous_name(name):
        return credential_like(value) or hex_key(value) or password_like(value)
    if not secret_name(name):
        return False
    if normalise_name(name) == "auth":
        # auth=ok, "auth": "required" are states; docker's "auth": "dXNlcjpwYXNz" is not
        return len(value) >= 8 and not (value.isalpha() and value.islower())
    return True


def setting_name(name: str) -> bool:
    """An app-setting or environment-variable name whose value is secret (DB_PASSWORD ...)."""
    low = name.lower()
    return secret_name(name) or any(word in low for word in SETTING_WORDS)
