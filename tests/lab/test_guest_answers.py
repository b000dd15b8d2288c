"""What a guest says of itself, as the real tools print it (issue 29): procps' `uptime`, `top`
and `free`, the resolv.conf a VNet's DHCP gives, and `dig @168.63.129.16` beside other lines
of the same run-command script."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.lab.conftest import base_scenario
from tests.lab.test_runner_probes import runner_for, web


def _with_facts(**facts: Any) -> dict[str, Any]:
    data = base_scenario()
    data["vm_facts"] = {"web-vm-01": facts}
    return data


@pytest.mark.parametrize(("days", "shown"), [
    (12, " up 12 days,  3:04,  0 users,  load average: "),
    (1, " up 1 day,  3:04,  0 users,  load average: "),
    (0, " up  3:04,  0 users,  load average: "),
    (0.0035, " up 5 min,  0 users,  load average: "),
])
def test_uptime_is_procps_format(days: float, shown: str) -> None:
    out, _ = web(runner_for(data=_with_facts(uptime_days=days)), "uptime")
    assert re.fullmatch(r" \d\d:\d\d:\d\d" + re.escape(shown)
                        + r"\d+\.\d\d, \d+\.\d\d, \d+\.\d\d\n", out), out


def _mem_line(out: str) -> tuple[float, float, float, float]:
    m = re.search(r"MiB Mem :\s*([\d.]+) total,\s*(-?[\d.]+) free,\s*([\d.]+) used,"
                  r"\s*([\d.]+) buff/cache", out)
    assert m, out
    total, free, used, cache = (float(g) for g in m.groups())
    return total, free, used, cache


@pytest.mark.parametrize("percent", [22, 89, 90, 95, 100])
def test_top_memory_adds_up_and_is_never_negative(percent: int) -> None:
    out, _ = web(runner_for(data=_with_facts(memory_percent=percent)), "top -bn1")
    total, free, used, cache = _mem_line(out)
    assert free >= 0 and cache >= 0
    assert abs(total - free - used - cache) < 0.2
    assert abs(used - total * percent / 100) < 0.2
    assert out.startswith("top - ") and " up 12 days,  3:04, " in out


def test_free_m_matches_top() -> None:
    runner = runner_for(data=_with_facts(memory_percent=95))
    out, _ = web(runner, "free -m; top -bn1 | head -4")
    lines = out.splitlines()
    assert lines[0] == ("               total        used        free      shared  buff/cache"
                        "   available")
    mem = lines[1].split()
    assert mem[0] == "Mem:" and len(lines[1]) == 8 + 12 * 6
    total, used, free, _, cache, available = (int(x) for x in mem[1:])
    assert total == used + free + cache or abs(total - used - free - cache) <= 1
    assert 0 <= free and available >= free
    assert lines[2].split() == ["Swap:", "0", "0", "0"]
    t_total, t_free, t_used, t_cache = _mem_line(out)
    assert (round(t_total), round(t_used), round(t_free), round(t_cache)) == (
        total, used, free, cache)


def test_resolv_conf_has_the_azure_suffix_only_with_azure_dns() -> None:
    azure, _ = web(runner_for(), "cat /etc/resolv.conf")
    assert re.search(r"^search \S+\.internal\.cloudapp\.net$", azure, re.M), azure
    data = base_scenario()
    data["vnets"][0]["dns_servers"] = ["10.1.2.4"]
    custom, _ = web(runner_for(data=data), "cat /etc/resolv.conf")
    assert "cloudapp.net" not in custom
    assert custom == "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n"


def test_dig_at_azure_dns_keeps_the_rest_of_the_script() -> None:
    """A VNet with a custom DNS server that is not a DNS server: the stub times out, Azure
    DNS asked directly still answers, and every line of the script is in the output."""
    data = base_scenario()
    data["vnets"][0]["dns_servers"] = ["10.1.2.4"]  # redis-vm-01 does not listen on 53
    data["public_dns"] = {"api.contoso.example": "20.50.7.7"}
    out, _ = web(runner_for(data=data), "hostname\ndig +short api.contoso.example\n"
                 "dig @168.63.129.16 +short api.contoso.example\nuptime")
    lines = out.splitlines()
    assert lines[0] == "web-vm-01"
    assert ";; connection timed out; no servers could be reached" in lines
    assert "20.50.7.7" in lines
    assert " up 12 days," in lines[-1]
