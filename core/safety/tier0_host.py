"""Tier 0: destruction of the host -- disks and volumes, the firewall, power -- and script
engines inside network tools. One function per family; `host_check` asks each in turn.

Each takes the program's basename and the (lowercased, dequoted) words after it, as Tier 0's
hostile reading produced them, and returns (rule id, what) or None.
"""

from __future__ import annotations

from typing import Final

Hit = tuple[str, str] | None

_FIREWALLS: Final = frozenset({"iptables", "ip6tables", "iptables-nft", "ip6tables-nft",
                               "iptables-legacy", "ip6tables-legacy", "ebtables", "arptables"})
_HDPARM_DANGER: Final = ("--security-erase", "--security-erase-enhanced", "--security-set-pass",
                         "--security-disable", "--trim-sector-ranges", "--write-sector",
                         "--make-bad-sector", "--fwdownload", "--dco-restore", "--dco-freeze",
                         "--user-master", "-n", "--yes-i-know-what-i-am-doing")
_NVME_DANGER: Final = frozenset({"format", "sanitize", "delete-ns", "detach-ns", "fw-download",
                                 "fw-commit", "fw-activate", "write", "write-zeroes",
                                 "write-uncor", "dsm", "security-send", "ns-rescan",
                                 "create-ns", "reset", "subsystem-reset"})
_CRYPTSETUP_DANGER: Final = frozenset({"erase", "luksErase".lower(), "luksformat",
                                       "lukskillslot", "luksremovekey", "reencrypt", "format"})
_MDADM_READ: Final = frozenset({"--detail", "-d", "--examine", "-e", "--query", "-q",
                                "--detail-platform", "--brief", "-b", "--scan", "-s",
                                "--verbose", "-v"})
_POWER_WORDS: Final = frozenset({"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate",
                                 "hybrid-sleep", "suspend-then-hibernate", "soft-reboot",
                                 "rescue", "emergency", "isolate"})
_POWER_TARGETS: Final = ("reboot.target", "poweroff.target", "halt.target", "kexec.target",
                         "rescue.target", "emergency.target", "ctrl-alt-del.target",
                         "soft-reboot.target", "suspend.target", "hibernate.target")
_DBUS_POWER: Final = ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate",
                      "killunit", "stopunit", "isolate", "terminatesession", "terminateuser",
                      "killsession", "killuser", "startunit", "restartunit", "setrebootparameter")
_LOGINCTL_DANGER: Final = frozenset({"poweroff", "reboot", "halt", "kexec", "suspend",
                                     "hibernate", "hybrid-sleep", "suspend-then-hibernate",
                                     "terminate-session", "terminate-user", "terminate-seat",
                                     "kill-session", "kill-user"})


def _disk(name: str, rest: list[str]) -> Hit:
    if name == "hdparm" and any(w.split("=")[0] in _HDPARM_DANGER for w in rest):
        return "T0.host_destruction", "hdparm erasing, writing or re-sizing a disk"
    if name == "nvme" and any(w in _NVME_DANGER for w in rest[:2]):
        return "T0.host_destruction", "nvme formatting, sanitizing or writing a namespace"
    if name in ("lvremove", "vgremove", "pvremove", "lvreduce"):
        return "T0.host_destruction", f"'{name}' removes or shrinks a volume"
    if name == "cryptsetup" and any(w in _CRYPTSETUP_DANGER for w in rest):
        return "T0.host_destruction", "cryptsetup destroying keyslots or a volume"
    if name == "mdadm" and rest and not all(w in _MDADM_READ or not w.startswith("-")
                                            for w in rest):
        return "T0.host_destruction", "mdadm changing a RAID array"
    if name == "badblocks" and any(w.startswith("-") and "w" in w for w in rest):
        return "T0.host_destruction", "badblocks -w overwrites the disk"
    if name in ("zpool", "zfs") and any(w in ("destroy", "labelclear") for w in rest[:2]):
        return "T0.host_destruction", f"'{name} destroy' removes a pool or dataset"
    if name == "dmsetup" and any(w in ("remove", "remove_all", "wipe_table", "clear")
                                 for w in rest[:2]):
        return "T0.host_destruction", "dmsetup removing device-mapper devices"
    if name in ("sg_format", "sg_sanitize"):
        return "T0.host_destruction", f"'{name}' formats or sanitizes a disk"
    return None


def _firewall(name: str, rest: list[str]) -> Hit:
    if name in _FIREWALLS:
        appends = any(w in ("-a", "--append", "-i", "--insert", "-r", "--replace")
                      for w in rest)
        for index, word in enumerate(rest):
            # words are lowercased: -F (flush) reads as -f, which is also "fragment" in rules
            if word == "--flush" or (word == "-f" and not appends):
                return "T0.host_destruction", f"'{name}' flushing the firewall"
            if word in ("-p", "--policy") and any(
                    w in ("drop", "reject") for w in rest[index + 1:index + 3]):
                return "T0.host_destruction", f"'{name}' setting a default-drop policy"
    if name == "nft" and (any(w in ("flush",) for w in rest) or (
            "policy" in rest and "drop" in rest) or rest[:2] in (["delete", "table"],
                                                                 ["destroy", "table"])):
        return "T0.host_destruction", "nft flushing rules or dropping by default"
    if name == "ufw" and (rest[:1] in (["reset"], ["disable"]) or (
            rest[:1] == ["default"] and any(w in ("deny", "reject") for w in rest))):
        return "T0.host_destruction", "ufw resetting or closing the firewall"
    if name == "firewall-cmd" and any(
            w.startswith(("--panic-on", "--set-default-zone=drop", "--set-default-zone=block",
                          "--set-target=drop")) for w in rest):
        return "T0.host_destruction", "firewall-cmd dropping all traffic"
    return None


def _power(name: str, rest: list[str]) -> Hit:
    if name == "systemctl" and (any(w in _POWER_WORDS for w in rest)
                                or any(w.endswith(_POWER_TARGETS) for w in rest)):
        return "T0.power", "systemctl changing the host's power state or target"
    if name == "kill" and rest and rest[-1] == "1" and "-l" not in rest:
        return "T0.power", "a signal to PID 1 (init) brings the host down"
    if name in ("pkill", "killall") and any(w in ("init", "systemd") for w in rest):
        return "T0.power", f"'{name}' signalling init"
    if name == "loginctl" and any(w in _LOGINCTL_DANGER for w in rest[:2]):
        return "T0.power", "loginctl powering off the host or ending sessions"
    if name in ("busctl", "dbus-send", "gdbus", "qdbus") and any(
            p in w.replace("_", "") for w in rest for p in _DBUS_POWER):
        return "T0.power", f"'{name}' asking systemd or logind to change the power state"
    return None


def _script_engine(name: str, rest: list[str]) -> Hit:
    if name == "tshark" and any("lua_script" in w for w in rest):
        return "T0.script_engine", "tshark -X lua_script runs a Lua program"
    if name == "nmap" and any(w.startswith("--script") or w == "-a" or (
            w.startswith("-s") and "c" in w[2:]) for w in rest):
        return "T0.script_engine", "nmap scripts (NSE) run Lua programs"
    return None


def host_check(name: str, rest: list[str]) -> Hit:
    """The first host-destruction or script-engine rule that matches, or None."""
    for check in (_disk, _firewall, _power, _script_engine):
        hit = check(name, rest)
        if hit is not None:
            return hit
    return None
