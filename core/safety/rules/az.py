"""Tier 2: the Azure CLI. The verb decides, except for reads that return secrets.

The command path is the run of plain words right after `az`; an option before it (`az --debug
network ...`) makes the command RISKY instead of guessing where the path starts. Azure CLI loads
any argument value that starts with `@` from a file, so such values are RISKY too.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

from core.safety.rules.base import Context, risky
from core.safety.verdict import Verdict, make_verdict

_PATH_WORD_RE: Final = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_READ_VERBS: Final = frozenset({"list", "show", "get", "exists", "version"})
_READ_PREFIXES: Final = ("list-", "show-", "get-", "test-")
#: Parts of command-path words (split on '-') that mark secret-returning groups or verbs.
_SECRET_PARTS: Final = frozenset({
    "key", "keys", "secret", "secrets", "credential", "credentials", "creds", "sas", "password",
    "passwords", "token", "tokens", "publishing", "appsettings", "auth", "connstr", "kubeconfig",
    "sig", "signature", "callback",
})
_SECRET_SUBSTRINGS: Final = ("connection-string", "connectionstring", "app-settings",
                             "device-config-script", "boot-log")
#: (group words, word) pairs whose reads return keys although no word says so: IoT Hub and DPS
#: shared access policies carry primaryKey/secondaryKey, App Configuration key-values are the
#: application's configuration (connection strings included).
#: IoT Hub device and module identities carry their symmetric keys; App Service hybrid
#: connections their sendKeyValue; a VPN client's URL and a connected registry's settings are
#: SAS- or password-bearing.
_SECRET_PAIRS: Final = (("iot", "policy"), ("dps", "policy"), ("appconfig", "kv"),
                        ("appconfig", "feature"), ("webapp", "config"), ("functionapp", "config"),
                        ("iot", "device-identity"), ("iot", "module-identity"),
                        ("webapp", "hybrid-connection"), ("functionapp", "hybrid-connection"),
                        ("appservice", "hybrid-connection"), ("vpn-client", "show-url"),
                        ("connected-registry", "get-settings"))
#: Read-looking verbs that change state: `storage message get` dequeues the messages it returns
#: (they turn invisible and count towards the poison-queue limit).
_STATEFUL_READS: Final = (("message", "get"),)
#: Words inside resource IDs and action names that reach secret-returning ARM endpoints
#: (`az resource show --ids .../config/appsettings`, `invoke-action --action listKeys`).
_SECRET_ID_WORDS: Final = ("listkeys", "listkey", "appsettings", "connectionstrings",
                           "publishingcredentials", "listsecrets", "listcredential",
                           "regeneratekey", "listconnectionstrings", "listaccountsas",
                           "listservicesas", "/secrets/", "/config/", "getsecrets",
                           "listcallbackurl", "userdata", "user-data")
_MUTATING: Final = frozenset({
    "create", "update", "delete", "set", "start", "stop", "restart", "deallocate", "add",
    "remove", "reset", "purge", "recover", "import", "export", "upload", "download", "invoke",
    "run", "deploy", "assign", "attach", "detach", "enable", "disable", "regenerate", "renew",
    "rotate", "approve", "reject", "scale", "swap", "sync", "apply", "redeploy", "reimage",
    "resize", "capture", "generalize", "convert", "move", "restore", "backup", "copy", "login",
    "logout", "install", "uninstall", "upgrade", "grant-access", "revoke-access", "clear",
    "unset", "reapply", "simulate-eviction", "perform-maintenance", "cancel", "abort", "wait",
    "rename", "lock", "unlock", "tag", "untag", "batch", "ssh", "exec", "connect", "tunnel",
})
_FILE_OPTION_MARKERS: Final = ("file", "output-dir", "local-path", "download", "folder",
                               "directory", "template", "local-dir")
_SECRET_OPTION_MARKERS: Final = ("password", "secret", "sas-token", "account-key",
                                 "connection-string", "token", "access-key", "shared-key")
_SECRET_OPTION_NAMES: Final = frozenset({"--key", "-p", "--value"})
_SECRET_VALUE_OPTIONS: Final = ("--show-values", "--show-secrets", "--include-secrets",
                                "--with-secrets", "--reveal", "--show-keys",
                                "--include-keys", "--expose", "--include-full-endpoint-url")


def _az_read(argv: tuple[str, ...], what: str) -> Verdict:
    return make_verdict("T2.az_read", f"az {what}: a read-only verb on a group that returns no "
                        "secrets.", argv)


def _secret_path(path: list[str]) -> str | None:
    for group, word in _SECRET_PAIRS:
        if group in path and word in path[path.index(group) + 1:] and not (
                word == "config" and not _config_secret(path)):
            return word
    for word in path:
        if any(s in word for s in _SECRET_SUBSTRINGS):
            return word
        if any(part in _SECRET_PARTS for part in word.split("-")):
            return word
    return None


def _config_secret(path: list[str]) -> bool:
    """`webapp config` reads that return settings values (not `config show`, which does not)."""
    after = path[path.index("config") + 1:] if "config" in path else []
    return bool(after) and after[0] in ("container", "backup", "storage-account")


def _check_options(opts: list[str], argv: tuple[str, ...]) -> Verdict | None:
    for word in opts:
        low = unquote(word).lower()
        if any(s in low for s in _SECRET_ID_WORDS):
            return risky("T2.az_secret_read", argv, f"az argument {word[:60]!r} names an "
                         "endpoint that returns keys, secrets or settings.")
        name, eq, inline = word.partition("=")
        value = inline if eq else ("" if word.startswith("-") else word)
        if value.startswith("@"):
            return risky("T2.az_file_argument", argv, f"az loads the value {value[:60]!r} from "
                         "a local file (the @file syntax); an engineer must approve.")
        if not word.startswith("-"):
            continue
        lname = name.lower()
        if len(lname) >= 5 and "--debug".startswith(lname):
            return risky("T2.az_debug", argv, "az --debug prints raw HTTP traffic; drop "
                         "--debug or ask for approval.")
        if lname in _SECRET_VALUE_OPTIONS:
            return risky("T2.az_secret_read", argv, f"az {name} reveals secret values.")
        if any(m in lname for m in _FILE_OPTION_MARKERS) and lname != "--profile":
            return risky("T2.az_file_argument", argv, f"az option {name} names a local file "
                         "or directory.")
        if lname in _SECRET_OPTION_NAMES or any(m in lname for m in _SECRET_OPTION_MARKERS):
            return risky("T2.az_secret_argument", argv, f"az option {name} puts a key, SAS "
                         "token, password or connection string on the command line.")
    return None


def classify_az(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    if args in (["--version"], ["--help"], ["-h"], ["version"]):
        return _az_read(argv, args[0])
    if not args:
        return risky("T2.az_bad_path", argv, "az with no command.")
    if args[0].startswith("-"):
        return risky("T2.az_leading_option", argv, f"az option {args[0]!r} comes before the "
                     "command group; put the command first (az network vnet list --debug is "
                     "still RISKY) so the gate can see the verb.")
    path: list[str] = []
    for word in args:
        if word.startswith("-"):
            break
        path.append(word)
    opts = args[len(path):]
    if not all(_PATH_WORD_RE.match(w) for w in path) or len(path) > 7:
        return risky("T2.az_bad_path", argv, f"az command path {' '.join(path)[:80]!r} is not "
                     "plain lowercase words.")
    if path[0] == "rest":
        return risky("T2.az_rest", argv, "az rest sends an arbitrary request to ARM or Graph "
                     "(any method, any body); an engineer must approve it.")
    secret = _secret_path(path)
    if secret is not None:
        return risky("T2.az_secret_read", argv, f"az {' '.join(path)}: '{secret}' returns or "
                     "handles keys, secrets, SAS tokens, connection strings or credentials.")
    verb = path[-1]
    if verb in _MUTATING or any(len(path) >= 2 and (path[-2], verb) == pair
                                for pair in _STATEFUL_READS):
        return risky("T2.az_mutating_verb", argv, f"Tier 2: Azure verb '{verb}' changes state "
                     "(or moves data); an engineer must approve it.")
    if len(path) < 2 or not (verb in _READ_VERBS or verb.startswith(_READ_PREFIXES)):
        return risky("T2.az_unknown_verb", argv, f"Tier 2: Azure verb '{verb}' is not a known "
                     "read verb (list, show, get, exists, test-*, show-*).")
    bad = _check_options(opts, argv)
    if bad:
        return bad
    return _az_read(argv, " ".join(path))


__all__ = ["classify_az", "Context"]
