"""Tier 0: things that are refused outright, found however the text is dressed up.

Tier 0 runs on a hostile reading of the command (look-alikes folded, invisible characters dropped,
quotes and escapes removed, split at every shell operator), so `r'm' -rf /`, `sudo rm -rf /`,
`ls; rm -rf /` and `rm${IFS}-rf${IFS}/` are all recognised. It is deliberately broader than a real
shell parse: a false FORBIDDEN costs a rephrase, a miss costs the host.
"""

from __future__ import annotations

import re
from typing import Final

from core.safety.hosts import word_hits_metadata, word_hits_wireserver
from core.safety.lexer import (
    normalize_hostile,
    printable_ascii_problem,
    strict_lex,
    tolerant_segments,
)
from core.safety.program_forms import disk_read_form
from core.safety.rules.vm_probe import vm_probe_problem
from core.safety.tier0_classes import (
    COMMAND_KEYS_RE,
    MORE_WRAPPERS,
    PERSISTENCE_MARKERS,
    PRIVILEGE_PROGRAMS,
    assembled,
    built_program,
    credential_path,
    exploit_payload,
    identity_endpoint,
    is_shell,
    program_view,
    reverse_shell_script,
)
from core.safety.tier0_host import host_check
from core.safety.verdict import Verdict, make_verdict

WRAPPERS: Final = frozenset({
    "sudo", "doas", "su", "env", "timeout", "xargs", "nohup", "nice", "ionice", "exec",
    "command", "builtin", "time", "watch", "strace", "ltrace", "setsid", "stdbuf", "chroot",
    "busybox", "unbuffer", "script", "runuser", "flock", "taskset", "chrt", "firejail", "eval",
    "then", "do", "else", "if", "while", "until", "!",
}) | MORE_WRAPPERS
INTERPRETERS: Final = frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "csh", "tcsh", "fish", "ash", "pwsh", "powershell",
    "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh",
    "awk", "gawk", "mawk", "find", "vim", "vi", "emacs", "ed", "expect", "osascript",
})
_DNS_ICMP: Final = frozenset({
    "dig", "nslookup", "host", "ping", "ping6", "traceroute", "traceroute6", "tracepath",
    "tracepath6", "mtr", "delv", "drill", "kdig",
})
#: Programs that only read the host's routes, sockets or packets: naming the WireServer or IMDS
#: address in their filters (`ss -tn dst 168.63.129.16`, `ip route get 169.254.169.254`) sends
#: nothing to it.
_ROUTE_SOCKET_READERS: Final = frozenset({"ss", "ip", "netstat", "tcpdump", "conntrack"})
_COMMAND_KEY_NEEDLES: Final = ("command", "rsh", "pager", "editor", "fsmonitor", "askpass",
                                "gitproxy")
#: Words that would make a reader talk to the address or run something else.
_TALKERS: Final = frozenset({"exec", "-exec", "curl", "wget", "nc", "ncat", "netcat", "socat",
                             "telnet", "openssl", "http", "https", "xh", "python", "python3",
                             "sh", "bash", "perl", "ruby", "node", "php", "-z", "busybox"})
