"""Judging a value by its key AND its shape: the one decision every structured pass asks.

A key is split into words (`adminPasswordOrKey` -> admin password or key, `Redis__KeyPrefix` ->
redis key prefix, `KEYVAULT_NAME` -> keyvault name) and classed:
- pointer: its last word says the value only names or describes a secret (`...Name`, `...Type`,
  `...Uri`, `...Prefix`, `...Algorithm`, `...Id`, `...Thumbprint`, `...Hash`): never secret;
- strong: a word says the value IS a secret (password, pass, pwd, secret, token, credential,
  passphrase, api key, private key, connection string, signature, SAS, `secureValue`,
  `protectedSettings`): secret unless the value is plainly none (see `innocent_value`);
- weak: key, auth, signing, cert, access, master, pat ...: secret only when the value has the
  shape of a credential (random-looking, long, mixed), never an enum-like word (`RS256`,
  `ManagedIdentity`, `files`) or an identifier.
Values that are plainly not secrets, whatever the key: booleans, numbers, masks other tools
printed (`[key hidden]`, `***`), placeholders, variable and Key Vault references
(`@Microsoft.KeyVault(SecretUri=...)`), paths and plain URLs, dates.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from core.safety.secret_names import (
    NOT_SECRET_NAMES,
    credential_like,
    hex_key,
    looks_empty,
    normalise_name,
    password_like,
)

_SPLIT_RE: Final = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
#: Last words that make the value a pointer to (or a description of) a secret, not the secret.
POINTER_WORDS: Final = frozenset({
    "name", "names", "type", "types", "mode", "id", "ids", "uri", "uris", "url", "urls",
    "endpoint", "endpoints", "path", "paths", "file", "files", "dir", "directory", "folder",
    "prefix", "suffix", "algorithm", "algorithms", "alg", "algo", "length", "size", "version",
    "enabled", "enable", "disabled", "expiry", "expires", "expiration", "issuer", "audience",
    "scope", "scopes", "vault", "kind", "format", "provider", "strategy", "header", "headers",
    "count", "ttl", "timeout", "region", "location", "policy", "rotation", "created",
    "updated", "reference", "ref", "label", "labels", "tag", "tags", "hint", "hash",
    "thumbprint", "fingerprint", "checksum", "digest", "integrity", "etag", "source", "method",
    "required", "field", "fields", "variable", "var", "template", "lifetime", "age", "hours",
    "days", "minutes", "seconds", "duration", "interval", "level", "status", "state",
    "identifier", "owner", "user", "username", "email", "host", "hostname", "port", "server",
    "schema", "usage", "store", "storage", "date", "time", "timestamp", "uuid", "guid",
    "description", "display", "title", "mount", "env", "sha", "sha1", "sha256", "sha512",
    "md5", "crc", "crc32", "exists", "present", "set", "min", "max", "pattern",
    "regex", "rule", "rules", "class", "identity", "principal", "subject", "role", "roles",
    "permission", "permissions", "output", "input", "response", "request", "service",
})
#: Words (or parts of a single word) that make the value a secret.
_STRONG_PARTS: Final = ("password", "passwd", "passphrase", "passcode", "secret", "credential",
                        "apikey", "privatekey", "secretkey", "connectionstring", "connstr",
                        "sastoken", "samlresponse", "samlassertion", "assertion", "bearertoken",
                        "accesstoken", "refreshtoken", "idtoken", "authtoken", "sessiontoken",
                        "securetoken", "clientsecret", "accountkey", "sharedaccesskey",
                        "storagekey", "masterkey", "encryptionkey", "signingkey")
_STRONG_WORDS: Final = frozenset({
    "pass", "pwd", "pw", "token", "tokens", "creds", "psk", "sas", "sig", "signature",
    "cookie", "cookies", "jwt", "bearer", "otp", "pin", "passkey",
})
_WEAK_WORDS: Final = frozenset({
    "key", "keys", "auth", "signing", "cert", "certificate", "access", "master", "api", "pat",
    "private", "hmac", "session", "license", "code", "shared", "primary", "secondary", "art",
    "subscription", "instrumentation",
})
#: Words that, next to another, make a whole object secret (ARM and ACI spellings).
_SECURE_PAIRS: Final = (("secure", ("value", "string", "object", "settings", "parameters")),
                        ("protected", ("settings", "parameters")))
#: Masks other tools print where a value was: `AccountKey=[key hidden]`, `<hidden>`.
_MASK_RE: Final = re.compile(
    r"^(?:\[[a-z ]{0,20}(?:hidden|redacted|masked|removed|secret|sensitive|omitted)[a-z ]{0,20}\]"
    r"|<[a-z ]{0,20}(?:hidden|redacted|masked|secret|sensitive|password|key|token)[a-z -]{0,20}>"
    r"|\*{3,}|x{6,}|X{6,}|•+|\*?SENSITIVE\*DATA\*DELETED\*?|[|>](?:[+-]?[0-9]?|[0-9][+-]))$",
    re.IGNORECASE)
_REFERENCE_RE: Final = re.compile(
    r"^(?:@Microsoft\.KeyVault\(|\[[A-Za-z]{2,30}\(|\$\(|\$\{|\{\{|%[A-Za-z_][A-Za-z0-9_]*%$"
    r"|\$[A-Za-z_]"
    r"|secretref:|keyvaultref:|kv://|vault:|ref\+|env:|file:|secretRef|valueFrom)",
    re.IGNORECASE)
_VAULT_URL_RE: Final = re.compile(
    r"^https://[a-z0-9-]{1,63}\.(?:vault\.azure\.net|vault\.azure\.cn|vault\.usgovcloudapi\.net"
    r"|managedhsm\.azure\.net)(?::443)?/(?:secrets|keys|certificates)/[A-Za-z0-9-]{1,127}"
    r"(?:/[0-9a-f]{32})?/?$", re.IGNORECASE)
#: Public key material: SSH public keys (with or without their type word) and certificates.
_PUBLIC_PREFIXES: Final = ("ssh-", "ecdsa-sha2-", "sk-ssh-", "AAAAB3NzaC1", "AAAAC3NzaC1",
                           "AAAAE2VjZHNh", "-----BEGIN CERTIFICATE", "-----BEGIN PUBLIC KEY",
                           "-----BEGIN SSH2 PUBLIC KEY")
_GUID_RE: Final = re.compile(
    r"^\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?$")
_DATE_RE: Final = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9:.+\-Z]{0,30})?$")
#: Enum-like words: `ManagedIdentity`, `RS256`, `files`, `Standard_LRS`, `AES-256-GCM`.
#: `20 bytes`, `1.2 KiB`: a size, as `kubectl describe secret|configmap` prints for each key.
_SIZE_RE: Final = re.compile(r"^[0-9]{1,12}(?:\.[0-9]{1,3})? ?(?:bytes?|B|[KMGT]i?B)$")
#: A setting's choice: one lowercase word, maybe hyphenated (`keyvault`, `file`, `azure-kv`).
_SETTING_WORD_RE: Final = re.compile(r"[a-z]{2,24}(?:[-_.][a-z]{2,24}){0,2}")
#: Last words of a key that chooses where or how secrets are kept (its value is that choice).
_SETTING_WORDS: Final = frozenset({
    "backend", "backends", "store", "stores", "storage", "source", "sources", "engine",
    "manager", "method", "methods", "policy", "handler", "driver", "location", "cache",
    "rotation", "loader", "resolver", "plugin", "service", "mechanism", "scheme"})
_ENUM_RE: Final = re.compile(r"^[A-Za-z][A-Za-z]{0,40}[0-9]{0,4}$"
                             r"|^[A-Za-z]{1,20}(?:[_ .-][A-Za-z0-9]{1,20}){1,3}$")


#: NOT_SECRET_NAMES without separators (`page_token`, `next-token`, `SkipToken`).
_NOT_SECRET_JOINED: Final = frozenset(n.replace("_", "").replace("-", "").lstrip("$")
                                      for n in NOT_SECRET_NAMES)


def not_secret_name(name: str) -> bool:
    """Names that look secret and are not: pagination and continuation tokens, token counts."""
    return "".join(name_words(name)) in _NOT_SECRET_JOINED


@lru_cache(maxsize=4096)
def name_words(name: str) -> tuple[str, ...]:
    """`adminPasswordOrKey` -> (admin, password, or, key); `X-JFrog-Art-Api` -> (x, j, ...)."""
    return tuple(w.lower() for w in _SPLIT_RE.split(name.strip("\"'$@ ")) if w)


@lru_cache(maxsize=4096)
def name_class(name: str) -> str | None:
    """'pointer', 'strong', 'weak' or None for a field, variable, option or header name."""
    words = name_words(name)
    if not words or normalise_name(name) in NOT_SECRET_NAMES or words[0] == "existing" or (
            "".join(words) in _NOT_SECRET_JOINED):
        return None
    if words[-1] in POINTER_WORDS and not (words[-1] in ("response", "request")
                                           and "saml" in words):
        return "pointer"
    joined = "".join(words)
    if "public" in words or "pub" in words or words in (("key", "value"), ("key", "values")):
        return None  # public key material; App Configuration's key-values
    if any(w in ("cert", "certificate", "certificates", "certs") for w in words) and not any(
            w in ("private", "password", "pfx", "pkcs12", "secret", "key") for w in words):
        return None  # a certificate is public; its private key and password are not
    for first, seconds in _SECURE_PAIRS:
        if first in words and any(s in words for s in seconds):
            return "strong"
    if any(part in joined for part in _STRONG_PARTS) or any(w in _STRONG_WORDS for w in words):
        return "strong"
    if any(_glued(w) for w in words):
        return "weak" if words[-1].endswith("auth") else "strong"
    if any(w in _WEAK_WORDS for w in words):
        return "weak"
    return None


#: Words ending in a secret word glued on (`requirepass`, `masterauth`, `bindpw`, `rootpw`,
#: `rpcauth`), as Redis, OpenLDAP and daemons spell their settings; not `bypass` or `oauth`.
_GLUED_ENDINGS: Final = ("pass", "passwd", "pwd", "pw", "auth")
_NOT_GLUED: Final = frozenset({"bypass", "compass", "nopass", "overpass", "trespass", "surpass",
                               "encompass", "oauth", "noauth", "preauth", "reauth", "unauth",
                               "multipass", "firstpass", "underpass", "impass"})


def _glued(word: str) -> bool:
    return (len(word) > 5 and word.endswith(_GLUED_ENDINGS) and word not in _NOT_GLUED
            and not word.endswith(("ypass", "mpass")))


#: Algorithm and scheme names (`scram-sha-256`, `aes-256-gcm`, `hmac_sha512`): settings that
#: say how a secret is made, under names such as `password_encryption`.
_ALGORITHM_PART_RE: Final = re.compile(
    r"^(?:sha|sha-?[0-9]{1,3}|sha[0-9]{1,3}|md[45]|aes|rsa|hmac|scram|pbkdf2|bcrypt|scrypt|argon2"
    r"|argon2id|argon2i|des|3des|gcm|cbc|ctr|ecb|ecdsa|ed25519|ed448|ecdh|chacha20|poly1305"
    r"|blake2b|blake2s|crypt|plain|ntlm|ntlmv2|kerberos|gssapi|oauth|oauth2|ldap|pkcs[0-9]{1,2}"
    r"|x25519|p256|p384|p521|hs256|hs384|hs512|rs256|rs384|rs512|es256|es384|ps256|[0-9]{1,4})$")


_ALGORITHM_SHAPE_RE: Final = re.compile(r"[a-z0-9]{1,12}(?:[-_][a-z0-9]{1,12}){0,4}")
_PART_SPLIT_RE: Final = re.compile(r"[-_]")


def _algorithm(value: str) -> bool:
    """`scram-sha-256`, `aes-256-gcm`, `hmac_sha512`: every part an algorithm word or a size."""
    if len(value) > 40 or not _ALGORITHM_SHAPE_RE.fullmatch(value):
        return False
    parts = _PART_SPLIT_RE.split(value)
    return any(not p.isdigit() for p in parts) and all(_ALGORITHM_PART_RE.match(p)
                                                       for p in parts)


#: nsswitch.conf sources (`passwd: files systemd`): where a database is looked up.
_NSS_SOURCES: Final = frozenset({"files", "systemd", "dns", "compat", "nis", "nisplus", "ldap",
                                 "sss", "winbind", "db", "myhostname", "mymachines", "resolve",
                                 "hesiod", "mdns4_minimal", "mdns4", "mdns", "usrfiles",
                                 "altfiles", "cache", "wins", "extrausers"})


def innocent_value(value: str) -> bool:
    """A value that is plainly no secret, whatever its key says."""
    v = value.strip().strip("\"'")
    if not v or looks_empty(v) or _MASK_RE.match(v) or _REFERENCE_RE.match(v):
        return True
    if _algorithm(v):
        return True
    if v in _NSS_SOURCES or (" " in v and all(
            w in _NSS_SOURCES or (w.startswith("[") and w.endswith("]")) for w in v.split())):
        return True
    if "[REDACTED:" in v or _VAULT_URL_RE.match(v) or _DATE_RE.match(v) or v == "~":
        return True
    if v.startswith(_PUBLIC_PREFIXES):
        return True  # SSH public keys, certificates
    if v.lower() in ("true", "false", "yes", "no", "on", "off", "none", "null", "enabled",
                     "disabled", "required", "optional", "default"):
        return True
    if v.startswith(("/", "./", "~/")) and " " not in v and "=" not in v:
        return True  # a path
    if v.startswith(("http://", "https://")) and not any(c in v for c in "@?#"):
        return True  # a plain URL names a place, not a credential
    if _SIZE_RE.match(v):
        return True  # `kubectl describe secret`: `password:  20 bytes` is the value's size
    return bool(re.fullmatch(r"[0-9]{1,10}", v))


def setting_under_secret_word(name: str, value: str) -> bool:
    """`secret_backend = keyvault`, `token_store = file`: the secret word only qualifies the key.

    When the key's last word says it chooses where or how secrets are kept (`backend`, `store`,
    `engine`, `method` …), the key names a setting about secrets and a plain lowercase word is
    that setting's choice. Any other last word (`DB_PASSWORD_PROD`, `redis_pass_primary`) still
    holds the secret itself. Judged by the value's shape too, so `secret_backend = Zq8!x...` is
    still removed.
    """
    words = name_words(name)
    if not words or words[-1] not in _SETTING_WORDS:
        return False
    v = value.strip().strip("\"'")
    return bool(_SETTING_WORD_RE.fullmatch(v))


def enum_like(value: str) -> bool:
    """`ManagedIdentity`, `RS256`, `files`, `Standard_LRS`: a setting's word, not a credential."""
    return bool(_ENUM_RE.match(value.strip().strip("\"'")))


def weak_secret_shape(value: str) -> bool:
    """For a weak key: does the value look like a credential rather than a word or an id?"""
    v = value.strip().strip("\"'")
    if _GUID_RE.match(v) or _ENUM_RE.match(v):
        return False
    return credential_like(v) or hex_key(v) or password_like(v) or bool(
        re.fullmatch(r"[A-Za-z0-9+/]{20,}={0,2}", v) and any(c.isdigit() for c in v))


def is_secret(name: str, value: str) -> bool:
    """Is `value`, held by a field/variable/option/header called `name`, a secret?"""
    cls = name_class(name)
    if cls is None or cls == "pointer" or innocent_value(value):
        return False
    if normalise_name(name) in ("sessiontoken", "session_token", "x-ms-session-token"):
        return credential_like(value)  # Cosmos DB's is a log position (0:-1#12345)
    if cls == "strong":
        return not setting_under_secret_word(name, value)
    return weak_secret_shape(value)  # rejects enum-like words already
