"""Where a command writes, and which places no approver is offered a write to.

`write_targets` reads, per program, the words a command writes to or deletes (the destination of
`cp`, every operand of `rm` or `tee`, `dd of=`, `curl -o`, `tar -f` when creating, `-C` when
extracting ...); for a program the gate does not know, every path-like word counts. The judge
then refuses (FORBIDDEN) writes into the system: devices, `/etc`, `/boot`, `/proc`, `/sys`, the
program directories, cron spools, agent and kubelet state, home-directory start-up files and
`.ssh`; and destructive targets spelled with `..` or `//`, whose meaning the reader has to work
out. Paths are normalised lexically (relative ones against the working directory the command
runs in); symlinks are not followed, because they can change between the approval and the run.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Final

#: Locations (and everything below them) that no approver is offered a write to.
PROTECTED: Final = (
    "/etc", "/boot", "/efi", "/proc", "/sys", "/dev", "/usr", "/bin", "/sbin", "/lib",
    "/lib32", "/lib64", "/libx32", "/root", "/snap", "/var/spool/cron", "/var/spool/at",
    "/var/lib/kubelet", "/var/lib/waagent", "/var/lib/cloud", "/var/lib/dpkg", "/var/lib/rpm",
    "/var/lib/systemd", "/run/systemd", "/var/lib/docker", "/var/lib/containerd",
    "/var/opt/azcmagent", "/opt/azcmagent", "/var/lib/polkit-1", "/var/lib/sss",
)
#: Devices that are not disks or memory: writing or naming them is harmless.
_HARMLESS_DEV: Final = re.compile(
    r"^/dev/(?:null|zero|full|random|urandom|stdin|stdout|stderr|tty|fd/[0-9]{1,3}"
    r"|pts/[0-9]{1,5}|shm(?:/.*)?)$")
#: Deletions of these (recursive or not) take the host or its users' data with them.
CRITICAL: Final = frozenset({
    "/", "/etc", "/usr", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/home",
    "/root", "/opt", "/srv", "/dev", "/proc", "/sys", "/run", "/mnt", "/media", "/snap",
    "/tmp", "/var/lib", "/var/log", "/var/tmp", "/usr/local", "/data", "/app", "/work",
})
#: Shell and tool start-up files: a write to one runs code at the next login (persistence),
#: or changes how a program Ghost runs behaves (.curlrc, .digrc, .gitconfig).
_STARTUP: Final = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
    ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout",
    ".kshrc", ".mkshrc", ".xinitrc", ".xsession", ".xprofile", ".xsessionrc", ".inputrc",
    ".curlrc", ".wgetrc", ".digrc", ".netrc", ".pgpass", ".my.cnf", ".gitconfig",
    ".npmrc", ".pypirc", ".vimrc", ".exrc", ".lessfilter", ".lesskey", ".pam_environment",
    ".forward", ".rhosts", ".shosts", ".k5login", ".env",
})
_PERSIST_PARTS: Final = ("/.ssh/", "/.config/autostart/", "/.config/systemd/", "/.git/hooks/",
                         "/.gnupg/", "/.config/environment.d/", "/.local/bin/", "/.kube/",
                         "/.azure/", "/.docker/", "/.aws/")
#: Directories that hold credentials (or hold directories that do): copying or archiving one
#: of them, or anything above it, copies the credentials.
CREDENTIAL_HOMES: Final = (
    "/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/ssl/private", "/etc/pki",
    "/etc/kubernetes", "/etc/wireguard", "/etc/ipsec.secrets", "/etc/swanctl", "/etc/sudoers",
    "/etc/krb5.keytab", "/root", "/home", "/var/lib/kubelet", "/var/lib/waagent",
    "/var/lib/cloud", "/run/secrets", "/var/run/secrets", "/var/lib/docker",
    "/var/opt/azcmagent", "/proc",
)


def normalise(path: str, cwd: Path | None) -> str:
    """`path` made absolute against `cwd` (or the process's directory) and normalised."""
    if not path.startswith("/"):
        base = str(cwd) if cwd is not None else str(Path.cwd())
        path = base.rstrip("/") + "/" + path
    return posixpath.normpath("/" + path.lstrip("/"))


def _under(path: str, roots: tuple[str, ...] | frozenset[str]) -> str | None:
    for root in roots:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return root
    return None


def is_device(word: str) -> bool:
    """A path under /dev that is a disk, memory or port, not null/stdout/a terminal."""
    path = posixpath.normpath(word) if word.startswith("/") else word
    return path.startswith("/dev/") and not _HARMLESS_DEV.match(path)


def protected_write(path: str, cwd: Path | None) -> str | None:
    """Why writing `path` is never approvable, or None."""
    if "\x00" in path:
        return "a NUL character in a path"
    full = normalise(path, cwd)
    if full.startswith("/dev/") and _HARMLESS_DEV.match(full):
        return None
    root = _under(full, PROTECTED)
    if root is not None:
        return {"/dev": "a device", "/proc": "the kernel's process table",
                "/sys": "kernel settings", "/boot": "the boot loader and kernel",
                "/etc": "the system configuration"}.get(root, f"a system location ({root})")
    if full == "/":
        return "the root directory"
    base = posixpath.basename(full)
    if base in _STARTUP or any(part in full + "/" for part in _PERSIST_PARTS):
        return "a start-up file or credential directory (it runs code or changes logins later)"
    return None


def tricky_spelling(path: str) -> str | None:
    """`..` and `//` make a destructive target mean something other than it reads."""
    if path == ".." or path.startswith("../") or "/../" in path or path.endswith("/.."):
        return f"'..' in {path[:60]!r}"
    if "//" in path:
        return f"'//' in {path[:60]!r}"
    return None


def holds_credentials(path: str, cwd: Path | None) -> str | None:
    """The credential store inside (or equal to) directory `path`, or None."""
    full = normalise(path, cwd)
    for home in CREDENTIAL_HOMES:
        if home == full or home.startswith(full.rstrip("/") + "/") or full == "/":
            return home
    return None


def critical_delete(path: str, cwd: Path | None) -> bool:
    full = normalise(path, cwd)
    return full in CRITICAL or bool(re.fullmatch(r"/home/[^/]+", full))


def pathlike(word: str) -> bool:
    """A word that names a file: absolute, relative with a slash, or `.`/`..`."""
    if "://" in word or word.startswith("-"):
        return False
    return word.startswith("/") or word in (".", "..") or word.startswith(("./", "../")) or (
        "/" in word and not re.match(r"^[0-9.:a-fA-F]+/[0-9]{1,3}$", word))


# ---- which words a known program writes -------------------------------------------------

#: Programs for which every operand is written, changed or deleted.
_ALL_OPERANDS: Final = frozenset({
    "rm", "rmdir", "unlink", "shred", "truncate", "touch", "mkdir", "mkfifo", "mknod", "chmod",
    "chown", "chgrp", "chattr", "setfacl", "tee", "gzip", "gunzip", "bzip2", "bunzip2", "xz",
    "unxz", "zstd", "unzstd", "mv",
})
#: Programs that write their last operand (or -t DIR).
_LAST_OPERAND: Final = frozenset({"cp", "install", "ln", "rsync", "scp"})
#: Options whose value is a file the program writes, per program ("*": any program).
_OUTPUT_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "curl": frozenset({"-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar",
                       "--trace", "--trace-ascii", "--stderr", "--libcurl", "--etag-save",
                       "--hsts", "--alt-svc", "--output-dir"}),
    "wget": frozenset({"-O", "--output-document", "-o", "--output-file", "-a",
                       "--append-output", "-P", "--directory-prefix", "--save-cookies",
                       "--warc-file"}),
    "openssl": frozenset({"-out", "-keyout", "-sess_out", "-writerand", "-msgfile",
                          "-keylogfile", "-CAserial"}),
    "tcpdump": frozenset({"-w"}), "tshark": frozenset({"-w"}), "dumpcap": frozenset({"-w"}),
    "sort": frozenset({"-o", "--output"}),
    "ssh-keygen": frozenset({"-f"}),
    "tar": frozenset({"-f", "--file", "-C", "--directory"}),
    "unzip": frozenset({"-d"}),
    "zip": frozenset(),
    "git": frozenset({"-C", "--git-dir", "--work-tree"}),
    "iconv": frozenset({"-o", "--output"}),
    "cp": frozenset({"-t", "--target-directory"}),
    "mv": frozenset({"-t", "--target-directory"}),
    "install": frozenset({"-t", "--target-directory"}),
    "ln": frozenset({"-t", "--target-directory"}),
    "find": frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"}),
    "journalctl": frozenset({"--output-fields"}),
    "mount": frozenset(),
    "logrotate": frozenset({"-s", "--state", "-l", "--log"}),
}


