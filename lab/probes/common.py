"""What every probe shares: its output, where it runs from, name resolution, seeded randomness.

A probe runs either on the engineer's machine (``vm`` None: outside every VNet, resolving
through public DNS only) or inside a VM of the scenario (through `az vm run-command invoke`).
Randomness (which pings a loss fault drops) is seeded from the scenario and the command, so the
same command always gets the same answer.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, ip_address
from typing import TypeVar

from lab.az.catalog import Catalog
from lab.model import Fault, Vm
from lab.network import DnsAnswer, NotModelled

N = TypeVar("N", int, float)
LOCAL_HOSTNAME = "engineer-laptop"
#: the stub resolver every Ubuntu guest (and the engineer's machine) asks: systemd-resolved.
STUB_RESOLVER = "127.0.0.53"


@dataclass(frozen=True)
class ProbeOutput:
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.05


@dataclass(frozen=True)
class Vantage:
    """Where a probe runs: the catalog of the estate and the VM (None = engineer's machine)."""

    cat: Catalog
    vm: Vm | None

    @property
    def vm_name(self) -> str | None:
        return self.vm.name if self.vm else None

    def rng(self, argv: Sequence[str]) -> random.Random:
        seed = "|".join([self.cat.scenario.name, self.vm_name or "-", *argv])
        return random.Random(zlib.crc32(seed.encode()))

    def resolve(self, name: str, qtype: str = "A") -> DnsAnswer:
        return self.cat.estate.resolve(name, self.vm_name, qtype)


def as_ip(text: str) -> IPv4Address | None:
    try:
        addr = ip_address(text)
    except ValueError:
        return None
    return addr if isinstance(addr, IPv4Address) else None


@dataclass(frozen=True)
class Target:
    """A host argument after resolution: the address, or why there is none."""

    host: str
    ip: IPv4Address | None
    failure: str | None  # "NXDOMAIN" | "TIMEOUT" | None

    @property
    def is_name(self) -> bool:
        return as_ip(self.host) is None


def resolve_target(v: Vantage, host: str) -> Target:
    literal = as_ip(host)
    if literal is not None:
        return Target(host, literal, None)
    if not host or any(c in host for c in "/ @:"):
        return Target(host, None, "NXDOMAIN")
    answer = v.resolve(host)
    if answer.rcode == "NOERROR" and answer.addresses:
        return Target(host, answer.addresses[0], None)
    return Target(host, None, "TIMEOUT" if answer.rcode == "TIMEOUT" else "NXDOMAIN")


def gai_error(failure: str | None) -> str:
    """getaddrinfo's text for a failed lookup."""
    return ("Temporary failure in name resolution" if failure == "TIMEOUT"
            else "Name or service not known")


def loss_rate(faults: Sequence[Fault]) -> float:
    """Probability that one packet crossing every loss fault once is dropped."""
    keep = 1.0
    for fault in faults:
        if fault.kind == "loss" and fault.percent:
            keep *= 1.0 - fault.percent / 100.0
    return 1.0 - keep


def mtu_fault(faults: Sequence[Fault]) -> Fault | None:
    return min((f for f in faults if f.kind == "mtu" and f.mtu),
               key=lambda f: f.mtu or 0, default=None)


def not_modelled(what: str) -> NotModelled:
    return NotModelled(what)


def _number(kind: Callable[[str], N], value: str, program: str, option: str) -> N:
    try:
        return kind(value)
    except ValueError:
        raise NotModelled(f"{program} {option} {value}: not a number the lab understands") \
            from None


def int_arg(value: str, program: str, option: str) -> int:
    return _number(int, value, program, option)


def float_arg(value: str, program: str, option: str) -> float:
    return _number(float, value, program, option)


def short_options(program: str, argv: Sequence[str], with_value: str,
                  flags: str) -> tuple[dict[str, str], set[str], list[str]]:
    """A command's short options the getopt way (clustered ``-zv``, a value attached ``-w3``
    or next ``-w 3``) and its other words in order; an option the lab does not know is
    NotModelled rather than guessed at."""
    values: dict[str, str] = {}
    seen: set[str] = set()
    words: list[str] = []
    args = list(argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not (arg.startswith("-") and len(arg) > 1):
            words.append(arg)
            continue
        for j, ch in enumerate(arg[1:], start=1):
            if ch in with_value:
                value = arg[j + 1:] or (args[i] if i < len(args) else "")
                if not arg[j + 1:]:
                    i += 1
                values[ch] = value
                break
            if ch not in flags:
                raise NotModelled(f"{program} option -{ch}")
            seen.add(ch)
    return values, seen, words
