"""Tier 0 classes added after the third red team: what no approver should ever be offered.

Each check names a class, not a list of strings: privilege escalation and persistence, credential
stores in any path spelling (`/etc/./shadow`, `/etc//shadow`, `/???/sh*`), commands assembled at
run time (the text is not what runs), exploit payloads, identity endpoints, destruction of the
host (disks, firewall, power) and script engines inside network tools. `tier0` calls these on its
hostile reading of the command; a false FORBIDDEN costs a rephrase, a miss costs the host.
"""

from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase
from typing import Final
from urllib.parse import unquote

#: Programs that run something as another user or with more privileges.
PRIVILEGE_PROGRAMS: Final = frozenset({
    "sudo", "sudoedit", "doas", "su", "runuser", "pkexec", "setcap", "gosu", "su-exec",
    "ksu", "run0",
})
#: Programs that only start another program (so every later word may be the real program).
MORE_WRAPPERS: Final = frozenset({
    "numactl", "fakeroot", "toybox", "prlimit", "setpriv", "tmux", "screen", "cgexec", "bwrap",
    "capsh", "chpst", "runcon", "schroot", "proot", "systemd-nspawn", "daemonize",
    "start-stop-daemon", "rlwrap", "eatmydata", "nocache", "trickle", "cpulimit", "timelimit",
    "aa-exec", "newgrp", "dtach", "abduco", "byobu", "xvfb-run", "dbus-run-session",
    "flatpak-spawn", "torify", "catchsegv", "perf", "sudo", "sudoedit", "doas", "pkexec",
    "run0", "ksu",
})
_SHELL_NAMES: Final = frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "csh", "tcsh", "fish", "ash", "yash", "pwsh",
    "powershell", "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php",
    "lua", "tclsh", "source", ".", "busybox", "toybox", "rc", "es", "xonsh", "elvish", "nu",
})
_SHELL_RE: Final = re.compile(r"^(?:python|perl|ruby|php|lua)[0-9.]*$")
#: Paths (as `fnmatch` would see them, one component per `/`) whose contents are credentials.
CREDENTIAL_PATHS: Final = (
    "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers",
    "/etc/security/opasswd", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssl/private", "/etc/ipsec.secrets", "/etc/strongswan/ipsec.secrets",
    "/etc/wireguard/wg0.conf", "/etc/wireguard", "/var/lib/cloud/instance/user-data.txt",
    "/var/lib/waagent/ovf-env.xml", "/var/lib/waagent/CustomData",
    "/var/lib/kubelet/kubeconfig", "/var/lib/kubelet/pki/kubelet-client-current.pem",
    "/etc/kubernetes/azure.json", "/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf",
    "/etc/kubernetes/certs/client.key", "/etc/kubernetes/certs/apiserver.key",
    "/etc/kubernetes/pki/ca.key", "/root/.ssh/id_rsa", "/root/.ssh/id_ed25519",
    "/root/.azure/msal_token_cache.json", "/root/.azure/accessTokens.json",
    "/root/.azure/service_principal_entries.json", "/root/.kube/config",
    "/root/.docker/config.json", "/root/.aws/credentials", "/root/.netrc", "/root/.pgpass",
    "/root/.git-credentials", "/root/.vault-token", "/proc/1/environ", "/proc/self/environ",
    "/var/run/secrets/kubernetes.io/serviceaccount/token", "/run/secrets",
)
#: Markers matched inside a normalised path (more spellings of the stores above).
CREDENTIAL_MARKERS: Final = (
    "/etc/ssl/private", "ipsec.secrets", "/etc/wireguard", "/etc/swanctl/private",
    "/var/lib/cloud/instance", "/var/lib/cloud/seed", "user-data.txt", "/var/lib/kubelet/pki",
    "/var/lib/kubelet/kubeconfig", "/etc/kubernetes/", "bootstrap-kubelet", "kubelet.conf",
    "/etc/security/opasswd", "/etc/shadow", "/etc/gshadow", "/etc/sudoers",
    "/var/lib/waagent", "/.ssh/id_", "/.azure/", "/.kube/", "/.aws/credentials",
    "/.docker/config.json", "/.git-credentials", "/.netrc", "/.pgpass", "/.vault-token",
    "/.config/gh/hosts", "/etc/ssh/ssh_host_", "/var/run/secrets/", "/run/secrets/",
)
#: Files whose writing is persistence or privilege escalation.
PERSISTENCE_MARKERS: Final = ("authorized_keys", "ld.so.preload", "/etc/cron", "/var/spool/cron",
                              "/etc/anacrontab", "/etc/sudoers", "/etc/ld.so.conf",
                              # the container runtime's socket is root on the host
                              "docker.sock", "containerd.sock", "crio.sock", "podman.sock",
                              "dockershim.sock", "cri-dockerd.sock")