_DISK_TOOLS: Final = frozenset({
    "mkfs", "mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk",
    "parted", "blkdiscard", "mkntfs", "mkdosfs", "mkfs.ext2", "mkfs.ext3", "mkfs.ext4",
    "mkfs.xfs", "mkfs.btrfs", "mkfs.vfat", "mkfs.fat", "mkfs.ntfs", "mkfs.exfat",
})
#: Programs whose arguments contain another command line (run locally, remotely or in a
#: container): every word after them may be a program.
_RUNS_OTHERS: Final = frozenset({
    "ssh", "systemd-run", "nsenter", "unshare", "pkexec", "gosu", "su-exec", "sshpass",
    "parallel", "docker", "podman", "kubectl", "crictl", "nerdctl", "sg", "run-parts",
    "proxychains", "proxychains4", "torsocks", "faketime", "valgrind", "gdb", "source", ".",
})
_POWER: Final = frozenset({"shutdown", "reboot", "halt", "poweroff", "kexec", "killall5"})
_SYSTEMCTL_POWER: Final = frozenset({"poweroff", "reboot", "halt", "kexec"})
_CRITICAL_DIRS: Final = frozenset({
    "", "~", "$home", "${home}", ".", "..", "*", "/etc", "/usr", "/var", "/bin", "/sbin", "/lib",
    "/lib32", "/lib64", "/boot", "/home", "/root", "/opt", "/srv", "/dev", "/proc", "/sys",
    "/run", "/mnt", "/media", "/snap", "/tmp", "/work", "/app",
})
_CREDENTIAL_MARKERS: Final = (
    "msal_token_cache", "accesstokens.json", "service_principal_entries", "/etc/shadow",
    "/etc/gshadow", "/.ssh/id_", "/.kube/config", ".git-credentials", "/.docker/config.json",
    "/.aws/credentials", "/.azure/msal", "/.config/gcloud", "/etc/sudoers",
    # the Azure VM agent's directory holds extension certificates, private keys and the
    # provisioning document (ovf-env.xml) with the admin password
    "/var/lib/waagent", "ovf-env.xml", "/etc/ssh/ssh_host_", "/.netrc", "/.pgpass", "/.my.cnf",
    "/.config/gh/hosts", "/.npmrc", "/.pypirc", "/.vault-token", "/run/secrets/",
    "/var/run/secrets/", "/etc/kubernetes/azure.json", "/etc/kubernetes/admin.conf",
    "/etc/kubernetes/pki/", "/proc/kcore", "/dev/mem", "/dev/kmem",
    "/.azure/service_principal", "/.kube/", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa",
)
_ASSIGN_RE: Final = re.compile(r"^[a-z_][a-z0-9_]*=")
_NUMBERISH_RE: Final = re.compile(r"^[0-9.]+[smhd]?$")
_FORK_BOMB_RE: Final = re.compile(r"\(\)\{[^}]{0,200}[|&]")
_RAW_DEVICE_RE: Final = re.compile(
    r">{1,2}/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|mapper/|dm-|md|loop|mem|kmem|port)")
_SHELLS: Final = r"(?:sh|bash|zsh|dash|ksh|fish|pwsh|python[0-9.]*|perl|ruby|node|php)"
_PIPE_SHELL_RE: Final = re.compile(
    r"\|&?\s*(?:(?:sudo|env|doas|exec|command|nohup)(?:\s+-\S+)*\s+)*(?:[\w.~-]*/)*" + _SHELLS
    + r"(?:[\s);&|`]|$)")
#: `bash <(curl ...)`, `source <(wget ...)`, `sh -c "$(curl ...)"`: the same as a pipe.
#: (A path before the name is matched by allowing "/" before it, not by scanning back.)
_SUBST_SHELL_RE: Final = re.compile(
    r"(?:^|[\s;&|(/])(?:" + _SHELLS[3:-1] + r"|source|\.)\s+(?:-\S+\s+)*<\s*\("
    r"|(?:^|[\s;&|(/])" + _SHELLS + r"\s+(?:-\S+\s+)*-c\s+[\"']?\$\(\s*(?:curl|wget)\b")
_RAW_DEV_WORD_RE: Final = re.compile(
    r"^(?:of=)?/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|mapper/|dm-|md|loop|mem|kmem|port)")
_PROC_SECRET_RE: Final = re.compile(
    r"/proc/[^/]{1,20}/(?:task/[0-9]{1,10}/)?(?:environ|mem)(?![a-z])")
_AZ_REMOTE_PAIRS: Final = (
    ("run-command", "invoke"), ("run-command", "create"), ("run-command", "update"),
    ("extension", "set"), ("extension", "create"), ("extension", "update"),
    ("command", "invoke"), ("container", "exec"), ("containerapp", "exec"),
    ("webapp", "ssh"), ("serial-console", "connect"), ("bastion", "ssh"), ("bastion", "rdp"),
    ("bastion", "tunnel"), ("webapp", "create-remote-connection"),
    ("resource", "invoke-action"),
)
_AZ_CRED_PAIRS: Final = (
    ("credential", "reset"), ("credential", "create"), ("user", "update"),
    ("user", "reset-ssh"), ("token", "create"), ("token", "credential"),
)


def _basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1] if word not in ("/", "") else word


