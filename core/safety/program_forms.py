"""Forms of known programs that no approver is offered, found on the parsed argv.

The judge (`approvable.py`) asks `forbidden_form(program, args)` after the generic checks
(options that run programs, devices, protected write targets). Each family says which of its
forms run another program, read their orders from a file the gate cannot see, wipe the firewall
or the routes, change power or boot state, or read a credential store; every other form of a
known program stays approvable. Returns (rule id, what) or None.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

Hit = tuple[str, str] | None

_RUN: Final = "T0.runs_programs"
_FILE: Final = "T0.runs_programs"
_FIREWALL: Final = frozenset({"iptables", "ip6tables", "iptables-nft", "ip6tables-nft",
                              "iptables-legacy", "ip6tables-legacy"})
_POWER_UNIT_RE: Final = re.compile(
    r"(?:reboot|poweroff|halt|kexec|suspend|hibernate|hybrid-sleep|sleep|rescue|emergency|"
    r"shutdown|ctrl-alt-del|soft-reboot|final|exit)(?:\.target|\.service)?$|^(?:reboot|"
    r"poweroff|halt|kexec|suspend|hibernate|hybrid-sleep|rescue|emergency|default|isolate|"
    r"soft-reboot|suspend-then-hibernate)$")
#: Verbs that change what runs at boot or in every service: persistence, never approvable
#: (an investigation starts or restarts a unit; making it start at every boot is not a diagnosis).
_SYSTEMCTL_RUN: Final = frozenset({"edit", "link", "set-environment", "import-environment",
                                   "unset-environment", "set-default", "preset-all",
                                   "switch-root", "revert", "enable", "reenable", "preset",
                                   "add-wants", "add-requires", "unmask"})


def _sub(args: list[str]) -> tuple[str, list[str]]:
    """The first operand (a subcommand) and the words after it."""
    for index, word in enumerate(args):
        if not word.startswith("-"):
            return word, args[index + 1:]
    return "", []


_ENV: Final = "T0.credential_store"
_ENV_WHY: Final = ("prints the environment it was started with, and an environment holds "
                   "secrets (read the one setting you need with a command that prints no values)")
#: Go templates that print a container's whole record or its environment.
_WHOLE_TEMPLATE_RE: Final = re.compile(r"\{\{-?\s*(?:json\s+)?\.(?:Config)?\s*-?\}\}|env",
                                       re.IGNORECASE)


def _option_value(args: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the first option among `names` (`-f X`, `--format=X`, `-fX`)."""
    for index, word in enumerate(args):
        name, eq, value = word.partition("=")
        if name in names:
            if eq:
                return value
            return args[index + 1] if index + 1 < len(args) else ""
        for short in (n for n in names if len(n) == 2):
            if word.startswith(short) and len(word) > 2 and not word.startswith("--"):
                return word[2:]
    return None


def _systemctl(args: list[str]) -> Hit:
    verb, rest = _sub(args)
    low = [w.lower() for w in args if not w.startswith("-")]
    if verb == "show-environment":
        return _ENV, f"systemctl show-environment {_ENV_WHY}"
    if verb == "show":
        prop = _option_value(args, ("-p", "--property"))
        if prop is None or "environment" in prop.lower():
            return _ENV, ("systemctl show without --property (or with Environment) prints the "
                          "unit's Environment= settings, which hold secrets (ask for the "
                          "properties you need with -p, e.g. -p ActiveState,SubState)")
    if any(_POWER_UNIT_RE.search(w) for w in low):
        return "T0.power", "systemctl changing the host's power state, runlevel or boot target"
    if verb in _SYSTEMCTL_RUN:
        return "T0.privilege_escalation", (f"systemctl {verb} changes what runs at boot or in "
                                           "every service (persistence)")
    if verb in ("enable", "reenable", "start", "restart") and any("/" in w for w in rest):
        return "T0.privilege_escalation", "systemctl with a unit file path plants a service"
    if verb == "kill" and any(w in ("init.scope", "-.slice", "system.slice") for w in rest):
        return "T0.power", "systemctl kill of init or every system service"
    return None