def _option_values(words: list[str], names: frozenset[str]) -> list[str]:
    values: list[str] = []
    for index, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in names:
            if eq:
                values.append(value)
            elif index + 1 < len(words):
                values.append(words[index + 1])
        elif word.startswith("-") and not word.startswith("--") and len(word) > 2:
            # a short option glued to its value (-o/path), or a cluster ending in one (-sSo)
            for name2 in names:
                if len(name2) == 2 and word.startswith(name2) and word[2:3] not in ("", "-"):
                    values.append(word[2:])
    return values


def operands(words: list[str]) -> list[str]:
    """Words that are not options (a rough cut: option values that look like paths count)."""
    out: list[str] = []
    after = False
    for word in words:
        if after or not word.startswith("-") or word == "-":
            out.append(word)
        elif word == "--":
            after = True
    return out


def write_targets(program: str, args: list[str]) -> list[str]:
    """The words `program args` writes, changes or deletes (paths only)."""
    found: list[str] = []
    names = _OUTPUT_OPTIONS.get(program, frozenset())
    found += _option_values(args, names)
    ops = [w for w in operands(args) if w not in found]
    if program in _ALL_OPERANDS:
        found += ops
    elif program in _LAST_OPERAND and len(ops) >= 2:
        found.append(ops[-1])
        if program == "rsync" and any(w.startswith("--remove-source") for w in args):
            found += ops[:-1]
    elif program == "find" and "-delete" in args:
        for word in args:
            if word.startswith(("-", "(", "!")):
                break
            found.append(word)
    elif program == "dd":
        found += [w[3:] for w in args if w.startswith("of=")]
    elif program == "uniq" and len(ops) >= 2:
        found.append(ops[1])
    elif program == "sed" and any(w.startswith(("-i", "--in-place")) for w in args):
        found += ops[1:]
    elif program == "zip" and ops:
        found.append(ops[0])
    elif program == "mount" and len(ops) >= 2:
        found.append(ops[-1])
    elif program in ("xxd",) and len(ops) >= 2:
        found.append(ops[1])
    return [w for w in found if w and w != "-" and (pathlike(w) or program in _ALL_OPERANDS
                                                    or program in _LAST_OPERAND)]


#: Programs whose operands are sources they copy whole (archives, copies, recursive greps).
_COPIERS: Final = frozenset({"tar", "zip", "cpio", "rsync", "scp", "rg", "ag", "7z", "7za",
                             "bsdtar", "pax", "dump", "xfsdump", "restic", "borg",
                             "duplicity", "rclone", "azcopy", "gsutil"})


def copied_sources(program: str, args: list[str]) -> list[str]:
    """Directories and files `program args` copies whole (for the credential check)."""
    recursive = any(w in ("-r", "-R", "-a", "--recursive", "--archive") or (
        w.startswith("-") and not w.startswith("--") and any(c in w for c in "rRa"))
        for w in args)
    if program in _COPIERS or (program in ("cp", "grep", "egrep", "fgrep", "zip")
                               and recursive):
        return [w for w in operands(args) if pathlike(w)]
    return []
