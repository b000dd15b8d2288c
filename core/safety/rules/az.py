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

from core.safety.paths import resolve_under
from core.safety.rules.az_reads import (
    ALIASES,
    CLEAN_READS,
    CLEAN_RESOURCE_TYPES,
    FLAG_OPTIONS,
    GROUP_SHORT_OPTIONS,
    OUTPUT_FORMATS,
    PATH_ONLY_OPTIONS,
    REQUIRED_VALUES,
    SHORT_OPTIONS,
    VALUE_OPTIONS,
    approvable_write,
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
    return risky("T2.az_unknown_option", argv, f"az option {lname[:40]!r} is not one of the "
                 f"selectors allowed on 'az {' '.join(path)}' (an option can make a read "
                 "return secrets); an engineer must approve it.")


def _never(rule: str, argv: tuple[str, ...], why: str) -> Verdict:
    return make_verdict(rule, f"Ghost will not offer this for approval: {why}; ask the "
                        "engineer to run it themselves.", argv)


#: Verbs that mint or hand out a credential (a SAS token, a key).
_MINTING: Final = ("generate-sas", "generate-key", "create-sas", "get-sas", "keys renew",
                   "regenerate", "renew-key")
#: Top-level network resources: deleting one is not a remediation (its rules, routes, records
#: and the captures are).
_NETWORK_SUBRESOURCE_MIN: Final = 4


def _network_wipe(path: list[str], argv: tuple[str, ...]) -> Verdict | None:
    """az forms of a firewall wipe: deny-all NSG rules, black-holed default routes, deletes."""
    words = [w.lower() for w in argv]

    def value(*names: str) -> str:
        for index, word in enumerate(words[:-1]):
            if word.partition("=")[0] in names:
                return word.partition("=")[2] or words[index + 1]
        return ""

    shown = " ".join(path)
    if path[-1] == "delete" and path[0] == "network" and len(path) < _NETWORK_SUBRESOURCE_MIN:
        return _never("T0.az_not_approvable", argv, f"az {shown} deletes a whole network "
                      "resource (its rules, routes and records can be changed instead)")
    if path[:3] == ["network", "nsg", "rule"] and path[-1] in ("create", "update"):
        ports = value("--destination-port-ranges", "--destination-port-range")
        source = value("--source-address-prefixes", "--source-address-prefix")
        if value("--access") == "deny" and ports in ("*", "0-65535") and source in (
                "", "*", "any", "internet", "0.0.0.0/0"):
            return _never("T0.host_destruction", argv, "an NSG rule that denies every port "
                          "from everywhere cuts the resources off")
    if path[:3] == ["network", "route-table", "route"] and path[-1] in ("create", "update"):
        if value("--address-prefix") in ("0.0.0.0/0", "::/0") and value(
                "--next-hop-type") == "none":
            return _never("T0.host_destruction", argv, "a default route to None drops all "
                          "outbound traffic of the subnet")
    return None


def _mutating(verb: str) -> bool:
    """`add`, and every hyphenated verb that starts with a change (`add-record`, `set-record`,
    `remove-ip-config`), unless it reads (`show-`, `list-`, `run-` diagnostics)."""
    return verb in _MUTATING or (not verb.startswith(_READ_PREFIXES)
                                 and verb.split("-", 1)[0] in _MUTATING)


def _unlisted(path: list[str], argv: tuple[str, ...], ctx: Context) -> Verdict:
    verb = path[-1]
    shown = " ".join(path)
    secret = _secret_word(path)
    if any(m in " ".join(path) for m in _MINTING):
        return _never("T0.az_credentials", argv, f"az {shown} mints a credential (a SAS "
                      "token or a key)")
    if _mutating(verb) or any(len(path) >= 2 and (path[-2], verb) == pair
                              for pair in _STATEFUL_READS):
        if secret is None and approvable_write(tuple(path)):
            return _network_wipe(path, argv) or _approvable_write(path, argv, ctx)
        return _never("T0.az_not_approvable", argv, f"az {shown} changes state, and only "
                      "network resources, VM power, packet captures and their blobs are "
                      "offered for approval")
    if secret is not None:
        return risky("T2.az_secret_read", argv, f"az {shown}: '{secret}' returns or handles "
                     "keys, secrets, SAS tokens, connection strings or credentials.")
    if len(path) >= 2 and (verb in _READ_VERBS or verb.startswith(_READ_PREFIXES)):
        return risky("T2.az_unlisted_read", argv, f"az {shown} is not on the list of reads "
                     "known to return no secrets; an engineer must approve it (its output is "
                     "still redacted).")
    return _never("T0.az_not_approvable", argv, f"az {shown}: '{verb}' is not a verb the gate "
                  "knows")


def _approvable_write(path: list[str], argv: tuple[str, ...], ctx: Context) -> Verdict:
    shown = " ".join(path)
    for index, word in enumerate(argv):
        if word.partition("=")[0] in ("--file", "-f") and tuple(path[:2]) == ("storage",
                                                                             "blob"):
            value = word.partition("=")[2] or (argv[index + 1] if index + 1 < len(argv)
                                                else "")
            bad = _download_target(value, argv, ctx, approvable=True)
            if bad is not None:
                return bad
    return risky("T2.az_mutating_verb", argv, f"az {shown} changes state: an engineer must "
                 "approve it (Ghost offers only changes to network resources, VM power, packet "
                 "captures and their blobs).")


def _download_target(value: str, argv: tuple[str, ...], ctx: Context, *,
                     approvable: bool) -> Verdict | None:
    """Where `az storage blob download --file` writes: SAFE only inside Ghost's data dir."""
    low = value.lower()
    if low.startswith(("/dev/", "/etc/", "/proc/", "/sys/", "/boot/", "/usr/", "/bin/",
                       "/sbin/", "/lib", "/root/")) and value != "/dev/stdout":
        return _never("T0.protected_write", argv, f"the blob would be written to "
                      f"{value[:60]!r}, a system location")
    if ".." in value.split("/") or "//" in value:
        return _never("T0.protected_write", argv, f"the target {value[:60]!r} is spelled with "
                      "'..' or '//'")
    if approvable:
        return None
    if value in ("/dev/stdout", "-"):
        return None
    if ctx.data_dir is None or resolve_under(value, ctx.data_dir, ctx.cwd) is None:
        return risky("T1.path_outside_data_dir", argv, f"az storage blob download writes "
                     f"{value[:60]!r} outside Ghost's data directory; an engineer must "
                     "approve it.")
    return None


def _option_hint(opts: list[str], path: list[str], argv: tuple[str, ...]) -> Verdict | None:
    """For an unlisted read, the option that best says why it needs approval."""
    if path[-1] in _MUTATING:
        return None
    for word in opts:
        lname = word.partition("=")[0].lower()
        if len(lname) >= 5 and "--debug".startswith(lname):
            return risky("T2.az_debug", argv, "az --debug prints raw HTTP traffic.")
        if lname in ("--show-values", "--show-secrets") or (
                lname.startswith("--") and any(m in lname for m in _REVEAL_MARKERS)
                and _option_name(word, path) is None):
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


def _check_options(opts: list[str], path: list[str], argv: tuple[str, ...],
                   ctx: Context) -> Verdict | None:
    index = 0
    seen: set[str] = set()
    given: dict[str, str] = {}
    while index < len(opts):
        word = opts[index]
        index += 1
        if not word.startswith("-") or word == "-":
            return risky("T1.bad_value", argv, f"az argument {word[:60]!r} belongs to no "
                         "option.")
        name = _option_name(word, path)
        if name in PATH_ONLY_OPTIONS and tuple(path) != PATH_ONLY_OPTIONS[name]:
            name = None
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
            if name == "--file":
                bad = _download_target(value, argv, ctx, approvable=False)
                if bad is not None:
                    return bad
            given[name] = value
    required = REQUIRED_VALUES.get(tuple(path))
    if required is not None and given.get(required[0], "").lower() != required[1]:
        return risky("T2.az_secret_read", argv, f"az {' '.join(path)} without {required[0]} "
                     f"{required[1]} reads the storage account key first; add {required[0]} "
                     f"{required[1]} and it runs without approval.")
    if path[:2] == ["resource", "show"] and "--ids" not in seen and (
            "--resource-type" not in seen or "--namespace" in seen or "--parent" in seen):
        return risky("T2.az_secret_read", argv, "az resource show reads any resource: give "
                     "--ids or --resource-type of a network or compute resource.")
    return None


_SECRET_OPTION_RE: Final = re.compile(
    r"^--?(?:[a-z0-9-]*(?:password|passwd|secret|sas-token|account-key|connection-string|"
    r"access-key|shared-key|client-cert|certificate-password|pfx)[a-z0-9-]*|p|[a-z0-9-]*-key"
    r"|key|value|token|[a-z0-9-]*-token)(?:=|$)", re.IGNORECASE)
_NOT_SECRET_OPTIONS: Final = frozenset({"--skip-token", "--continuation-token", "--next-token",
                                        "--public-key", "--ssh-key-value", "--key-name",
                                        "--key-vault", "--partition-key", "--ssh-key-values",
                                        "--key-type", "--key-source", "--row-key"})
_SECRET_VALUE_RE: Final = re.compile(
    r"(?i)(?:accountkey|sharedaccesskey|sharedaccesssignature|password|pwd)=|[?&]sig=")
_REST_READ_METHODS: Final = frozenset({"get", "head"})
_LIST_ACTION_RE: Final = re.compile(r"(?i)/(?:list[a-z0-9]+|regenerate[a-z0-9]*|"
                                    r"get(?:secrets?|token|credentials?|keys?)[a-z0-9]*)"
                                    r"(?:[/?#]|$)")


def _secret_argument(args: list[str]) -> str | None:
    for index, word in enumerate(args):
        if word.startswith("-"):
            name = word.partition("=")[0].lower()
            value = word.partition("=")[2] or (args[index + 1] if index + 1 < len(args) else "")
            if name == "-p" and value.isdigit():
                continue  # `record-set srv add-record -p 1`: a priority or port, not a password
            if (_SECRET_OPTION_RE.match(name) and name not in _NOT_SECRET_OPTIONS
                    and not name.startswith(("--show-", "--include-", "--with-", "--reveal",
                                             "--expose", "--list-", "--no-"))):
                return name
        if _SECRET_VALUE_RE.search(word):
            return word[:30] + "…"
    return None


def _rest(args: list[str], argv: tuple[str, ...]) -> Verdict:
    method, url, body = "get", "", False
    for index, word in enumerate(args):
        name, eq, value = word.partition("=")
        if not eq and index + 1 < len(args):
            value = args[index + 1]
        if name in ("--method", "-m"):
            method = value.lower()
        elif name in ("--url", "--uri", "-u"):
            url = value
        elif name in ("--body", "-b"):
            body = True
    if method not in _REST_READ_METHODS or body:
        return _never("T0.az_rest_write", argv, f"az rest --method {method} sends a request "
                      "that changes state (a side door to run-command and every other write)")
    segments = {seg.lower() for seg in url.split("?")[0].split("/")}
    if _LIST_ACTION_RE.search(url) or "credential" in url.lower() or segments & {
            "secrets", "keys", "token", "tokens", "sharedkey", "password", "passwords",
            "publishxml", "accessprofiles"}:
        return _never("T0.az_credentials", argv, "az rest calls a list* or credential action, "
                      "which returns keys or credentials")
    return risky("T2.az_rest", argv, "az rest GET sends an arbitrary read to ARM or Graph; an "
                 "engineer must approve it.")


def classify_az(argv: tuple[str, ...], ctx: Context) -> Verdict:
    args = list(argv[1:])
    if args in (["--version"], ["--help"], ["-h"], ["version"]):
        return _az_read(argv, args[0])
    if not args:
        return risky("T2.az_unlisted_read", argv, "az with no command prints its help.")
    if args[0].startswith("-"):
        return _never("T0.az_not_approvable", argv, f"az option {args[0][:30]!r} comes before "
                      "the command group; put the command first so the gate can see the verb")
    path: list[str] = []
    for word in args:
        if word.startswith("-"):
            break
        path.append(word)
    opts = args[len(path):]
    if not all(_PATH_WORD_RE.match(w) for w in path) or len(path) > 7:
        return _never("T0.az_not_approvable", argv, f"az command path "
                      f"{' '.join(path)[:80]!r} is not plain lowercase words")
    if path == ["vm", "run-command", "invoke"]:
        return _vm_probe(argv)
    secret = _secret_argument(opts)
    if secret is not None:
        return _never("T0.az_secret_argument", argv, f"{secret} puts a password, key, SAS "
                      "token or connection string on the command line, where it would be "
                      "stored and shown")
    if any(w.startswith("@") or w.partition("=")[2].startswith("@") for w in opts):
        return _never("T0.az_not_approvable", argv, "an @file value is loaded from a local "
                      "file the gate cannot read; put the value on the command line")
    if path[0] == "rest":
        return _rest(opts, argv)
    if "federated-credential" in path:
        return _never("T0.az_credentials", argv, "federated credentials let an outside "
                      "identity sign in as this one")
    if path[:2] == ["resource", "invoke-action"]:
        return _never("T0.az_remote_exec", argv, "az resource invoke-action calls any ARM "
                      "action (runCommand, listKeys ...)")
    if tuple(path) not in CLEAN_READS:
        return _option_hint(opts, path, argv) or _unlisted(path, argv, ctx)
    bad = _check_options(opts, path, argv, ctx)
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