def _kill(program: str, args: list[str]) -> Hit:
    ops = [w for w in args if not w.startswith("-")]
    if program in ("pkill", "killall") and (
            any(w in (".", ".*", "^", "", "'.*'", ".+") for w in ops)
            or (any(w in ("-u", "--uid", "--user", "-U", "--euid") for w in args)
                and any(w in ("root", "0") for w in ops) and len(ops) <= 1)):
        return "T0.power", f"'{program}' signalling every process (or every root process)"
    return None


def _match_options(args: list[str]) -> bool:
    """Does an iptables rule select traffic (source, port, interface, module ...)?"""
    control = {"-A", "--append", "-I", "--insert", "-R", "--replace", "-t", "--table", "-j",
               "--jump", "-w", "--wait", "-W", "--wait-interval", "-v", "--verbose", "-n",
               "--numeric", "-x", "--exact", "--line-numbers", "-4", "-6", "-g", "--goto",
               "--reject-with", "--log-prefix", "--log-level"}
    any_value = {"all", "0/0", "0.0.0.0/0", "::/0", "any", "anywhere", "0.0.0.0", "::"}
    selecting = False
    for index, word in enumerate(args):
        if word.startswith("-") and word not in control:
            value = args[index + 1].lower() if index + 1 < len(args) else ""
            if word == "--comment" or (word in ("-m", "--match") and value == "comment"):
                continue  # a comment selects nothing
            if word in ("-p", "--protocol", "-s", "--source", "-d", "--destination",
                        "--src", "--dst") and value in any_value:
                continue
            selecting = True
    return selecting


def _firewall(program: str, args: list[str]) -> Hit:
    words = [w.lower() for w in args]
    adds = any(w in ("-a", "--append", "-i", "--insert", "-r", "--replace") for w in words)
    target = None
    for index, word in enumerate(words):
        if word in ("-j", "--jump") and index + 1 < len(words):
            target = words[index + 1]
    if adds and target in ("drop", "reject") and not _match_options(args):
        return "T0.host_destruction", (f"'{program}' adding a rule that drops all traffic of a "
                                       "chain (it cuts the host off, Ghost included)")
    return None


def _nft(args: list[str]) -> Hit:
    words = " ".join(args).lower().replace(";", " ; ").split()
    if any(w == "policy" for w in words) and any(w in ("drop", "reject") for w in words):
        return "T0.host_destruction", "nft setting a default-drop policy"
    if any(w in ("-f", "--file") or w.startswith("--file=") for w in words):
        return _FILE, "nft -f loads rules from a file the gate cannot see"
    if words[:2] in (["add", "rule"], ["insert", "rule"]) and len(words) > 5:
        body = words[5:]
        verdict_words = {"drop", "reject", "counter", "log", "accept"}
        if any(w in ("drop", "reject") for w in body) and all(w in verdict_words
                                                               for w in body):
            return "T0.host_destruction", "nft adding a rule that drops every packet of a chain"
    return None


def _ufw(args: list[str]) -> Hit:
    words = [w.lower() for w in args if not w.startswith("-")]
    if words[:1] in (["reset"], ["disable"]) or (words[:1] == ["default"] and any(
            w in ("deny", "reject") for w in words)):
        return "T0.host_destruction", "ufw resetting or closing the firewall"
    if words[:1] in (["deny"], ["reject"]):
        rest = [w for w in words[1:] if w not in ("in", "out", "from", "to", "any")]
        if all(w in ("on",) or re.fullmatch(r"[a-z]+[0-9]*", w) for w in rest) and not any(
                re.search(r"[0-9]", w) and w not in ("eth0", "eth1") for w in rest):
            return "T0.host_destruction", "ufw denying all traffic"
    return None