#: Program names `_program_check` has a rule for (others need no look at their arguments).
_CHECKED: Final = frozenset({
    "rm", "dd", "shred", "chmod", "chown", "chgrp", "nc", "ncat", "netcat", "nc.traditional",
    "nc.openbsd", "socat", "tcpdump", "az", "init", "telinit", "systemctl", "cp", "mv", "tee",
    "install", "pv", "cat", "rsync", "find", "kill", "pkill", "killall", "ps", "crontab", "at",
    "batch", "hdparm", "nvme", "lvremove", "vgremove", "pvremove", "lvreduce", "cryptsetup",
    "mdadm", "badblocks", "zpool", "zfs", "dmsetup", "sg_format", "sg_sanitize", "iptables",
    "ip6tables", "iptables-nft", "ip6tables-nft", "iptables-legacy", "ip6tables-legacy",
    "ebtables", "arptables", "nft", "ufw", "firewall-cmd", "loginctl", "busctl", "dbus-send",
    "tshark", "nmap", "gdbus", "qdbus",
}) | _DISK_TOOLS | _POWER | PRIVILEGE_PROGRAMS
#: Arguments looked at after a candidate program, and candidate checks per command: bounds
#: Tier 0's work on hostile megabyte inputs (which are RISKY as too long in any case).
_MAX_REST_WORDS: Final = 512
_MAX_CHECKS: Final = 512
#: Word-by-word analysis covers this much of a command; the pattern checks above it read up to
#: 1 MB. Anything longer than the gate's 4096-character limit is RISKY whatever Tier 0 finds.
_SEGMENT_SCAN_CHARS: Final = 64 * 1024


#: Programs whose arguments are names and values, never programs: `dig su`, `host at`,
#: `az batch account list` look up or read things called su, at, batch.
_RUNS_NOTHING: Final = frozenset({"dig", "nslookup", "host", "ping", "ping6", "traceroute",
                                  "traceroute6", "tracepath", "tracepath6", "mtr", "az", "ss",
                                  "netstat", "date", "ethtool", "kdig", "drill", "delv"})


def _program_index(words: list[str]) -> int:
    for index, word in enumerate(words):
        name = _basename(word)
        if not (_ASSIGN_RE.match(word) or name in WRAPPERS or word.startswith("-")
                or _NUMBERISH_RE.match(word)):
            return index
    return len(words)


def _candidates(words: list[str]) -> list[int]:
    """Indexes of words that a shell might run as a program and that have a Tier 0 rule."""
    program = _program_index(words)
    if (program < len(words) and _basename(words[program]) in _RUNS_NOTHING
            and not any(w in _RUNS_OTHERS or w in ("exec", "-exec", "-execdir")
                        for w in words)):
        # the wrappers before it (sudo dig x) and the program itself
        return [i for i in range(program + 1) if _checked(_basename(words[i]))]
    if any(_basename(w) in WRAPPERS or _basename(w) in INTERPRETERS or w in _RUNS_OTHERS
           or w in ("-exec", "-execdir", "-ok", "-okdir") for w in words):
        return [i for i, w in enumerate(words) if _checked(_basename(w))]
    for index, word in enumerate(words):
        if not _ASSIGN_RE.match(word):
            return [index] if _checked(_basename(word)) else []
    return []


def _checked(name: str) -> bool:
    return name in _CHECKED or name.startswith("mkfs.")


def _first_word(words: list[str]) -> str:
    """The word a shell would run as the program, past assignments, wrappers and options."""
    for word in words:
        name = _basename(word)
        if (_ASSIGN_RE.match(word) or name in WRAPPERS or word.startswith("-")
                or _NUMBERISH_RE.match(word)):
            continue
        return word
    return ""


def _first_program(words: list[str]) -> str:
    return _basename(_first_word(words))


def _norm_target(target: str) -> str:
    while True:
        for suffix in ("/*", "/.", "/"):
            if target.endswith(suffix):
                target = target[: -len(suffix)]
                break
        else:
            return target


def _recursive(rest: list[str]) -> bool:
    return any(w in ("--recursive", "-r", "-R") or (w.startswith("-") and not w.startswith("--")
               and ("r" in w or "R" in w)) for w in rest)


def _critical(rest: list[str]) -> bool:
    return "--no-preserve-root" in rest or any(
        not w.startswith("-") and _norm_target(w) in _CRITICAL_DIRS for w in rest)


