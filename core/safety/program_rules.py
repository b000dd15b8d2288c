"""The allowlisted programs and the rule that judges each: the SAFE side of the gate.

`PROGRAM_RULES` maps a bare program name to its Tier 1/Tier 2 rule (one module per family under
`core/safety/rules/`). Each rule takes the parsed argv and a `Context` and returns a Verdict:
SAFE when every option is on the program's allowlist, RISKY (with a rule id saying why) when
not; the approvability judge (`approvable.py`) then decides whether a RISKY form may be offered.
"""

from __future__ import annotations

from collections.abc import Callable

from core.safety.rules.az import classify_az
from core.safety.rules.base import Context
from core.safety.rules.curl import classify_curl
from core.safety.rules.files import classify_cat, classify_forensics
from core.safety.rules.hostinfo import (
    classify_date,
    classify_ethtool,
    classify_nft,
    classify_openssl,
    classify_tc,
)
from core.safety.rules.hostnet import classify_getent, classify_iptables, classify_resolvectl
from core.safety.rules.iproute import classify_ip, classify_netstat, classify_ss
from core.safety.rules.probes import (
    classify_dig,
    classify_host,
    classify_mtr,
    classify_nslookup,
    classify_ping,
    classify_tracepath,
    classify_traceroute,
)
from core.safety.rules.tcpdump import classify_tcpdump
from core.safety.verdict import Verdict

RuleFn = Callable[[tuple[str, ...], Context], Verdict]

PROGRAM_RULES: dict[str, RuleFn] = {
    "ping": classify_ping,
    "ping6": classify_ping,
    "traceroute": classify_traceroute,
    "traceroute6": classify_traceroute,
    "tracepath": classify_tracepath,
    "tracepath6": classify_tracepath,
    "mtr": classify_mtr,
    "dig": classify_dig,
    "nslookup": classify_nslookup,
    "host": classify_host,
    "curl": classify_curl,
    "ip": classify_ip,
    "ss": classify_ss,
    "netstat": classify_netstat,
    "tcpdump": classify_tcpdump,
    "cat": classify_cat,
    "ghost-forensics": classify_forensics,
    "az": classify_az,
    "tc": classify_tc,
    "ethtool": classify_ethtool,
    "nft": classify_nft,
    "date": classify_date,
    "openssl": classify_openssl,
    "iptables": classify_iptables,
    "ip6tables": classify_iptables,
    "iptables-nft": classify_iptables,
    "ip6tables-nft": classify_iptables,
    "iptables-legacy": classify_iptables,
    "ip6tables-legacy": classify_iptables,
    "resolvectl": classify_resolvectl,
    "getent": classify_getent,
}

__all__ = ["PROGRAM_RULES", "Context", "RuleFn"]