_IP_FLUSH_OBJECTS: Final = ("route", "address", "neighbour", "neighbor", "rule", "link")


def _ip(args: list[str]) -> Hit:
    words = [w for w in args if not w.startswith("-")]
    if any(w in ("-b", "-batch", "-force") or w.startswith("-batch") for w in args):
        return _FILE, "ip -batch runs ip commands from a file the gate cannot see"
    if "exec" in words[:3]:
        return _RUN, "ip netns/vrf exec runs another program"
    if len(words) >= 2 and any(o.startswith(words[0]) for o in _IP_FLUSH_OBJECTS) and (
            "flush".startswith(words[1]) and words[1][:1] == "f") and "cache" not in words:
        return "T0.host_destruction", (f"ip {words[0]} flush removes every entry (the host "
                                       "loses its network)")
    if len(words) >= 3 and "route".startswith(words[0]) and words[1] in ("del", "delete",
                                                                          "d", "de") and (
            words[2] in ("default", "0.0.0.0/0", "::/0")):
        return "T0.host_destruction", "ip route del default cuts the host off"
    if len(words) >= 3 and (words[0] in ("route", "r", "ro", "rule", "ru") or "rule".startswith(
            words[0])) and any(w in ("blackhole", "unreachable", "prohibit") for w in words) and (
            any(w in ("default", "0.0.0.0/0", "::/0", "all") for w in words)
            or words[0].startswith("ru")):
        return "T0.host_destruction", "a blackhole default route or rule drops all traffic"
    return None


def _find(args: list[str]) -> Hit:
    for word in args:
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            return _RUN, f"find {word} runs a program on every file"
    return None


def _tar(args: list[str]) -> Hit:
    for word in args:
        name = word.partition("=")[0]
        if name in ("--to-command", "--use-compress-program", "--checkpoint-action",
                    "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command",
                    "-I", "-F") or (name.startswith("-") and not name.startswith("--")
                                    and ("I" in name or "F" in name)):
            return _RUN, f"tar {name} runs another program"
        if name in ("-P", "--absolute-names"):
            return "T0.protected_write", "tar -P lets the archive write anywhere on the host"
    return None


def _zip(args: list[str]) -> Hit:
    if any(w in ("-TT", "--unzip-command") or w.startswith("--unzip-command=") for w in args):
        return _RUN, "zip -TT runs a program to test the archive"
    return None


def _tc(args: list[str]) -> Hit:
    words = [w.lower() for w in args]
    if "loss" in words and any(w in ("100%", "100") for w in words):
        return "T0.host_destruction", "tc dropping every packet of an interface"
    if any(w in ("-b", "-batch") for w in words):
        return _FILE, "tc -batch runs tc commands from a file the gate cannot see"
    return None


def _nmcli(args: list[str]) -> Hit:
    words = [w.lower() for w in args if not w.startswith("-")]
    if words[:2] in (["networking", "off"], ["n", "off"], ["radio", "all"]) or (
            words[:1] == ["general"] and "hostname" in words and len(words) > 2):
        return "T0.host_destruction", "nmcli turning all networking off"
    return None


def _rsync(args: list[str]) -> Hit:
    for word in args:
        name = word.partition("=")[0]
        if name in ("--rsh", "--rsync-path", "-e") or (
                name.startswith("-") and not name.startswith("--") and "e" in name[1:]):
            return _RUN, "rsync -e / --rsh / --rsync-path runs another program"
    return None


def _scp(args: list[str]) -> Hit:
    for word in args:
        if word in ("-S", "-F", "-D", "-b") or (word.startswith("-") and not word.startswith(
                "--") and any(c in word[1:] for c in "SFDb")):
            return _RUN, "scp/sftp -S/-F/-D/-b run another program or read orders from a file"
    return None


_GIT_RUN_KEYS: Final = ("sshcommand", "pager", "editor", "fsmonitor", "hookspath", "askpass",
                        "helper", "external", "clean", "smudge", "process", "program",
                        "packobjectshook", "textconv", "command", "proxy", "alias.")
