"""The programs the gate knows, by what they do.

A command is offered for approval only when the gate knows every program in it and what it does
(docs/safety.md, "What RISKY means"). This module is that knowledge as tables: programs that run
other programs (never approvable), programs that only read, programs that change the host in a
way an approver can judge from the command line, text filters that may follow a pipe, and
classes that no approver is ever offered (accounts, boot, power, disks, kernel code). A program
in none of these tables is unknown: it may still be approved, but only as one simple command
with literal arguments.
"""

from __future__ import annotations

import re
from typing import Final

#: Shells and language interpreters: whatever they run is a program the gate cannot read.
SHELLS: Final = frozenset({
    "sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "pdksh", "oksh", "loksh", "csh",
    "tcsh", "fish", "ash", "yash", "pwsh", "powershell", "rc", "es", "xonsh", "elvish", "nu",
    "posh", "sash", "scsh", "busybox", "toybox",
})
_INTERPRETER_RE: Final = re.compile(
    r"^(?:(?:ba|da|k|mk|pdk|z|c|tc|fi|a|ya|o|lok|r|s)?sh|python|pypy|jython|ipython|micropython|cpython|perl|ruby|jruby|irb|node|nodejs|deno"
    r"|bun|php|php-cgi|lua|luajit|tclsh|wish|expect|rscript|r|julia|osascript|jshell|groovy"
    r"|scala|kotlin|kotlinc|guile|racket|sbcl|clisp|ocaml|ghc|ghci|runghc|runhaskell|erl"
    r"|escript|elixir|iex|gawk|mawk|nawk|awk|busybox|java|dotnet|mono|wine|qemu-[a-z0-9_]+"
    r"|gdb|lldb|sqlite3|bc|dc|m4|make|gmake|cmake|ninja|npx|yarn|pnpm|bunx|uvx|pipx|tsx"
    r"|ts-node|vbscript|cscript|wscript|cmd|cmd\.exe|mshta|rundll32|regsvr32)"
    r"(?:[0-9][0-9.]*)?(?:-[a-z0-9.]+)?$")
#: Programs whose job is to start another program (or a command line), locally or elsewhere.
WRAPPERS: Final = frozenset({
    "sudo", "sudoedit", "doas", "su", "runuser", "pkexec", "run0", "ksu", "gosu", "su-exec",
    "env", "timeout", "xargs", "nohup", "nice", "renice", "ionice", "exec", "command",
    "builtin", "time", "watch", "strace", "ltrace", "setsid", "stdbuf", "chroot", "unbuffer",
    "script", "flock", "taskset", "chrt", "firejail", "eval", "source", ".", "then", "do",
    "else", "if", "while", "until", "!", "numactl", "fakeroot", "prlimit", "setpriv", "tmux",
    "screen", "cgexec", "bwrap", "capsh", "chpst", "runcon", "schroot", "proot",
    "systemd-nspawn", "daemonize", "start-stop-daemon", "rlwrap", "eatmydata", "nocache",
    "trickle", "cpulimit", "timelimit", "aa-exec", "newgrp", "sg", "dtach", "abduco", "byobu",
    "xvfb-run", "dbus-run-session", "flatpak-spawn", "torify", "torsocks", "proxychains",
    "proxychains4", "catchsegv", "perf", "valgrind", "faketime", "sshpass", "parallel",
    "run-parts", "systemd-run", "systemd-inhibit", "nsenter", "unshare",
    "lxc-attach", "lxc-execute", "machinectl", "runc", "ctr", "nerdctl", "sem", "rr",
    "with-lock-ex", "lckdo", "chronic", "ifne", "vipe", "pee", "setarch", "linux32",
    "linux64", "ssh", "autossh", "mosh", "rsh", "rlogin", "telnetd", "inetd", "xinetd",
    "expect", "empty", "entr", "watchexec", "reptyr", "tini", "dumb-init", "sshd", "dropbear",
    "xterm", "uxterm", "rxvt", "urxvt", "gnome-terminal", "konsole", "xfce4-terminal",
    "terminator", "alacritty", "kitty", "x-terminal-emulator", "dbus-launch", "systemd-cat",
    "coproc", "run-one", "fakechroot", "daemon", "ld.so", "cron", "crond", "anacron", "atd",
    "s6-setuidgid", "setuidgid", "envdir", "envuidgid", "softlimit", "ulimit",
})
#: Interactive editors and pagers: they read keystrokes and can start a shell.
EDITORS: Final = frozenset({
    "vi", "vim", "nvim", "view", "vimdiff", "ex", "ed", "red", "nano", "pico", "emacs",
    "emacsclient", "joe", "jed", "mcedit", "mc", "micro", "kak", "helix", "hx", "less", "more",
    "most", "pg", "man", "info", "lynx", "w3m", "links", "elinks", "visudo", "vipw", "vigr",
    "sensible-editor", "editor", "select-editor", "pager", "sensible-pager", "tig", "ranger",
    "nnn",
    "tmux", "screen", "irb", "bc", "dc",
})
#: Tunnels and remote-access agents: they open the host to someone outside it.
TUNNELS: Final = frozenset({
    "ngrok", "chisel", "frpc", "frps", "cloudflared", "bore", "lt", "inlets", "sshuttle",
    "autossh", "iodine", "dns2tcp", "ptunnel", "ptunnel-ng", "stunnel", "gost", "rathole",
    "pwncat", "pwncat-cs", "meterpreter", "msfconsole", "msfvenom", "teleport", "tsh",
    "anydesk", "teamviewer", "x11vnc", "vncserver", "xrdp",
})
#: Programs that copy a process's memory (and the secrets in it).
MEMORY_DUMPERS: Final = frozenset({"gcore", "procdump", "memdump", "avml", "lime", "volatility",
                                   "vol", "vol.py", "mimipenguin", "dumpcap-mem", "criu"})