def _program_check(name: str, rest: list[str]) -> tuple[str, str] | None:
    if name in PRIVILEGE_PROGRAMS:
        return "T0.privilege_escalation", f"'{name}' runs a command with other privileges"
    if name == "ufw" and [w for w in rest if not w.startswith("-")][:1] in (["reset"],
                                                                            ["disable"]):
        return "T0.host_destruction", "ufw resetting or disabling the firewall"
    if name in ("crontab", "at", "batch") and rest != ["-l"]:
        return "T0.privilege_escalation", f"'{name}' schedules commands to run later"
    if name == "ps" and any(w.isalpha() and "e" in w for w in rest):
        return "T0.credential_store", "ps with the e option prints every process's environment"
    host = host_check(name, rest)
    if host is not None:
        return host
    if name == "rm" and _recursive(rest) and _critical(rest):
        return "T0.rm_root", "recursive rm of / or a top-level directory"
    if (name in _DISK_TOOLS or name.startswith("mkfs.")) and not disk_read_form(name, rest):
        return "T0.disk_format", f"'{name}' formats or repartitions disks"
    if name in ("dd", "shred") and any(
            w.startswith(("of=/dev/", "/dev/")) and w not in ("of=/dev/null", "/dev/null")
            for w in rest):
        return "T0.raw_device_write", f"'{name}' writing to a device"
    targets = rest if name == "tee" else rest[1:]  # tee writes to every argument
    if name in ("cp", "mv", "tee", "install", "pv", "cat", "rsync") and any(
            _RAW_DEV_WORD_RE.match(w) for w in targets if not w.startswith("-")):
        return "T0.raw_device_write", f"'{name}' writing onto a block device"
    if name == "find" and "-delete" in rest and _critical(rest):
        return "T0.rm_root", "find -delete over / or a top-level directory"
    if name in ("kill", "pkill") and ("-1" in rest[1:] or rest[-1:] == ["-1"]) and any(
            w.startswith("-") for w in rest[:-1]):
        return "T0.power", f"'{name} ... -1' signals every process on the host"
    if name in _POWER or (name in ("init", "telinit") and rest[:1] in (["0"], ["6"])) or (
            name == "systemctl" and any(w in _SYSTEMCTL_POWER for w in rest)):
        return "T0.power", "shuts down or reboots the host"
    if name in ("chmod", "install") and any(_setuid_mode(w) for w in rest):
        return "T0.privilege_escalation", f"'{name}' sets a setuid or setgid bit"
    if name in ("chmod", "chown", "chgrp") and _recursive(rest) and _critical(rest):
        return "T0.perm_root", f"recursive {name} on a top-level directory"
    if name in ("nc", "ncat", "netcat", "nc.traditional", "nc.openbsd") and any(
            w in ("--exec", "--sh-exec", "--lua-exec") or (
                w.startswith("-") and not w.startswith("--") and ("e" in w or "c" in w))
            for w in rest):
        return "T0.reverse_shell", f"'{name}' with an exec option opens a remote shell"
    if name == "socat" and any(k in w for w in rest for k in ("exec:", "system:", "shell:")):
        return "T0.reverse_shell", "socat exec/system address opens a remote shell"
    if name == "tcpdump" and any(w == "-z" or (w.startswith("-") and not w.startswith("--")
                                 and "z" in w.lstrip("-")) for w in rest):
        return "T0.tcpdump_exec", "tcpdump -z runs a program as root"
    if name == "az":
        return _az_check(rest)
    return None


def _setuid_mode(word: str) -> bool:
    word = word.removeprefix("--mode=").removeprefix("-m")
    if re.fullmatch(r"0?[2-7][0-7]{3}", word):
        return True
    return bool(re.fullmatch(r"[ugoa]*[+=][rwxXst]*s[rwxXst]*(?:,[ugoa]*[+=-][rwxXst]*)*", word))


def _az_check(rest: list[str]) -> tuple[str, str] | None:
    if any("get-access-token" in w or w in ("--expose-token", "--show-token") for w in rest):
        return "T0.az_token", "az command that prints an access token"
    words = [w for w in rest if not w.startswith("-")]
    pairs = set(zip(words, words[1:], strict=False))
    if any(p in pairs for p in _AZ_REMOTE_PAIRS) or (words[:1] == ["ssh"]):
        return "T0.az_remote_exec", "az command that runs code or a shell on a remote machine"
    if any(p in pairs for p in _AZ_CRED_PAIRS) or any(
            w in ("create-for-rbac", "get-credentials", "reset-access", "federated-credential")
            for w in words):
        return "T0.az_credentials", "az command that creates, resets or downloads credentials"
    for index in range(len(words) - 1):
        if words[index] == "group" and words[index + 1] == "delete" and (
                index == 0 or words[index - 1] not in ("deployment",)):
            return "T0.az_group_delete", "az group delete removes every resource in the group"
    return None