_GIT_RUN_VERBS: Final = frozenset({"difftool", "mergetool", "filter-branch", "filter-repo",
                                   "daemon", "instaweb", "web--browse", "credential",
                                   "credential-store", "send-email", "imap-send"})


def _git(args: list[str]) -> Hit:
    words = [w.lower() for w in args]
    for index, word in enumerate(words):
        key = ""
        if word == "-c" and index + 1 < len(words):
            key = words[index + 1]
        elif word.startswith("--config-env") or word in ("--upload-pack", "--receive-pack",
                                                          "-u", "--exec", "--exec-path"):
            return _RUN, f"git {word} runs another program"
        if key and (any(k in key.partition("=")[0] for k in _GIT_RUN_KEYS)
                    or key.partition("=")[2].startswith("!")):
            return _RUN, f"git -c {key[:40]} makes git run another program"
        if "ext::" in word or word.startswith("--template"):
            return _RUN, "git ext:: URLs and templates run commands"
    verb, rest = _sub([w for w in args if not w.startswith("-c")])
    low_rest = [w.lower() for w in rest]
    if verb in _GIT_RUN_VERBS or (verb == "submodule" and "foreach" in low_rest) or (
            verb == "bisect" and "run" in low_rest) or (
            verb == "rebase" and any(w in ("-x", "--exec") or w.startswith("--exec=")
                                     for w in rest)):
        return _RUN, f"git {verb} runs other programs"
    if verb == "config" and any(any(k in w for k in _GIT_RUN_KEYS) for w in low_rest):
        return _RUN, "git config of a key that names a program (persistence)"
    return None


_DOCKER_READ: Final = frozenset({"ps", "logs", "inspect", "images", "image", "stats", "top",
                                 "port", "version", "info", "network", "volume", "events",
                                 "history", "diff", "container", "system", "ls", "search"})
_DOCKER_CHANGE: Final = frozenset({"restart", "stop", "start", "kill", "rm", "rmi", "pull",
                                   "pause", "unpause", "prune", "wait", "rename", "update",
                                   "tag", "login", "logout", "connect", "disconnect"})
_DOCKER_RUN: Final = frozenset({"run", "exec", "create", "attach", "cp", "build", "buildx",
                                "compose", "commit", "plugin", "service", "stack", "swarm",
                                "context", "save", "load", "import", "export", "debug", "init",
                                "sandbox", "scout", "trust", "manifest", "checkpoint"})


def _docker(program: str, args: list[str]) -> Hit:
    words = [w for w in args if not w.startswith("-")]
    if not words:
        return None
    verb = words[0]
    second = words[1] if len(words) > 1 else ""
    if verb in _DOCKER_RUN or second in _DOCKER_RUN or (verb == "start" and any(
            w in ("-a", "--attach", "-i", "--interactive") for w in args)):
        return _RUN, f"{program} {verb} runs a program (in a container the gate cannot see)"
    if any(w.startswith(("--privileged", "--pid=host", "--network=host", "-v", "--volume",
                         "--mount", "--entrypoint")) for w in args):
        return _RUN, f"{program} with host access runs a program as root on the host"
    if verb == "inspect" or (second == "inspect" and verb in ("container", "image")):
        template = _option_value(args, ("-f", "--format"))
        if template is None or _WHOLE_TEMPLATE_RE.search(template):
            return _ENV, (f"{program} inspect prints the container's environment (Config.Env) "
                          "with its secrets (give --format '{{.State.Status}}' or another field "
                          "that is not the environment)")
    if verb not in _DOCKER_READ and verb not in _DOCKER_CHANGE:
        return "T0.not_understood", f"{program} {verb[:30]}: the gate does not know what it does"
    return None


_KUBECTL_READ: Final = frozenset({"get", "describe", "logs", "top", "explain", "api-resources",
                                  "api-versions", "version", "cluster-info", "auth", "events",
                                  "wait"})
