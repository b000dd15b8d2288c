"""The lab's probes: the network tools an engineer runs locally and Ghost runs inside VMs.

``LOCAL`` are the programs the engineer's machine (outside every VNet) answers; ``GUEST`` those
a VM's shell answers through `az vm run-command invoke`. Each takes a :class:`Vantage` and an
argv and returns a :class:`ProbeOutput` shaped like the real tool's output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lab.probes import dns, guest, icmp, tcp
from lab.probes.common import ProbeOutput, Vantage

Probe = Callable[[Vantage, Sequence[str]], ProbeOutput]

LOCAL: dict[str, Probe] = {
    "ping": icmp.ping, "dig": dns.dig, "nslookup": dns.nslookup, "curl": tcp.curl,
    "nc": tcp.nc, "traceroute": icmp.traceroute, "mtr": icmp.mtr,
}
GUEST: dict[str, Probe] = {
    **LOCAL, "ss": guest.ss, "ip": guest.ip, "top": guest.top, "uptime": guest.uptime,
    "cat": guest.cat, "hostname": guest.hostname, "free": guest.free,
}
GUEST.pop("mtr")

__all__ = ["GUEST", "LOCAL", "Probe", "ProbeOutput", "Vantage"]