#: Accounts, groups, passwords, sudo rights, logins: privilege escalation and persistence.
ACCOUNTS: Final = frozenset({
    "useradd", "usermod", "userdel", "adduser", "deluser", "groupadd", "groupmod", "groupdel",
    "addgroup", "delgroup", "gpasswd", "passwd", "chpasswd", "chgpasswd", "chage", "chsh",
    "chfn", "newusers", "pwconv", "pwunconv", "grpconv", "grpunconv", "vipw", "vigr",
    "visudo", "ssh-copy-id", "pam-auth-update", "authconfig", "authselect", "faillock",
    "pam_tally2", "usermod.bin", "lusermod", "luseradd", "smbpasswd", "htpasswd", "ipa",
    "kadmin", "kinit", "ktutil", "setcap", "setfattr", "update-alternatives", "alternatives",
    "chcon", "semanage", "setsebool", "setenforce", "aa-disable", "aa-complain",
    "apparmor_parser", "auditctl",
})
#: Boot loader, kernel and initramfs: a change here decides what runs at the next boot.
BOOT: Final = frozenset({
    "grub-install", "grub2-install", "grub-mkconfig", "grub2-mkconfig", "update-grub",
    "update-grub2", "grub-set-default", "grub2-set-default", "grub-reboot", "grub2-reboot",
    "grubby", "efibootmgr", "bootctl", "kernel-install", "mkinitramfs", "mkinitcpio",
    "update-initramfs", "dracut", "lilo", "extlinux", "syslinux", "kexec", "shim-install",
    "sbctl", "mokutil", "fw_setenv", "fwupdmgr", "fwupdtool", "flashrom",
})
#: Out-of-band power control.
_OOB_POWER: Final = frozenset({"ipmitool", "ipmipower", "racadm", "hponcfg", "wakeonlan",
                               "etherwake", "uhubctl"})
#: Power and runlevels.
POWER: Final = frozenset({
    "shutdown", "reboot", "halt", "poweroff", "kexec", "killall5", "rtcwake", "pm-suspend",
    "pm-hibernate", "pm-suspend-hybrid", "pm-powersave", "systemctl-reboot", "zzz", "s2ram",
    "s2disk", "hibernate", "suspend", "init", "telinit", "runit-init", "openrc-shutdown",
    "halt.sysv",
})
#: Disks, partitions, file systems and volumes.
DISKS: Final = frozenset({
    "mkfs", "mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk",
    "cgdisk", "parted", "partprobe", "blkdiscard", "mkntfs", "mkdosfs", "mkexfatfs", "hdparm",
    "sdparm", "nvme", "lvremove", "vgremove", "pvremove", "lvreduce", "lvresize", "lvcreate",
    "vgcreate", "pvcreate", "vgextend", "vgreduce", "lvconvert", "cryptsetup", "mdadm",
    "badblocks", "zpool", "zfs", "dmsetup", "sg_format", "sg_sanitize", "e2fsck", "fsck",
    "xfs_repair", "btrfs", "tune2fs", "resize2fs", "xfs_growfs", "losetup", "debugfs",
    "shred", "scrub", "wipe", "secure-delete", "srm", "sfill", "swapoff", "swapon",
})
#: Programs and shell builtins whose job is to print (or set) the environment: an environment
#: holds the secrets services are started with (AZURE_CLIENT_SECRET, IDENTITY_HEADER ...).
ENVIRONMENT: Final = frozenset({"printenv", "set", "export", "declare", "typeset", "compgen",
                                "readonly", "local", "setenv"})