_KUBECTL_CHANGE: Final = frozenset({"delete", "apply", "scale", "rollout", "cordon",
                                    "uncordon", "drain", "label", "annotate", "patch", "set",
                                    "taint", "expose", "autoscale", "create", "replace"})
_KUBECTL_RUN: Final = frozenset({"exec", "run", "debug", "attach", "cp", "port-forward",
                                 "proxy", "edit", "plugin", "alpha", "config", "certificate",
                                 "kustomize", "convert", "completion"})
_SECRET_OUTPUT_RE: Final = re.compile(
    r"^(?:-o|--output)(?:=|$)|^-o(?:yaml|json|jsonpath|go-template|custom-columns|name|wide)")


def _kubectl(args: list[str]) -> Hit:
    words = [w for w in args if not w.startswith("-")]
    if not words:
        return None
    verb = words[0]
    if verb in _KUBECTL_RUN:
        return _RUN, f"kubectl {verb} runs a program in the cluster or reads credentials"
    if verb not in _KUBECTL_READ and verb not in _KUBECTL_CHANGE:
        return "T0.not_understood", f"kubectl {verb[:30]}: the gate does not know what it does"
    if verb in _KUBECTL_CHANGE and any(w in ("-f", "--filename", "-k", "--kustomize")
                                       or w.startswith(("--filename=", "--kustomize="))
                                       for w in args):
        return _FILE, f"kubectl {verb} -f applies a manifest the gate cannot read"
    kinds = " ".join(words[1:3]).lower()
    if verb == "set" and words[1:2] == ["env"] and any(
            w in ("--list", "--resolve") or w.startswith(("--list=", "--resolve="))
            for w in args):
        return _ENV, f"kubectl set env --list {_ENV_WHY}"
    if verb in ("create", "patch", "apply", "replace", "set", "label", "annotate") and any(
            k in kinds for k in ("rolebinding", "clusterrole", "role", "cluster-admin")):
        return "T0.privilege_escalation", "kubectl changing roles or role bindings"
    if verb == "create" and any(k in kinds for k in ("secret", "token", "serviceaccount")):
        return "T0.credential_store", "kubectl create secret/token mints credentials"
    if verb == "get" and "secret" in kinds and any(
            _SECRET_OUTPUT_RE.match(w) and not (index + 1 < len(args) and args[index + 1] in (
                "name", "wide")) and w not in ("-oname", "-owide", "--output=name")
            for index, w in enumerate(args)):
        return "T0.credential_store", "kubectl get secret with an output format prints secrets"
    return None


_CRICTL_RUN: Final = frozenset({"exec", "run", "runp", "attach", "create", "port-forward",
                                "checkpoint"})


def _crictl(args: list[str]) -> Hit:
    verb, _ = _sub(args)
    if verb in _CRICTL_RUN:
        return _RUN, f"crictl {verb} runs a program in a container"
    return None


_PKG_FILE_RE: Final = re.compile(r"(?:\.deb|\.rpm|\.apk|\.whl|\.tar\.gz|\.tgz|\.zip|\.snap)$")


def _packages(program: str, args: list[str]) -> Hit:
    for word in args:
        low = word.lower()
        if "invoke" in low or "pre-install-pkgs" in low or "dpkg::" in low or low.startswith(
                ("--allow-unauthenticated", "--nogpgcheck", "--no-gpg-checks", "--dangerous",
                 "--devmode", "--force-all", "--eval", "--pipe", "--trusted-host",
                 "--index-url", "--extra-index-url", "--registry", "--script-shell")):
            return _RUN, f"{program} {word[:40]} runs unchecked code or scripts"
        if (word.startswith(("./", "/", "../")) or "://" in word or low.startswith(
                ("git+", "file:"))) and (_PKG_FILE_RE.search(low) or "://" in word
                                         or program in ("pip", "pip3", "npm", "gem")):
            return _RUN, (f"{program} installing {word[:60]!r} runs its install scripts, "
                          "which the gate cannot read")
    if program in ("dpkg", "rpm") and any(w in ("-i", "--install", "-U", "--upgrade", "-F",
                                                "--freshen") for w in args):
        return _RUN, f"{program} installing a package file runs its scripts"
    if program == "npm" and any(w in ("run", "run-script", "exec", "x", "start", "test",
                                      "restart", "explore", "init", "create") for w in args):
        return _RUN, "npm run/exec runs package scripts"
    return None


