"""Lab captures carry what the forensics engine reads on Azure: TTLs that forwarding VMs
decrement, per-host IP IDs, and DNS as UDP queries answered (or not) as the estate says.

Packets are decoded with scapy (an independent reader); the findings come from the real
forensics engine, through the ``ghost-forensics`` command for the shipped scenarios.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.dns import DNS
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Ether

from forensics.engine import analyze_capture
from forensics.semantic import build_semantic
from lab.network import Estate
from lab.pcap import PcapWriter
from lab.scenario import Scenario, find_scenario, load_scenario, parse_scenario
from lab.traffic import capture_frames

from .wiring_fixtures import scenario_data

APP, DB, NVA, FAR, STOPPED = "10.20.1.4", "10.20.2.4", "10.20.0.4", "10.20.3.4", "10.20.2.6"
AZURE_DNS = "168.63.129.16"
PG, PG_ALIAS, PG_PRIVATE = ("pg-1.postgres.database.azure.com",
                            "pg-1.privatelink.postgres.database.azure.com", "10.20.2.8")
RST = 0x04


def _packets(scenario: Scenario, vm: str, duration: float = 20) -> list[tuple[int, Any]]:
    frames = capture_frames(scenario, Estate(scenario), vm, duration,
                            start_s=scenario.now.timestamp())
    return [(ts, Ether(frame)[IP]) for ts, frame in frames]


@cache
def _shipped(name: str, vm: str) -> tuple[tuple[int, bytes], ...]:
    sc = load_scenario(find_scenario(name))
    return tuple(capture_frames(sc, Estate(sc), vm, 60, start_s=sc.now.timestamp()))


def _write(path: Path, frames: tuple[tuple[int, bytes], ...]) -> Path:
    writer = PcapWriter()
    for ts, frame in frames:
        writer.add(ts, frame)
    writer.write(path)
    return path


def _ghost_forensics(capture: Path, out: Path) -> dict[str, Any]:
    """The production engine, run as Ghost runs it: a separate process."""
    done = subprocess.run([sys.executable, "-m", "forensics", str(capture), "--semantic-dir",
                           str(out), "--report-dir", str(out)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(
        (out / f"{capture.stem}_semantic.json").read_text(encoding="utf-8"))
    return doc


def _ids(doc: dict[str, Any]) -> list[str]:
    return [f["id"] for f in doc["findings"]]


def _wiring(**changes: Any) -> Scenario:
    return parse_scenario(scenario_data(**changes), "wiring-test.yaml")


# ------------------------------------------------------------------------------ TTL, IP ID
def test_a_forwarding_vm_decrements_the_ttl_once_and_the_sdn_never_does() -> None:
    sc = _wiring()
    at_far = [ip for _, ip in _packets(sc, "far-1") if ip.src == APP]
    at_nva = [ip for _, ip in _packets(sc, "nva-1") if ip.src == APP]
    at_app = [ip for _, ip in _packets(sc, "app-1") if ip.dst == FAR]
    assert at_far and {ip.ttl for ip in at_far} == {63}, "one NVA on the way"
    assert {ip.ttl for ip in at_nva} == {64}, "the NVA records them as they arrive"
    assert {ip.ttl for ip in at_app} == {64}
    direct = [ip for _, ip in _packets(sc, "db-1") if ip.src == APP]
    assert direct and {ip.ttl for ip in direct} == {64}, "Azure's SDN does not decrement"


def test_each_sender_numbers_its_packets_in_sequence() -> None:
    sc = _wiring()
    by_socket: dict[tuple[str, int], list[int]] = {}
    for _, ip in _packets(sc, "db-1"):
        if TCP in ip and ip.src == APP and ip[TCP].dport == 5432:
            by_socket.setdefault((ip.src, ip[TCP].sport), []).append(ip.id)
    assert len(by_socket) > 3
    starts = set()
    for ids in by_socket.values():
        assert all((b - a) & 0xFFFF == 1 for a, b in zip(ids, ids[1:], strict=False)), ids
        starts.add(ids[0])
    assert len(starts) == len(by_socket), "each socket starts somewhere else, as Linux does"


def test_the_nva_reset_capture_shows_injected_resets_to_the_forensics_engine(
        tmp_path: Path) -> None:
    frames = _shipped("nva-reset", "web-vm-01")
    packets = [Ether(f)[IP] for _, f in frames]
    resets = [ip for ip in packets if TCP in ip and ip[TCP].flags & RST]
    genuine = [ip for ip in packets if ip.src == "10.2.1.4" and not ip[TCP].flags & RST]
    assert resets and genuine
    assert {ip.ttl for ip in resets} == {64}, "the firewall's own initial TTL"
    assert {ip.ttl for ip in genuine} == {63}, "the server's packets crossed the firewall"
    doc = _ghost_forensics(_write(tmp_path / "nva_reset_web.pcap", frames), tmp_path)
    top = doc["findings"][0]
    assert top["id"] == "tcp_injected_reset", _ids(doc)
    assert "claim to come from 10.2.1.4" in top["title"] and "TTL 64" in top["detail"]
    assert "IP ID" in top["detail"], "the RST's ID does not fit the server's sequence either"
    server = _ghost_forensics(_write(tmp_path / "nva_reset_reports.pcap",
                                     _shipped("nva-reset", "reports-vm-01")), tmp_path)
    assert "tcp_injected_reset" in _ids(server)


# ------------------------------------------------------------------------------------ DNS
def test_custom_dns_broken_shows_unanswered_udp_queries_not_tcp_refusals(
        tmp_path: Path) -> None:
    frames = _shipped("custom-dns-broken", "app-vm-01")
    packets = [Ether(f)[IP] for _, f in frames]
    assert not [ip for ip in packets if TCP in ip], "DNS is UDP"
    queries = [ip for ip in packets if UDP in ip and ip[UDP].dport == 53]
    assert queries and all(ip[DNS].qr == 0 and ip[DNS].rd == 1 for ip in queries)
    assert not [ip for ip in packets if UDP in ip and ip[UDP].sport == 53], "no answer"
    asked = {ip[DNS].qd[0].qname.decode().rstrip(".") for ip in queries}
    assert "kv-prod-01.vault.azure.net" in asked, "names the estate resolves"
    unreachable = [ip for ip in packets if ICMP in ip]
    assert unreachable and all((ip[ICMP].type, ip[ICMP].code) == (3, 3)
                               and ip.src == "10.0.2.4" for ip in unreachable)
    doc = _ghost_forensics(_write(tmp_path / "dns_broken_app.pcap", frames), tmp_path)
    ids = _ids(doc)
    assert ids[0] == "dns_port_unreachable" and "tcp_connection_refused" not in ids, ids
    assert "dns_unanswered" not in ids, "the host's kernel answered every query it could"
    refused = doc["findings"][0]
    assert refused["title"] == "DNS refused by the host 10.0.2.4: nothing listens on port 53"
    assert doc["dns"]["retries"] > 0, "the resolver asks again before it gives up"


def test_a_linux_host_rate_limits_its_port_unreachables() -> None:
    sc = load_scenario(find_scenario("custom-dns-broken"))
    timed = _packets(sc, "dns-vm-01", 60)
    icmp = [ts for ts, ip in timed if ICMP in ip]
    span_s = (icmp[-1] - icmp[0]) / 1e9
    assert len(icmp) <= 6 + span_s + 1, "a burst of 6, then one a second"
    queries = [ts for ts, ip in timed if UDP in ip and ip[UDP].dport == 53]
    assert len(icmp) < len(queries) / 2


def _dns(vm: str, to: str, **changes: Any) -> list[tuple[int, Any]]:
    data = scenario_data(**changes)
    data["traffic"] = [{"from": "app-1", "to": to, "port": 53, "rate": 1}]
    data["private_dns_zones"][0]["linked_vnets"] = ["vnet-t"]
    data["public_dns"]["pg-9.postgres.database.azure.com"] = "20.61.14.9"
    return _packets(parse_scenario(data, "wiring-test.yaml"), vm)


def _answers(packets: list[tuple[int, Any]]) -> dict[str, tuple[int, list[str]]]:
    """name -> (rcode, the A records of the answer) for every response in the capture."""
    out = {}
    for _, ip in packets:
        if UDP in ip and ip[UDP].sport == 53:
            dns = ip[DNS]
            records = [dns.an[i] for i in range(dns.ancount)]
            out[dns.qd[0].qname.decode().rstrip(".")] = (
                dns.rcode, [str(r.rdata) for r in records if r.type == 1])
    return out


@pytest.mark.parametrize("server", [AZURE_DNS, "db-1"])
def test_a_healthy_resolver_answers_noerror_with_the_estate_s_address(
        server: str, tmp_path: Path) -> None:
    vms = scenario_data()["vms"]
    next(v for v in vms if v["name"] == "db-1")["listens"] = [5432, 6380, 53]
    packets = _dns("app-1", server, vms=vms)
    answers = _answers(packets)
    assert answers[PG] == (0, [PG_PRIVATE]), "the linked private zone, through its CNAME"
    assert answers[PG_ALIAS] == (0, [PG_PRIVATE])
    assert answers["db-1"] == (0, [DB]), "a VM of the same VNet by its bare name"
    assert answers["pg-9.postgres.database.azure.com"][0] == 3, "NXDOMAIN: the zone has no pg-9"
    queries = [ip for _, ip in packets if UDP in ip and ip[UDP].dport == 53]
    responses = [ip for _, ip in packets if UDP in ip and ip[UDP].sport == 53]
    assert len(queries) == len(responses), "every query answered once, no retry"
    assert all(r[DNS].id == q[DNS].id for q, r in zip(queries, responses, strict=True))
    writer = PcapWriter()
    for ts, ip in packets:
        writer.add(ts, bytes(Ether() / ip))
    writer.write(tmp_path / "dns.pcap")
    doc = build_semantic(analyze_capture(str(tmp_path / "dns.pcap")), str(tmp_path / "dns.pcap"))
    assert set(doc["dns"]["rcodes"]) == {"NOERROR", "NXDOMAIN"}
    assert doc["dns"]["exchanges"]["unanswered"] == 0
    assert not [i for i in _ids(doc) if i in ("dns_unanswered", "icmp_unreachable")]


def test_a_silent_server_gets_each_query_once_more_after_five_seconds() -> None:
    packets = _dns("app-1", "stopped-1")
    queries = [(ts, ip) for ts, ip in packets if UDP in ip and ip[UDP].dport == 53]
    assert queries and not [ip for _, ip in packets if ICMP in ip or UDP in ip
                            and ip[UDP].sport == 53], "a deallocated VM answers nothing"
    tries: dict[tuple[int, int], list[int]] = {}
    for ts, ip in queries:
        tries.setdefault((ip[UDP].sport, ip[DNS].id), []).append(ts)
    finished = [t for t in tries.values() if t[0] < queries[-1][0] - 15e9]
    assert finished and all(len(t) == 2 for t in finished), "one retry, then it gives up"
    assert all((t[1] - t[0]) / 1e9 == pytest.approx(5.0) for t in finished)
    assert {ip.dst for _, ip in queries} == {STOPPED}
    assert IPv4Address(queries[0][1].src) == IPv4Address(APP)