def _never(rule: str, why: str) -> Verdict:
    return make_verdict(rule, f"Refused ({rule}): {why}. This is never allowed, even with "
                        "approval.")


def _pipes_to_shell(dequoted: str) -> bool:
    """`... | busybox sh`, `| env X=1 bash -s`, `| xargs sh -c`: a shell reading the pipe."""
    pieces = re.split(r"(?<!\|)\|(?!\|)", dequoted)
    for piece in pieces[1:]:
        words = piece.replace("&", " ").split()
        if words and is_shell(_first_program(words)):
            return True
    return False


_SHELL_STDIN_RE: Final = re.compile(
    r"(?:^|[\s;&|(/])(?:" + _SHELLS[3:-1] + r"|source|\.)(?:\s+-\S+)*\s*<{1,3}\s*(?:<\(|\$\(|`)")
_SHELL_C_SUBST_RE: Final = re.compile(
    r"(?:^|[\s;&|(/])" + _SHELLS + r"(?:\s+-\S+)*\s+-c\s+[\"']?\s*(?:\$\(|`)")
_EVAL_RE: Final = re.compile(r"(?:^|[\s;&|(])eval\s[^\n;&|]{0,400}?(?:\$|`)")


def _text_checks(command: str, norm: str, dequoted: str, compact: str) -> Verdict | None:
    """Pattern checks on the whole (hostile-read) text, before it is split into commands."""
    if _FORK_BOMB_RE.search(compact):
        return make_verdict("T0.fork_bomb", "Refused: this defines a function that pipes into "
                            "or backgrounds itself, the shape of a fork bomb.")
    if exploit_payload(compact, norm):
        return _never("T0.exploit_payload", "the command carries an exploit payload "
                      "(Shellshock, Log4Shell or OGNL lookup syntax)")
    why = assembled(command)
    if why is not None:
        return _never("T0.assembled_command", f"{why}, so the text approved is not what runs")
    if "/dev/tcp/" in compact or "/dev/udp/" in compact:
        return make_verdict("T0.reverse_shell", "Refused: /dev/tcp or /dev/udp redirection "
                            "is how reverse shells are opened.")
    if re.search(r"metadata:.{0,8}?true", compact):
        return make_verdict("T0.metadata_header", "Refused: the 'Metadata: true' header is only "
                            "needed to query the instance metadata service, which hands out "
                            "managed-identity tokens.")
    if identity_endpoint(compact):
        return _never("T0.identity_endpoint", "the command names a managed-identity token "
                      "endpoint")
    if "/proc/sysrq-trigger" in compact:
        return make_verdict("T0.power", "Refused: writing to /proc/sysrq-trigger can reboot or "
                            "crash the host at once.")
    if _RAW_DEVICE_RE.search(compact):
        return make_verdict("T0.raw_device_write", "Refused: redirecting output onto a block "
                            "device destroys the disk.")
    if (_PIPE_SHELL_RE.search(dequoted) or _SUBST_SHELL_RE.search(dequoted)
            or _SHELL_STDIN_RE.search(dequoted) or _SHELL_C_SUBST_RE.search(dequoted)
            or _EVAL_RE.search(norm) or ("|" in dequoted and _pipes_to_shell(dequoted))):
        return make_verdict("T0.pipe_to_shell", "Refused: piping output into a shell or "
                            "interpreter runs whatever that output says.")
    if any(m in compact for m in PERSISTENCE_MARKERS):
        return _never("T0.privilege_escalation", "the command names a file that grants logins "
                      "or runs code for others (authorized_keys, ld.so.preload, cron, sudoers, "
                      "a container runtime's socket)")
    for marker in _CREDENTIAL_MARKERS:
        if marker in compact or ("/proc/" in compact and "/environ" in compact):
            return make_verdict("T0.credential_store", "Refused: the command names a local "
                                "credential store (token cache, shadow file, private keys, "
                                "process environment).")
    if _PROC_SECRET_RE.search(compact):
        return make_verdict("T0.credential_store", "Refused: a process's environment or memory "
                            "holds its secrets.")
    return None