IDENTITY_MARKERS: Final = ("identity_endpoint", "msi_endpoint", "identity_header", "msi_secret",
                           "/msi/token", "/metadata/identity", ":40342", ":50342", "himds",
                           "identity_server_thumbprint", "imds_endpoint")
EXPLOIT_MARKERS: Final = ("${jndi", "${::-", "${lower:", "${upper:", "${env:", "${sys:",
                          "${java:", "${base64:", "${main:", "${${", "${script:", "${dns:",
                          "${url:", "%{(#", "%{#_memberaccess", "class.module.classloader",
                          "#_memberaccess")
#: Keys whose value is a command line that ssh, git or rsync will run.
COMMAND_KEYS_RE: Final = re.compile(
    r"(?:proxycommand|localcommand|knownhostscommand|sshcommand|git_ssh_command|"
    r"git_proxy_command|gitproxy|fsmonitor|core\.pager|core\.editor|--rsh|askpass)[ \t]*[=\s]")
_SOCKET_RE: Final = re.compile(r"socket|fsockopen|tcpclient|tcpsocket|/inet/tcp/|/inet/udp/|"
                               r"zsh/net/tcp|net\.connect|createconnection")
_SPAWN_RE: Final = re.compile(r"dup2|subprocess|pty\.spawn|spawn\(|exec\(|execve|system\(|popen|"
                              r"child_process|/bin/sh|/bin/bash|cmd\.exe|invoke-expression|"
                              r"\biex\b|proc_open|shell_exec|passthru|\|&|\bexec ")
_HOME_RE: Final = re.compile(r"^(?:~[a-z0-9_-]*|\$\{?home\}?)(?=/|$)")
_PATTERN_CHARS: Final = frozenset("*?[")


def _norm_path(word: str) -> str:
    """`/etc/./shadow`, `/etc//shadow`, `/etc/x/../shadow` -> `/etc/shadow` (lexically)."""
    word = _HOME_RE.sub("/root", word)
    if not word.startswith("/"):
        return word
    return posixpath.normpath("/" + word.lstrip("/"))


def _matches_store(pattern: str) -> bool:
    parts = pattern.split("/")
    for path in CREDENTIAL_PATHS:
        target = path.lower().split("/")
        if len(target) == len(parts) and all(
                fnmatchcase(t, p) for t, p in zip(target, parts, strict=True)):
            return True
    return False


#: Directory names whose contents are credentials wherever they sit (`/etc/ssl/private`,
#: `/etc/pki/tls/private`, `~/.ssh`, `/run/secrets`, `/var/lib/kubelet`, the VM agent's state).
_CREDENTIAL_DIRS: Final = frozenset({
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".vault",
    "private", "secrets", "secret", "keyrings", "kubelet", "waagent", "azcmagent",
    ".config/gcloud", "serviceaccount", "tokens", "credentials",
})
#: File names (or parts of them) that hold credentials.
_CREDENTIAL_NAME_PARTS: Final = ("token", "secret", "credential", "password", "shadow",
                                 "keytab", "htpasswd", "kubeconfig", "private_key",
                                 "privatekey", "private-key", "sensitive", "k3s.yaml",
                                 "rke2.yaml")
_CREDENTIAL_SUFFIXES: Final = (".key", ".pfx", ".p12", ".jks", ".keystore", ".kdbx", ".ppk",
                               ".keytab", ".tfstate", ".tfstate.backup", ".pkcs12", ".p8",
                               ".der.key", ".asc.key", "_rsa", "_dsa", "_ecdsa", "_ed25519")