#: Loading code into the kernel.
KERNEL: Final = frozenset({"insmod", "rmmod", "modprobe", "depmod", "kmod", "bpftool",
                           "bpftrace", "stap", "kpatch", "sysctl-load"})
#: Programs that read the host and change nothing (output is still redacted).
READERS: Final = frozenset({
    "ls", "dir", "vdir", "stat", "file", "du", "df", "free", "uptime", "hostname", "uname",
    "whoami", "id", "groups", "w", "who", "last", "lastb", "lastlog", "lsof", "ps", "pgrep",
    "pidof", "top", "vmstat", "iostat", "mpstat", "sar", "pidstat", "nproc", "lscpu", "lspci",
    "lsusb", "lsmod", "lsblk", "blkid", "findmnt", "journalctl", "dmesg", "getent",
    "resolvectl", "systemd-resolve", "timedatectl", "hostnamectl", "localectl", "networkctl",
    "cat", "head", "tail", "grep", "egrep", "fgrep", "zgrep", "zcat", "bzcat",
    "xzcat", "zless", "rg", "ag", "find", "locate", "which", "whereis", "type", "readlink",
    "realpath", "basename", "dirname", "md5sum", "sha1sum", "sha224sum", "sha256sum",
    "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "diff", "cmp", "comm", "tree", "wc",
    "sort", "uniq", "cut", "tr", "jq", "yq", "column", "nl", "tac", "rev", "fold", "fmt",
    "paste", "expand", "unexpand", "base64", "base32", "xxd", "od", "hexdump", "strings",
    "echo", "printf", "true", "false", "sleep", "seq", "test", "[", "date", "cal", "tty",
    "arch", "lsns", "lslocks", "lsipc", "ipcs", "ulimit", "numfmt", "iconv", "smartctl",
    "lvs", "vgs", "pvs", "lvdisplay", "vgdisplay", "pvdisplay", "runlevel", "systemd-analyze",
    "systemd-cgls", "systemd-cgtop", "systemd-detect-virt", "virt-what", "dmidecode",
    "lshw", "hwinfo", "inxi", "sensors", "ethtool", "iwconfig", "iw", "mii-tool", "ifstat",
    "nstat", "rtacct", "lnstat", "ctstat", "rtstat", "bridge", "brctl", "ovs-vsctl",
    "ovs-ofctl", "ovs-appctl", "waagent", "cloud-init", "walinuxagent", "azcmagent",
    "openssl", "certtool", "keytool", "nl-link-list", "arp", "route", "ifconfig", "ss",
    "netstat", "ip", "tc", "nft", "iptables-save", "ip6tables-save", "ipset", "conntrack",
    "ebtables", "arptables", "iptables", "ip6tables", "iptables-nft", "ip6tables-nft",
    "iptables-legacy", "ip6tables-legacy", "sysctl", "chronyc", "ntpq", "ntpstat",
    "loginctl", "busctl", "systemctl", "service", "namei", "lsattr",
    "getfacl", "getcap", "getsebool", "sestatus", "aa-status", "apparmor_status", "nmcli",
    "dpkg-query", "apt-cache", "rpm", "dpkg", "snap", "flatpak", "pip", "pip3", "npm",
    "docker", "podman", "crictl", "kubectl", "helm", "git", "az", "curl", "wget", "dig",
    "host", "nslookup", "ping", "ping6", "traceroute", "traceroute6", "tracepath",
    "tracepath6", "mtr", "tcpdump", "tshark", "nc", "ncat", "netcat", "nmap", "whois",
    "arping", "hping3", "iperf", "iperf3", "tcptraceroute", "tcping", "nping", "fping",
    "ssh-keyscan", "ssh-keygen", "ghost-forensics", "capinfos", "editcap", "mergecap",
    "dumpcap", "ngrep", "drill", "kdig", "delv", "avahi-resolve", "nbtscan", "smbclient",
    "ldapsearch", "mysql", "psql", "redis-cli", "sqlcmd", "mongosh", "mongo", "http", "xh",
    "xmllint", "envsubst", "sha256", "shasum", "zdump", "tzselect", "getconf", "locale",
    "fc-list", "logname", "users", "finger", "pinky", "mesg", "bash-completion",
})
#: Programs that change the host in ways an approver can judge from the command line (their
#: targets are still checked: no writes to system locations, no `..` or `//`).
CHANGERS: Final = frozenset({
    "rm", "rmdir", "unlink", "mv", "cp", "ln", "touch", "mkdir", "mkfifo", "chmod", "chown",
    "chgrp", "chattr", "setfacl", "truncate", "tee", "dd", "tar", "zip", "unzip", "gzip",
    "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "cpio", "install", "sed",
    "split", "csplit", "kill", "pkill", "killall", "systemctl", "service", "iptables",
    "ip6tables", "iptables-nft", "ip6tables-nft", "iptables-legacy", "ip6tables-legacy",
    "iptables-restore", "ip6tables-restore", "nft", "ufw", "firewall-cmd", "ebtables",
    "arptables", "ipset", "conntrack", "ip", "tc", "ethtool", "ifconfig", "route", "arp",
    "ifup", "ifdown", "dhclient", "dhcpcd", "networkctl", "netplan", "nmcli", "resolvectl",
    "systemd-resolve", "sysctl", "date", "hwclock", "timedatectl", "hostnamectl", "chronyc",
    "ntpdate", "mount", "umount", "apt", "apt-get", "aptitude", "yum", "dnf", "microdnf",
    "zypper", "apk", "snap", "dpkg", "rpm", "pip", "pip3", "npm", "gem", "docker", "podman",
    "crictl", "kubectl", "helm", "git", "logger", "wall", "logrotate", "journalctl",
    "dmesg", "curl", "wget", "rsync", "scp", "ss", "nscd", "unbound-control", "rndc",
    "named-checkconf", "ldconfig", "update-ca-certificates", "update-ca-trust", "waagent",
    "walinuxagent", "cloud-init", "swapoff", "swapon", "echo", "printf", "ssh-keygen",
    "openssl", "tcpdump", "tshark", "dumpcap", "loginctl", "busctl", "azcmagent",
})
#: Programs that may follow a pipe: they read their input as text and write text.
FILTERS: Final = frozenset({
    "grep", "egrep", "fgrep", "head", "tail", "sort", "uniq", "wc", "cut", "tr", "jq",
    "column", "nl", "tac", "rev", "fold", "fmt", "paste", "expand", "unexpand", "base64",
    "base32", "xxd", "od", "hexdump", "strings", "cat", "sed", "md5sum", "sha1sum",
    "sha256sum", "sha512sum", "cksum", "numfmt", "iconv", "tee",
})
#: General network clients and servers.
NETWORK_TOOLS: Final = frozenset({
    "nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "socat", "wget", "telnet", "ssh",
    "scp", "sftp", "rsync", "ftp", "openssl", "nmap", "hping3", "iperf", "iperf3", "tftp",
    "lftp", "http", "https", "xh", "aria2c", "nping", "arping", "whois", "smbclient",
    "ldapsearch", "mysql", "psql", "redis-cli", "mongo", "mongosh", "sqlcmd", "ssh-keyscan",
    "tshark", "dumpcap", "tcptraceroute", "tcping", "fping", "ngrep", "curl",
})
#: Programs that may name a block device to describe it (never to read its contents).
DEVICE_READERS: Final = frozenset({"lsblk", "blkid", "smartctl", "df", "findmnt", "udevadm",
                                   "lvs", "vgs", "pvs", "lvdisplay", "vgdisplay", "pvdisplay",
                                   "stat", "ls", "file", "mount", "findfs", "iostat"})