_DB_SHELL_RE: Final = re.compile(r"\\!|!!|(?:^|[\s;])system[\s(]|\\o\s*\||\\copy.*program",
                                 re.IGNORECASE)


def _db_client(program: str, args: list[str]) -> Hit:
    for index, word in enumerate(args):
        if _DB_SHELL_RE.search(word):
            return _RUN, f"{program} given a command that starts a shell (\\!, system)"
        if word in ("-f", "--file", "-i", "--input-file", "--init-command", "--eval",
                    "--pager") and program in ("psql", "sqlcmd", "mysql", "mongosh",
                                               "redis-cli", "mongo"):
            return _FILE, f"{program} {word} runs statements from a file or script"
        del index
    return None


_SYSCTL_RUN_KEYS: Final = ("kernel.core_pattern", "kernel.modprobe", "kernel.hotplug",
                           "kernel.poweroff_cmd", "kernel.sysrq", "kernel.panic",
                           "fs.binfmt_misc", "kernel.unprivileged_bpf", "kernel.kexec",
                           "vm.panic_on_oom", "kernel.modules_disabled")


def _sysctl(args: list[str]) -> Hit:
    for index, word in enumerate(args):
        low = word.lower().replace("/", ".")
        if any(low.startswith(k) for k in _SYSCTL_RUN_KEYS) and "=" in word:
            return "T0.power", f"sysctl {word[:40]}: a kernel setting that runs programs or " \
                "panics or reboots the host"
        if word in ("-p", "--load", "-f") and index + 1 < len(args) and not args[
                index + 1].startswith("-"):
            return _FILE, "sysctl -p FILE loads settings from a file the gate cannot see"
    return None


_SOCAT_OK_RE: Final = re.compile(
    r"^(?:-|stdio|stdin|stdout|tcp[46]?|udp[46]?|tcp[46]?-listen|udp[46]?-listen|tcp-connect"
    r"|udp-connect|openssl|ssl|openssl-connect|udp-sendto|udp-datagram)(?::|$)", re.IGNORECASE)


def _socat(args: list[str]) -> Hit:
    addresses = [w for w in args if not w.startswith("-") or w == "-"]
    for address in addresses:
        if not _SOCAT_OK_RE.match(address):
            return _RUN, f"socat address {address[:40]!r} opens a file, a device or a program"
    return None


def _getent(args: list[str]) -> Hit:
    if any(w in ("shadow", "gshadow") for w in args):
        return "T0.credential_store", "getent shadow prints password hashes"
    return None


def _waagent(args: list[str]) -> Hit:
    if any(w.lstrip("-").startswith(("deprovision", "run-exthandlers", "daemon", "start",
                                     "register-service", "configuration-path")) for w in args):
        return "T0.host_destruction", "waagent deprovision/daemon forms remove the VM's " \
            "identity or run extension handlers"
    return None


def _cloud_init(args: list[str]) -> Hit:
    if any(w in ("--reboot", "single", "modules", "init", "devel") for w in args):
        return _RUN, "cloud-init runs its modules (user data scripts) or reboots"
    return None


def _crontab(args: list[str]) -> Hit:
    if "-l" not in args or any(w in ("-r", "-e", "-i") for w in args):
        return "T0.privilege_escalation", "crontab schedules commands (persistence)"
    return None


def _openssl(args: list[str]) -> Hit:
    if any(w in ("-engine", "-provider-path", "-provider", "-keyform=engine") for w in args):
        return _RUN, "openssl -engine/-provider loads code into openssl"
    return None