_CREDENTIAL_FILES: Final = frozenset({
    ".netrc", ".pgpass", ".my.cnf", ".npmrc", ".pypirc", ".git-credentials", ".env",
    ".vault-token", "azure.json", "admin.conf", "kubelet.conf", "bootstrap-kubelet.conf",
    "ovf-env.xml", "customdata", "user-data", "user-data.txt", "userdata", "sudoers",
    "ipsec.secrets", "accesstokens.json", "msal_token_cache.json", "msal_token_cache.bin",
    "service_principal_entries.json", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
    "id_ecdsa_sk", "id_ed25519_sk", "identity", "krb5.keytab", "opasswd", "master.key",
    "gshadow", "shadow", "shadow-", "gshadow-", "secring.gpg", "trustdb.gpg", ".bash_history",
    ".zsh_history", ".mysql_history", ".psql_history", ".python_history", "wp-config.php",
})
_URL_RE: Final = re.compile(r"[a-z][a-z0-9+.-]{0,30}://[^\s]*")


def credential_name(name: str) -> bool:
    """A file name (no directory) that holds credentials: `id_rsa`, `tls.key`, `.netrc` ..."""
    name = name.lower()
    if not name or name in (".", ".."):
        return False
    return (name in _CREDENTIAL_FILES or name.endswith(_CREDENTIAL_SUFFIXES)
            or name.startswith(("ssh_host_", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"))
            or any(part in name for part in _CREDENTIAL_NAME_PARTS))


def _credential_components(path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    if any(p in _CREDENTIAL_DIRS for p in parts[:-1]) or (
            path.startswith("/") and parts and parts[-1] in _CREDENTIAL_DIRS
            and parts[-1] not in ("tokens", "credentials", "secret")):
        return True
    if "/.config/gcloud" in path or path.startswith(("/var/lib/cloud/instance",
                                                     "/var/lib/cloud/seed", "/run/cloud-init",
                                                     "/etc/rancher", "/var/lib/rancher")):
        return True
    if "/kubernetes/pki" in path or path.startswith("/etc/kubernetes/"):
        return True
    return bool(parts) and credential_name(parts[-1])


def credential_path(word: str) -> bool:
    """Does a (dequoted, lowercase) word name a credential store in any spelling?

    By location class, not by a list of files: any file whose name says token, secret,
    credential, password, shadow or keytab; keys and keystores by extension (`*.key`, `*.pfx`,
    `*.jks` ...); anything under a `private/`, `secrets/`, `.ssh/`, `.aws/`, `.azure/`, `.kube/`
    directory, kubelet, VM-agent and cloud-init state; process environments and memory. URLs
    and Azure resource ids are names of things elsewhere, not local files.
    """
    word = word.lower()
    if "://" in word:
        word = _URL_RE.sub(lambda m: m.group(0) if m.group(0).startswith("file:") else " ",
                           word)
    if "/" not in word and "~" not in word:
        return any(credential_name(piece) for piece in re.split(r"[=,:@ ]", word)
                   if "." in piece or "_" in piece)
    for piece in re.split(r"[=,:@ ]", word):
        if "/" not in piece and not piece.startswith("~"):
            if ("." in piece or "_" in piece) and credential_name(piece):
                return True
            continue
        if piece.startswith(("/subscriptions/", "/providers/")) or (
                piece.startswith("//") and not piece.startswith("///")):
            continue
        path = _norm_path(piece)
        if any(m in path + "/" for m in CREDENTIAL_MARKERS) or re.search(
                r"/proc/[^/]{1,20}/(?:task/[^/]{1,10}/)?(?:environ|mem)$", path):
            return True
        if _credential_components(path):
            return True
        if _PATTERN_CHARS & set(path) and path.startswith("/") and _matches_store(path):
            return True
    return False


def ps_shows_environment(rest: list[str]) -> bool:
    """`ps e`, `ps auxeww`: BSD-style options without a dash whose `e` prints environments."""
    return any(w.isalpha() and "e" in w for w in rest) or any(
        "environ" in w for w in rest)


def is_shell(name: str) -> bool:
    return name in _SHELL_NAMES or bool(_SHELL_RE.match(name))


def reverse_shell_script(compact: str) -> bool:
    """An interpreter one-liner wiring a socket to a process (python, perl, php, awk, pwsh)."""
    return bool(_SOCKET_RE.search(compact)) and bool(_SPAWN_RE.search(compact))


def identity_endpoint(compact: str) -> bool:
    decoded = unquote(compact) if "%" in compact else compact
    return any(m in decoded for m in IDENTITY_MARKERS)


#: Shellshock: a value that starts with a function definition, `() {` (not `function(){` in a
#: script, which is preceded by a name).
_SHELLSHOCK_RE: Final = re.compile(r"(?:^|[\s'\"=:,;(])\(\)[ \t]*\{")


def exploit_payload(compact: str, norm: str) -> bool:
    decoded = unquote(unquote(compact)) if "%" in compact else compact
    if any(m in decoded for m in EXPLOIT_MARKERS):
        return True
    text = unquote(unquote(norm)) if "%" in norm else norm
    return "()" in text and _SHELLSHOCK_RE.search(text) is not None


# ---- commands assembled at run time (read on the raw text, quote-aware) ----------------

_FAST_CHARS: Final = frozenset("{~$\\?*[")
_PARAM_OP_RE: Final = re.compile(
    r"\$\{(?:[!#]|[A-Za-z_][A-Za-z_0-9]{0,64}(?:\[[^\]]{0,64}\])?[%#/:^,@]|[@*0-9][%#/:^,@])")
_ANSI_C_RE: Final = re.compile(r"\$'[^']{0,4096}?\\")
_BRACE_RE: Final = re.compile(r"\{[^\s{}]{0,200}?(?:,|\.\.)[^\s{}]{0,200}?\}")
_TILDE_USER_RE: Final = re.compile(r"(?:^|[\s;&|(=:<>])~[A-Za-z_+\-]")
_ASSEMBLE_SCAN: Final = 16 * 1024


def _mask_quotes(text: str) -> str:
    """The text with each single-quoted part and escaped character replaced by `Q`."""
    out: list[str] = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char == "'":
            end = text.find("'", index + 1)
            if end == -1:
                out.append(text[index:])
                break
            out.append("Q")
            index = end + 1
            continue
        if char == "\\" and index + 1 < length:
            out.append("Q")
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _mask_double(text: str) -> str:
    return re.sub(r'"[^"]{0,4096}"', "Q", text)


def assembled(command: str) -> str | None:
    """Why the command's text is not what a shell would run, or None."""
    text = command[:_ASSEMBLE_SCAN]
    if not _FAST_CHARS & set(text):
        return None
    if re.search(r"\\\r?\n", text):
        return "a backslash-newline joins words at run time"
    if _ANSI_C_RE.search(text):
        return "ANSI-C quoting ($'\\x..') spells characters at run time"
    single = _mask_quotes(text)
    if _PARAM_OP_RE.search(single):
        return "a ${VAR...} expansion with an operator builds text at run time"
    unquoted = _mask_double(single)
    if _BRACE_RE.search(unquoted):
        return "brace expansion ({a,b} or {1..3}) builds words at run time"
    if _TILDE_USER_RE.search(unquoted):
        return "~user (or ~+ ~-) expands to another directory at run time"
    return None


def program_view(command: str) -> str:
    """The command as a shell would see its program names: single-quoted text and escaped
    characters masked, pattern characters inside double quotes masked (they are literal
    there, while `$` and backticks still expand)."""
    masked = _mask_quotes(command[:_ASSEMBLE_SCAN])
    return re.sub(r'"[^"]{0,4096}"', lambda m: re.sub(r"[*?\[\]]", "Q", m.group(0)), masked)


def built_program(word: str) -> bool:
    """A program-position word that a shell would build (glob, expansion, substitution)."""
    if word in ("[", "[[", "]]"):
        return False
    return any(c in word for c in "*?[$`")