def is_interpreter(name: str) -> bool:
    """A shell or language interpreter, in any version spelling (`python3.11`, `pypy3`)."""
    low = name.lower()
    return low in SHELLS or bool(_INTERPRETER_RE.match(low))


def runs_programs(name: str) -> bool:
    """A program whose purpose is to run another program, a script or an interactive session."""
    low = name.lower()
    return low in WRAPPERS or is_interpreter(low) or low in EDITORS


def never_offered(name: str) -> str | None:
    """The class of a program no approver is offered, or None."""
    low = name.lower()
    if runs_programs(low):
        return "runs"
    if low in ENVIRONMENT:
        return "environment"
    for kind, table in (("accounts", ACCOUNTS), ("boot", BOOT), ("power", POWER | _OOB_POWER),
                        ("disks", DISKS), ("kernel", KERNEL), ("tunnels", TUNNELS),
                        ("memory", MEMORY_DUMPERS)):
        if low in table or (kind == "disks" and low.startswith(("mkfs.", "fsck."))):
            return kind
    return None


#: Known programs whose name, handed to an unknown program, says it may be a wrapper: it
#: could run them (`frob rm -rf /tmp/x`). Read-only probes (`mysqladmin ping`) are not here.
def dangerous_name(name: str) -> bool:
    low = name.lower()
    return (runs_programs(low) or never_offered(low) not in (None, "environment")
            or (low in CHANGERS and low not in READERS) or low in NETWORK_TOOLS
            or low in ("kill", "pkill", "killall", "chmod", "chown", "rm", "dd", "cp", "mv",
                       "tee", "systemctl", "iptables", "nft", "ip", "curl", "wget"))


def known(name: str) -> bool:
    """Does the gate know what this program does?"""
    low = name.lower()
    return (low in READERS or low in CHANGERS or low in NETWORK_TOOLS or low in FILTERS
            or never_offered(low) is not None)