def _wget(args: list[str]) -> Hit:
    for word in args:
        if word in ("-e", "--execute") or word.startswith(("--execute=", "--use-askpass")):
            return _RUN, f"wget {word[:20]} runs wgetrc commands or another program"
    return None


def _curl(args: list[str]) -> Hit:
    for word in args:
        if word in ("-K", "--config") or word.startswith("--config="):
            return _FILE, "curl -K reads options from a file the gate cannot see"
    return None


def _route(args: list[str]) -> Hit:
    words = [w.lower() for w in args if not w.startswith("-")]
    if words[:1] in (["del"], ["delete"]) and any(w in ("default", "0.0.0.0") for w in words):
        return "T0.host_destruction", "route del default cuts the host off"
    return None


def _mount(program: str, args: list[str]) -> Hit:
    ops = [w for w in args if not w.startswith("-")]
    if program == "umount" and any(w.rstrip("/") in ("", "/usr", "/var", "/boot", "/etc",
                                                      "/home") for w in ops):
        return "T0.host_destruction", "umount of a system file system"
    if program == "mount" and any(w.startswith(("-o", "--options")) for w in args) and any(
            "remount" in w for w in args) and any(w.rstrip("/") == "" for w in ops):
        return "T0.host_destruction", "remounting the root file system"
    return None


def _ps(args: list[str]) -> Hit:
    if any(w == "-E" or (w.startswith("-") and not w.startswith("--") and "E" in w[1:]
                         and w[1:].isalpha()) for w in args):
        return _ENV, f"ps -E {_ENV_WHY}"
    return None


_FAMILIES: Final[dict[str, Callable[[str, list[str]], Hit]]] = {
    "ps": lambda p, a: _ps(a),
    "systemctl": lambda p, a: _systemctl(a),
    "kill": _kill, "pkill": _kill, "killall": _kill,
    "nft": lambda p, a: _nft(a),
    "ufw": lambda p, a: _ufw(a),
    "ip": lambda p, a: _ip(a),
    "find": lambda p, a: _find(a),
    "tar": lambda p, a: _tar(a),
    "rsync": lambda p, a: _rsync(a),
    "zip": lambda p, a: _zip(a),
    "tc": lambda p, a: _tc(a),
    "nmcli": lambda p, a: _nmcli(a),
    "scp": lambda p, a: _scp(a), "sftp": lambda p, a: _scp(a),
    "git": lambda p, a: _git(a),
    "docker": _docker, "podman": _docker, "nerdctl": _docker,
    "kubectl": lambda p, a: _kubectl(a), "oc": lambda p, a: _kubectl(a),
    "crictl": lambda p, a: _crictl(a),
    "apt": _packages, "apt-get": _packages, "aptitude": _packages, "yum": _packages,
    "dnf": _packages, "microdnf": _packages, "zypper": _packages, "apk": _packages,
    "snap": _packages, "dpkg": _packages, "rpm": _packages, "pip": _packages,
    "pip3": _packages, "npm": _packages, "gem": _packages,
    "mysql": _db_client, "psql": _db_client, "sqlcmd": _db_client, "mongosh": _db_client,
    "mongo": _db_client, "redis-cli": _db_client,
    "sysctl": lambda p, a: _sysctl(a),
    "socat": lambda p, a: _socat(a),
    "getent": lambda p, a: _getent(a),
    "waagent": lambda p, a: _waagent(a), "walinuxagent": lambda p, a: _waagent(a),
    "cloud-init": lambda p, a: _cloud_init(a),
    "crontab": lambda p, a: _crontab(a),
    "openssl": lambda p, a: _openssl(a),
    "wget": lambda p, a: _wget(a),
    "curl": lambda p, a: _curl(a),
    "mount": _mount, "umount": _mount,
    "route": lambda p, a: _route(a),
}


