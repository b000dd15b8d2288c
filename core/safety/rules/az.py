"""Tier 2: the Azure CLI. A read is SAFE only when it is known to return no secret.

The command path is the run of plain words right after `az`; an option before it (`az --debug
network ...`) makes the command RISKY instead of guessing where the path starts. The path must be
one of `az_reads.CLEAN_READS` and every option one of its selectors; every other read is RISKY
(`T2.az_unlisted_read`), because word lists kept missing reads that print keys. Azure CLI loads
any argument value that starts with `@` from a file, so such values are RISKY too. No shell is
involved, so `*`, `?` and brackets in values (`--local 10.0.0.4:*`, JMESPath) are only text.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

from core.safety.rules.az_reads import (
    ALIASES,
    CLEAN_READS,
    CLEAN_RESOURCE_TYPES,
    FLAG_OPTIONS,
    GROUP_SHORT_OPTIONS,
    OUTPUT_FORMATS,
    SHORT_OPTIONS,
    VALUE_OPTIONS,
    resource_type_of,
)
from core.safety.rules.base import Context, risky
from core.safety.rules.vm_probe import vm_probe_problem
from core.safety.verdict import Verdict, make_verdict

_PATH_WORD_RE: Final = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_READ_VERBS: Final = frozenset({"list", "show", "get", "exists", "version", "query"})
_READ_PREFIXES: Final = ("list-", "show-", "get-", "test-", "check-", "run-")
#: Parts of command-path words (split on '-') that mark secret-returning groups or verbs; only
#: used to explain why an unlisted read is RISKY.
_SECRET_PARTS: Final = frozenset({
    "key", "keys", "secret", "secrets", "credential", "credentials", "creds", "sas", "password",
    "passwords", "token", "tokens", "publishing", "appsettings", "auth", "connstr", "kubeconfig",
    "sig", "signature", "callback", "connection-string",
})
#: Words inside resource IDs and values that reach secret-returning ARM endpoints.
_SECRET_ID_WORDS: Final = ("listkeys", "listkey", "appsettings", "connectionstrings",
                           "publishingcredentials", "listsecrets", "listcredential",
                           "regeneratekey", "listconnectionstrings", "listaccountsas",
                           "listservicesas", "/secrets/", "/config/", "getsecrets",
                           "listcallbackurl", "userdata", "user-data", "sharedkey",
                           "accessprofiles", "authorizationrules")
_MUTATING: Final = frozenset({
    "create", "update", "delete", "set", "start", "stop", "restart", "deallocate", "add",
    "remove", "reset", "purge", "recover", "import", "export", "upload", "download", "invoke",
    "deploy", "assign", "attach", "detach", "enable", "disable", "regenerate", "renew",
    "rotate", "approve", "reject", "scale", "swap", "sync", "apply", "redeploy", "reimage",
    "resize", "capture", "generalize", "convert", "move", "restore", "backup", "copy", "login",
    "logout", "install", "uninstall", "upgrade", "grant-access", "revoke-access", "clear",
    "unset", "reapply", "simulate-eviction", "perform-maintenance", "cancel", "abort", "wait",
    "rename", "lock", "unlock", "tag", "untag", "batch", "ssh", "exec", "connect", "tunnel",
    "configure", "run",
})
#: Read-looking verbs that change state: `storage message get` dequeues what it returns.
_STATEFUL_READS: Final = (("message", "get"),)


def _az_read(argv: tuple[str, ...], what: str) -> Verdict:
    return make_verdict("T2.az_read", f"az {what}: a read on the list of reads known to return "
                        "no secrets, with selector options only.", argv)


_SECRET_SUBSTRINGS: Final = ("connection-string", "connectionstring", "app-settings",
                             "device-config-script", "boot-log", "publish-profile", "cd-url",
                             "msbot", "twin")
#: Unknown options named like these reveal secrets or carry them; named for a clear message.
_REVEAL_MARKERS: Final = ("show-", "include-", "with-", "reveal", "expose", "secure", "msbot")
_SECRET_ARG_MARKERS: Final = ("password", "secret", "sas-token", "account-key", "token",
                              "connection-string", "access-key", "shared-key")


def _secret_word(path: list[str]) -> str | None:
    for word in path:
        if (word in _SECRET_PARTS or any(p in _SECRET_PARTS for p in word.split("-"))
                or any(s in word for s in _SECRET_SUBSTRINGS)):
            return word
    return None


def _unknown_option(lname: str, path: list[str], argv: tuple[str, ...]) -> Verdict:
    if lname.startswith("--") and any(m in lname for m in _REVEAL_MARKERS):
        return risky("T2.az_secret_read", argv, f"az option {lname[:40]} can make the read "
                     "return secret values.")
    if any(m in lname for m in _SECRET_ARG_MARKERS) or lname in ("--key", "--value", "-p"):
        return risky("T2.az_secret_argument", argv, f"az option {lname[:40]} puts a key, SAS "
                     "token, password or connection string on the command line.")
    return risky("T2.az_unknown_option", argv, f"az option {lname[:40]!r} is not one of the "
                 f"selectors allowed on 'az {' '.join(path)}' (an option can make a read "
                 "return secrets); an engineer must approve it.")


def _unlisted(path: list[str], argv: tuple[str, ...]) -> Verdict:
    verb = path[-1]
    shown = " ".join(path)
    secret = _secret_word(path)
    if secret is not None:
        return risky("T2.az_secret_read", argv, f"az {shown}: '{secret}' returns or handles "
                     "keys, secrets, SAS tokens, connection strings or credentials.")
    if verb in _MUTATING or any(len(path) >= 2 and (path[-2], verb) == pair
                                for pair in _STATEFUL_READS):
        return risky("T2.az_mutating_verb", argv, f"Tier 2: Azure verb '{verb}' changes state "
                     "(or moves data); an engineer must approve it.")
    if len(path) >= 2 and (verb in _READ_VERBS or verb.startswith(_READ_PREFIXES)):
        return risky("T2.az_unlisted_read", argv, f"az {shown} is not on the list of reads "
                     "known to return no secrets; an engineer must approve it (its output is "
                     "still redacted).")
    return risky("T2.az_unknown_verb", argv, f"Tier 2: Azure verb '{verb}' is not a known read "
                 "verb.")


def _option_hint(opts: list[str], path: list[str], argv: tuple[str, ...]) -> Verdict | None:
    """For a command that is RISKY anyway, the rule that best says why an option matters."""
    for word in opts:
        name, eq, value = word.partition("=")
        if word.startswith("@") or value.startswith("@"):
            return risky("T2.az_file_argument", argv, f"az loads {word[:60]!r} from a local "
                         "file (the @file syntax); an engineer must approve.")
        lname = name.lower()
        if not lname.startswith("-") or _option_name(word, path) is not None:
            continue
        if len(lname) >= 5 and "--debug".startswith(lname):
            return risky("T2.az_debug", argv, "az --debug prints raw HTTP traffic.")
        if any(m in lname for m in _SECRET_ARG_MARKERS) or lname in ("--show-values",
                                                                        "--show-secrets"):
            return _unknown_option(lname, path, argv)
    return None


def _option_name(word: str, path: list[str]) -> str | None:
    """The canonical name of an allowlisted option, or None."""
    name = word.partition("=")[0]
    if name.startswith("--"):
        name = ALIASES.get(name, name)
        return name if name in FLAG_OPTIONS or name in VALUE_OPTIONS else None
    if name in SHORT_OPTIONS:
        return SHORT_OPTIONS[name]
    for (group, short), canon in GROUP_SHORT_OPTIONS.items():
        if short == name and group in path:
            return canon
    return None


def _check_value(name: str, value: str, path: list[str], argv: tuple[str, ...]) -> (
        Verdict | None):
    if value.startswith("@"):
        return risky("T2.az_file_argument", argv, f"az loads the value {value[:60]!r} from a "
                     "local file (the @file syntax); an engineer must approve.")
    low = unquote(unquote(value)).lower()
    if any(s in low for s in _SECRET_ID_WORDS):
        return risky("T2.az_secret_read", argv, f"az argument {value[:60]!r} names an endpoint "
                     "that returns keys, secrets or settings.")
    if name == "--output" and value not in OUTPUT_FORMATS:
        return risky("T1.bad_value", argv, f"az --output {value[:20]!r} is not an output "
                     "format.")
    if path[:2] == ["resource", "show"] and name in ("--ids", "--resource-type"):
        kind = (resource_type_of(unquote(value)) if name == "--ids" else
                (value.lower() if "/" in value else None))
        if kind not in CLEAN_RESOURCE_TYPES:
            return risky("T2.az_secret_read", argv, f"az resource show on {value[:80]!r}: "
                         "only resource types known to return no secrets are read without "
                         "approval.")
    return None


def _check_options(opts: list[str], path: list[str], argv: tuple[str, ...]) -> Verdict | None:
    index = 0
    seen: set[str] = set()
    while index < len(opts):
        word = opts[index]
        index += 1
        if not word.startswith("-") or word == "-":
            return risky("T1.bad_value", argv, f"az argument {word[:60]!r} belongs to no "
                         "option.")
        name = _option_name(word, path)
        if name is None:
            lname = word.partition("=")[0].lower()
            if len(lname) >= 5 and "--debug".startswith(lname):
                return risky("T2.az_debug", argv, "az --debug prints raw HTTP traffic; drop "
                             "--debug or ask for approval.")
            return _unknown_option(lname, path, argv)
        seen.add(name)
        if name in FLAG_OPTIONS:
            if "=" in word:
                return risky("T1.bad_value", argv, f"az {name} takes no value.")
            continue
        values: list[str] = []
        if "=" in word:
            values.append(word.partition("=")[2])
        elif index < len(opts):
            values.append(opts[index])
            index += 1
        else:
            return risky("T1.bad_value", argv, f"az {name} needs a value.")
        if name == "--ids":  # --ids takes several space-separated ids
            while index < len(opts) and not opts[index].startswith("-"):
                values.append(opts[index])
                index += 1
        for value in values:
            bad = _check_value(name, value, path, argv)
            if bad is not None:
                return bad
    if path[:2] == ["resource", "show"] and "--ids" not in seen and (
            "--resource-type" not in seen or "--namespace" in seen or "--parent" in seen):
        return risky("T2.az_secret_read", argv, "az resource show reads any resource: give "
                     "--ids or --resource-type of a network or compute resource.")
    return None


def classify_az(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    if args in (["--version"], ["--help"], ["-h"], ["version"]):
        return _az_read(argv, args[0])
    if not args:
        return risky("T2.az_bad_path", argv, "az with no command.")
    if args[0].startswith("-"):
        return risky("T2.az_leading_option", argv, f"az option {args[0]!r} comes before the "
                     "command group; put the command first so the gate can see the verb.")
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
    if path == ["vm", "run-command", "invoke"]:
        return _vm_probe(argv)
    if tuple(path) not in CLEAN_READS:
        return _option_hint(opts, path, argv) or _unlisted(path, argv)
    bad = _check_options(opts, path, argv)
    if bad:
        return bad
    return _az_read(argv, " ".join(path))


__all__ = ["classify_az", "Context"]


def _vm_probe(argv: tuple[str, ...]) -> Verdict:
    """A read-only probe inside a VM is approvable; any other script never is (Tier 0)."""
    problem = vm_probe_problem(list(argv[1:]))
    if problem is not None:
        return make_verdict("T0.az_remote_exec", f"Refused (T0.az_remote_exec): run-command "
                            f"runs code on the VM; only read-only probes may ({problem}). "
                            "This is never allowed, even with approval.", argv)
    target = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-n", "--name")), "")
    where = f"VM {target}" if target else "the VM"
    return risky("T2.az_vm_probe", argv, f"Runs read-only probes inside {where} (az vm "
                 "run-command invoke): nothing else can run this way, but it executes on a "
                 "production machine, so a second engineer must approve it.")