def tier0(command: str) -> Verdict | None:
    """Return a FORBIDDEN verdict if any Tier 0 rule matches, else None."""
    norm = normalize_hostile(command)
    dequoted = re.sub(r"['\"\\]", "", norm)
    compact = re.sub(r"\s+", "", dequoted)
    found = _text_checks(command, norm, dequoted, compact)
    if found is not None:
        return found
    # a command line hidden in an option value (ProxyCommand=, core.sshCommand=) is a command
    head = norm[:_SEGMENT_SCAN_CHARS]
    if any(key in head for key in _COMMAND_KEY_NEEDLES):
        head = COMMAND_KEYS_RE.sub("; ", head)
    segments = tolerant_segments(head)
    words_all = [w for words in segments for w in words]
    if reverse_shell_script(compact) and any(
            is_shell(_basename(w)) or _basename(w) in ("awk", "gawk", "mawk", "nawk")
            for w in words_all):
        return _never("T0.reverse_shell", "an interpreter wires a network socket to a process")
    for word in words_all:
        if ("/" in word or "~" in word) and credential_path(word):
            return make_verdict("T0.credential_store", "Refused: the command names a local "
                                f"credential store ({word[:60]!r} in some spelling).")
    built = [] if not any(c in command for c in "*?[$`") else tolerant_segments(
        normalize_hostile(program_view(command)))
    for words in built:
        raw = _first_word(words)
        if raw and built_program(raw):
            return _never("T0.assembled_command", f"the program {raw[:40]!r} is built at run "
                          "time (a glob, expansion or substitution), so what runs is not what "
                          "was approved")
    budget = [_MAX_CHECKS]
    for words in segments:
        found = _segment(words, budget)
        if found is not None:
            if found.rule == "T0.az_remote_exec" and is_vm_probe(command):
                continue  # a read-only in-VM probe: Tier 2 makes it RISKY (rules/vm_probe.py)
            return found
    return None


def is_vm_probe(command: str) -> bool:
    """True for `az vm run-command invoke` of read-only probes, parsed strictly (no expansion)."""
    if printable_ascii_problem(command) is not None:
        return False
    lex = strict_lex(command)
    if lex.unbalanced or lex.hazards or lex.words[:1] != ["az"]:
        return False
    return vm_probe_problem(lex.words[1:]) is None


def _reads_routes_only(words: list[str]) -> bool:
    """`ss -tn dst 168.63.129.16`, `ip route get 169.254.169.254`: looks, sends nothing.

    `az` asks Azure Resource Manager about the address (`show-next-hop --dest-ip
    168.63.129.16`); only `az rest` or a URL would send a request to it.
    """
    program = _first_program(words)
    if program == "az":
        return "rest" not in words and not any("://" in w or "/" in w for w in words
                                               if word_hits_wireserver(w)
                                               or word_hits_metadata(w))
    return program in _ROUTE_SOCKET_READERS and not any(
        _basename(w) in _TALKERS or _basename(w) in WRAPPERS for w in words)


def _segment(words: list[str], budget: list[int]) -> Verdict | None:
    program = _first_program(words)
    metadata = next((w for w in words if word_hits_metadata(w)), None)
    wireserver = any(word_hits_wireserver(w) for w in words)
    reader = (metadata is not None or wireserver) and _reads_routes_only(words)
    if metadata is not None and not reader:
        return make_verdict("T0.metadata_endpoint", f"Refused: '{metadata[:80]}' points at "
                            "the instance metadata service (169.254.169.254), which hands "
                            "out managed-identity tokens.")
    if wireserver and not reader:
        if program not in _DNS_ICMP:
            return make_verdict("T0.wireserver", "Refused: only DNS lookups, ICMP probes and "
                                "route or socket reads may name the Azure WireServer "
                                "168.63.129.16; it serves VM agent state and extension "
                                "secrets.")
    deferred: tuple[str, str] | None = None
    for index in _candidates(words):
        budget[0] -= 1
        if budget[0] < 0:
            break
        hit = _program_check(_basename(words[index]),
                             words[index + 1:index + 1 + _MAX_REST_WORDS])
        if hit is not None and hit[0] == "T0.privilege_escalation":
            deferred = deferred or hit  # `sudo rm -rf /` is named for what it would do
        elif hit is not None:
            deferred = hit
            break
    if deferred is not None:
        rule, what = deferred
        return make_verdict(rule, f"Refused ({rule}): {what}. This is never allowed, even "
                            "with approval.")
    return None
