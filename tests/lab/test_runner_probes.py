"""Probes through the runner: from the engineer's machine and inside VMs via run-command."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from lab.runner import LabAnswer, LabRunner
from lab.scenario import parse_scenario
from tests.lab.conftest import base_scenario, hub_spoke_scenario

ZONE = "privatelink.redis.cache.windows.net"
PUBLIC_NAME = "redis-prod.redis.cache.windows.net"


def private_endpoint(linked: list[str]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["private_dns_zones"] = [{"name": ZONE, "resource_group": "rg-prod-net",
                                      "linked_vnets": linked, "records": {"redis-prod":
                                                                          "10.1.2.4"}}]
        data["public_dns"] = {PUBLIC_NAME: "20.50.1.10"}
    return change


def runner_for(*changes: Callable[[dict[str, Any]], None],
               data: dict[str, Any] | None = None) -> LabRunner:
    scenario = data if data is not None else base_scenario()
    for change in changes:
        change(scenario)
    return LabRunner(parse_scenario(scenario, "probes.yaml"))


def local(runner: LabRunner, command: str) -> LabAnswer:
    return runner.run(shlex.split(command))


def in_vm(runner: LabRunner, vm: str, group: str, script: str) -> tuple[str, str]:
    answer = runner.run(["az", "vm", "run-command", "invoke", "-g", group, "-n", vm,
                         "--command-id", "RunShellScript", "--scripts", script])
    assert answer.exit_code == 0, answer.stderr
    message = json.loads(answer.stdout)["value"][0]["message"]
    match = re.fullmatch(r"Enable succeeded: \n\[stdout\]\n(.*)\n\[stderr\]\n(.*)", message,
                         re.DOTALL)
    assert match, message
    return match.group(1), match.group(2)


def web(runner: LabRunner, script: str) -> tuple[str, str]:
    return in_vm(runner, "web-vm-01", "rg-prod-app", script)


@pytest.mark.parametrize(("linked", "address"), [([], "20.50.1.10"), (["vnet-prod"], "10.1.2.4")])
def test_in_vm_nslookup_depends_on_the_zone_link(linked: list[str], address: str) -> None:
    out, _ = web(runner_for(private_endpoint(linked)), f"nslookup {PUBLIC_NAME}")
    assert out.startswith("Server:\t\t127.0.0.53\nAddress:\t127.0.0.53#53\n\n"
                          "Non-authoritative answer:\n")
    assert out.rstrip().endswith(f"Address: {address}")
    short, _ = web(runner_for(private_endpoint(linked)), f"dig +short {PUBLIC_NAME}")
    assert short.splitlines()[-1] == address
    if not linked:  # publicly too, the name is a CNAME to its privatelink alias
        assert short.splitlines()[0] == f"redis-prod.{ZONE}."


def test_engineer_machine_resolves_public_dns_only() -> None:
    runner = runner_for(private_endpoint(["vnet-prod"]))
    answer = local(runner, f"dig {PUBLIC_NAME}")
    assert answer.exit_code == 0
    assert "status: NOERROR" in answer.stdout
    assert re.search(r"^;; ANSWER SECTION:$", answer.stdout, re.MULTILINE)
    assert re.search(r"\tA\t20\.50\.1\.10$", answer.stdout, re.MULTILINE)
    missing = local(runner, "nslookup nope.contoso.com")
    assert missing.exit_code == 1
    assert "** server can't find nope.contoso.com: NXDOMAIN" in missing.stdout
    assert "status: NXDOMAIN" in local(runner, "dig redis-vm-01").stdout


def test_unreachable_custom_dns_times_out_like_dig() -> None:
    def custom_dns(data: dict[str, Any]) -> None:
        data["vnets"][0]["dns_servers"] = ["10.1.2.4"]  # redis-vm-01 does not listen on 53
    out, _ = web(runner_for(custom_dns), "dig redis-vm-01; nslookup redis-vm-01")
    assert out.count(";; connection timed out; no servers could be reached") == 2
    out, _ = web(runner_for(custom_dns), "dig redis-vm-01 > /dev/null || echo exit=$?")
    assert out == "exit=9\n"
    answer = runner_for(custom_dns).run([
        "az", "vm", "run-command", "invoke", "-g", "rg-prod-app", "-n", "web-vm-01",
        "--command-id", "RunShellScript", "--scripts", "echo $HOME"])
    assert answer.exit_code == 2  # variables are not modelled: said, not guessed


@pytest.mark.parametrize(("command", "code", "stream", "text"), [
    ("ping -c 4 10.1.2.4", 1, "stdout",
     "4 packets transmitted, 0 received, 100% packet loss"),
    ("curl -sS --connect-timeout 5 http://10.1.2.4:6379/", 28, "stderr",
     "curl: (28) Connection timed out after 5001 milliseconds"),
    ("curl -s --connect-timeout 5 http://10.1.2.4:6379/", 28, "stderr", ""),
    (f"curl -m 3 https://{PUBLIC_NAME}", 28, "stderr", "curl: (28) Connection timed out after"),
    ("curl http://no-such-host.example", 6, "stderr",
     "curl: (6) Could not resolve host: no-such-host.example"),
    ("nc -zv -w 2 10.1.2.4 6379", 1, "stderr",
     "nc: connect to 10.1.2.4 port 6379 (tcp) timed out: Operation now in progress"),
    ("traceroute -n 10.1.2.4", 0, "stdout", " 1  * * *"),
    ("mtr --report -c 3 10.1.2.4", 0, "stdout", "???"),
    ("ping -c 2 198.51.100.77", 2, "stderr", "not modelled by the lab: "),
])
def test_engineer_machine_probes_time_out_towards_the_estate(command: str, code: int,
                                                             stream: str, text: str) -> None:
    answer = local(runner_for(private_endpoint(["vnet-prod"])), command)
    assert answer.exit_code == code
    assert text in getattr(answer, stream)
    if text == "":
        assert answer.stderr == ""


def test_in_vm_tcp_probes_see_listeners_denies_and_resets() -> None:
    out, err = web(runner_for(), "nc -zv -w 3 10.1.2.4 6379; nc -zv -w 3 10.1.2.4 6380")
    assert err.splitlines() == [
        "Connection to 10.1.2.4 6379 port [tcp/*] succeeded!",
        "nc: connect to 10.1.2.4 port 6380 (tcp) failed: Connection refused"]
    _, err = web(runner_for(lambda d: d["nsgs"][1]["rules"].append(
        {"name": "deny-web-to-redis", "priority": 100, "direction": "Inbound", "access": "Deny",
         "protocol": "Tcp", "source": "10.1.1.0/24", "source_ports": "*", "destination": "*",
         "destination_ports": "6379"})), "curl -sS --connect-timeout 4 http://10.1.2.4:6379")
    assert err == "curl: (28) Connection timed out after 4001 milliseconds\n"
    _, err = web(runner_for(), "curl -sS http://10.1.2.4:6380")
    assert err == ("curl: (7) Failed to connect to 10.1.2.4 port 6380 after 1 ms: "
                   "Connection refused\n")


def test_a_successful_http_connection_does_not_invent_the_answer() -> None:
    answer = runner_for().run(["az", "vm", "run-command", "invoke", "-g", "rg-prod-app", "-n",
                               "web-vm-01", "--command-id", "RunShellScript", "--scripts",
                               "curl -s http://10.1.2.4:6379"])
    assert answer.exit_code == 2
    assert answer.stderr.startswith("not modelled by the lab: what the service on redis-vm-01 "
                                    "port 6379 answers")


def test_no_listener_fault_closes_the_port_and_hides_it_from_ss() -> None:
    def fault(data: dict[str, Any]) -> None:
        data["faults"] = [{"kind": "no_listener", "vm": "redis-vm-01", "port": 6379}]
    runner = runner_for(fault)
    _, err = web(runner, "nc -zv -w 3 10.1.2.4 6379")
    assert "Connection refused" in err
    out, _ = in_vm(runner, "redis-vm-01", "rg-prod-data", "ss -ltn")
    assert ":6379" not in out
    out, _ = in_vm(runner_for(), "redis-vm-01", "rg-prod-data", "ss -ltnp | grep 6379")
    assert out.startswith("LISTEN") and "redis-server" in out


def test_loss_fault_loses_some_pings_and_the_answer_is_stable() -> None:
    data = hub_spoke_scenario()
    data["faults"] = [{"kind": "loss", "at": "nva-01", "percent": 30}]
    runner = runner_for(data=data)
    first = in_vm(runner, "app-vm-01", "rg-spoke1", "ping -c 20 10.2.1.4")
    again = in_vm(runner, "app-vm-01", "rg-spoke1", "ping -c 20 10.2.1.4")
    assert first == again
    summary = re.search(r"20 packets transmitted, (\d+) received, ([\d.]+)% packet loss",
                        first[0])
    assert summary is not None
    assert 0 < int(summary.group(1)) < 20
    assert "ttl=63" in first[0]  # one forwarding hop


def test_guest_views_route_table_link_mtu_and_load() -> None:
    data = base_scenario()
    data["vms"][0]["mtu"] = 1400
    data["vm_facts"] = {"web-vm-01": {"cpu_percent": 97}}
    out, _ = web(runner_for(data=data), "ip route; ip link show eth0; uptime; top -bn1 | head -3")
    lines = out.splitlines()
    assert lines[0].startswith("default via 10.1.1.1 dev eth0 proto dhcp src 10.1.1.4")
    assert lines[1].startswith("10.1.1.0/24 dev eth0 proto kernel scope link src 10.1.1.4")
    assert "eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1400" in out
    assert re.search(r"%Cpu\(s\): 87\.3 us,\s+9\.7 sy", out)


def test_dont_fragment_ping_beyond_the_guest_mtu_fails_locally() -> None:
    out, _ = web(runner_for(), "ping -c 2 -M do -s 1472 10.1.2.4; ping -c 1 -M do -s 1473 10.1.2.4")
    assert "2 packets transmitted, 2 received, 0% packet loss" in out
    assert "ping: local error: message too long, mtu=1500" in out


def test_script_operators_and_filters() -> None:
    out, err = web(runner_for(), "nc -z -w 1 10.1.2.4 6380 && echo open || echo closed; "
                                 "ss -ltn | grep -c LISTEN; hostname; cat /etc/resolv.conf "
                                 "| head -1")
    assert out.splitlines() == ["closed", "2", "web-vm-01", "nameserver 127.0.0.53"]
    assert err == ""


@pytest.mark.parametrize(("args", "kept"), [
    ("", [15]),
    ("--offset 10m", []),
    ("--offset 1d", [15, 60 * 20]),
    ("--start-time 2026-11-19T12:00:00Z", [15, 60 * 20]),
    ("--start-time 2026-11-19T12:00:00Z --end-time 2026-11-20T14:00:00Z", [60 * 20]),
    ("--end-time 2026-11-20T14:10:00Z --offset 30m", [15]),
])
def test_activity_log_window_and_order(args: str, kept: list[int]) -> None:
    def older(data: dict[str, Any]) -> None:
        data["activity_log"].append({"ago": "20h", "caller": "ci@contoso.com",
                                     "status": "Succeeded",
                                     "operation": "Microsoft.Compute/virtualMachines/write",
                                     "resource": "api-vm-02"})
    answer = runner_for(older).run(["az", "monitor", "activity-log", "list", *args.split()])
    assert answer.exit_code == 0, answer.stderr
    events = json.loads(answer.stdout)
    stamps = [e["eventTimestamp"] for e in events]
    assert stamps == sorted(stamps, reverse=True)
    minutes = {"2026-11-20T14:05:00+00:00": 15, "2026-11-19T18:20:00+00:00": 60 * 20}
    assert [minutes[s] for s in stamps] == kept
    for event in events:
        if event["caller"] == "alice@contoso.com":
            assert event["resourceId"].endswith(
                "/networkSecurityGroups/nsg-data/securityRules/allow-web-to-redis")
            assert event["operationName"]["value"] == (
                "Microsoft.Network/networkSecurityGroups/securityRules/write")
        else:
            assert event["resourceId"].endswith("/virtualMachines/api-vm-02")