_DISK_READS: Final[dict[str, tuple[frozenset[str], int]]] = {
    # program -> (words that make a read-only form, where to look: 0 any word, 1 first operand)
    "mdadm": (frozenset({"--detail", "-D", "--examine", "-E", "--query", "-Q",
                         "--detail-platform", "--brief", "-b", "--scan", "-s", "--verbose",
                         "-v"}), 0),
    "hdparm": (frozenset({"-I", "-i", "-g", "-C"}), 0),
    "nvme": (frozenset({"list", "id-ctrl", "id-ns", "smart-log", "error-log", "list-subsys",
                        "show-regs", "list-ns", "version", "fw-log"}), 1),
    "fdisk": (frozenset({"-l", "--list"}), 0), "sfdisk": (frozenset({"-l", "--list", "-d",
                                                                      "--dump", "-J", "--json",
                                                                      "-s", "--show-size"}), 0),
    "gdisk": (frozenset({"-l"}), 0), "sgdisk": (frozenset({"-p", "--print", "-i", "--info"}), 0),
    "parted": (frozenset({"-l", "--list", "print"}), 0),
    "zpool": (frozenset({"status", "list", "iostat", "get", "history", "events"}), 1),
    "zfs": (frozenset({"list", "get"}), 1),
    "btrfs": (frozenset({"filesystem", "device", "subvolume", "scrub", "qgroup"}), 1),
    "dmsetup": (frozenset({"ls", "info", "status", "table", "deps", "version"}), 1),
    "cryptsetup": (frozenset({"status", "luksDump", "isLuks", "--version"}), 1),
    "tune2fs": (frozenset({"-l"}), 0), "losetup": (frozenset({"-a", "--all", "-l", "--list",
                                                              "-j", "--associated"}), 0),
    "swapon": (frozenset({"--show", "-s", "--summary"}), 0),
    "fsck": (frozenset({"-N"}), 0), "e2fsck": (frozenset({"-n"}), 0),
}
_DISK_WRITE_WORDS: Final = frozenset({"--dump-master-key", "--dump-volume-key", "subvolume",
                                      "delete", "create", "set", "balance", "resize", "add",
                                      "remove", "--zero-superblock", "--create", "--grow",
                                      "--fail", "--remove", "--add", "--stop", "--assemble",
                                      "--write-mostly", "--manage", "--misc", "--wait-clean"})


def disk_read_form(program: str, args: list[str]) -> bool:
    """A disk or volume tool in a read-only form (`mdadm --detail`, `fdisk -l`, `zpool status`)."""
    entry = _DISK_READS.get(program)
    if entry is None or not args:
        return False
    words = frozenset(w.lower() for w in entry[0])
    where = entry[1]
    args = [w.lower() if w.startswith("-") or where == 1 else w for w in args]
    if where == 1:
        verb, rest = _sub(args)
        if verb not in words:
            return False
        if program == "btrfs" and (not rest or rest[0] not in ("show", "df", "usage", "stats",
                                                                 "list", "status")):
            return False
        return not any(w in _DISK_WRITE_WORDS for w in rest)
    words = words | frozenset(w.lower() for w in words)
    options = [w for w in args if w.startswith("-")]
    if program == "parted" and "print" in args:
        return all(w in ("-l", "--list", "-s", "--script", "-m", "--machine")
                   for w in options)
    return bool(options) and any(w in words for w in options) and all(
        w in words or w in ("-v", "--verbose", "-s", "-n") for w in options) and not any(
        w in _DISK_WRITE_WORDS for w in args)


def forbidden_form(program: str, args: list[str]) -> Hit:
    """The never-approvable form of a known program, or None."""
    if program in _FIREWALL:
        return _firewall(program, args)
    if program in ("iptables-restore", "ip6tables-restore", "ebtables-restore"):
        return _FILE, f"{program} loads rules from a file the gate cannot see"
    check = _FAMILIES.get(program)
    return check(program, args) if check is not None else None
