"""The fault signals of the eight format-2 categories, read on what the lab really answers
for the shipped scenarios: a record shows the fault when its own output says so (the probe
refused, Health Probe Status 0, a verdict of the default deny, NXDOMAIN or an empty zone group,
a connection Pending, SNAT connections Failed, a latency figure), and not when it only lists
the faulty thing or shows it healthy."""

from __future__ import annotations

import shlex

import pytest

from lab.eval.categories import SIGNALS, shows_fault, signal_names
from lab.model import Truth
from lab.runner import LabRunner
from lab.scenario import Scenario, load_scenario, shipped_scenarios

SHIPPED = {p.stem: p for p in shipped_scenarios()}
SUB = "/subscriptions/6a1f0c2e-0000-4000-8000-00000000b00{}/resourceGroups/{}/providers/"


def _in_vm(rg: str, vm: str, *lines: str) -> str:
    scripts = " ".join(f'"{line}"' for line in lines)
    return f"az vm run-command invoke -g {rg} -n {vm} --command-id RunShellScript " \
           f"--scripts {scripts}"


# (scenario, command, shows the fault?, why)
CASES: list[tuple[str, str, bool, str]] = [
    ("lb-probe-port-down", "az monitor metrics list --resource " + SUB.format(2, "rg-prod-app")
     + "Microsoft.Network/loadBalancers/ilb-orders --metric DipAvailability --offset 30m "
     "--interval PT5M --filter \"BackendIPAddress eq '*'\" -o json", True,
     "Health Probe Status 0 of the load balancer the command names"),
    ("lb-probe-port-down", _in_vm("rg-prod-app", "orders-vm-01", "nc -zv -w 2 10.1.3.4 8081"),
     True, "the probe port refuses inside the VM"),
    ("lb-probe-port-down", "az network lb probe list -g rg-prod-app --lb-name ilb-orders", False,
     "the probe's configuration names port 8081 and shows nothing failing"),
    ("lb-probe-port-down", "az network watcher test-ip-flow -g rg-prod-app --vm orders-vm-01 "
     "--direction Inbound --protocol TCP --local 10.1.3.4:8081 --remote 168.63.129.16:54321",
     False, "the NSGs allow the probe: that is not this fault"),
    ("lb-inbound-blocked", "az network watcher test-ip-flow -g rg-prod-web --vm web-vm-01 "
     "--direction Inbound --protocol TCP --local 10.1.1.4:8443 --remote 198.51.100.7:50000",
     True, "IP flow verify: a client from the Internet meets DenyAllInBound"),
    ("lb-inbound-blocked", "az network watcher test-ip-flow -g rg-prod-web --vm web-vm-01 "
     "--direction Inbound --protocol TCP --local 10.1.1.4:8443 --remote 198.51.100.7:50000 "
     "-o table", True, "the same verdict as az's table"),
    ("lb-inbound-blocked", "az network watcher test-ip-flow -g rg-prod-web --vm web-vm-01 "
     "--direction Inbound --protocol TCP --local 10.1.1.4:8443 --remote 147.243.1.1:50000",
     False, "Front Door's range is allowed"),
    ("lb-inbound-blocked", "az network nsg rule list --include-default -g rg-prod-net "
     "--nsg-name nsg-web -o json", False,
     "a rule listing shows DenyAllInBound in every NSG and evaluates no flow"),
    ("private-endpoint-dns", _in_vm("rg-app", "app-vm-01",
                                    "nslookup sql-orders.database.windows.net"), True,
     "the resolver answers NXDOMAIN, which never names the endpoint"),
    ("private-endpoint-dns", "az network private-endpoint dns-zone-group list -g rg-data "
     "--endpoint-name pe-sql-prod -o json", True, "the endpoint's zone-group list is empty"),
    ("private-endpoint-dns", "az network private-endpoint show -g rg-data -n pe-sql-prod "
     "-o json", False, "the endpoint itself is Approved"),
    ("private-endpoint-not-approved", "az network private-endpoint show -g rg-pay "
     "-n pe-kv-payments -o json", True, "privateLinkServiceConnectionState Pending"),
    ("private-endpoint-not-approved", _in_vm("rg-pay", "pay-vm-01",
                                             "nslookup kv-payments-prod.vault.azure.net"),
     False, "the name resolves to the endpoint: DNS is not this fault"),
    ("snat-exhaustion", "az monitor metrics list --resource " + SUB.format(6, "rg-prod-net")
     + "Microsoft.Network/natGateways/ngw-prod --metric SNATConnectionCount --offset 1h "
     "--interval PT15M --filter \"ConnectionState eq '*'\" -o json", True,
     "SNATConnectionCount Failed above 0 on the NAT gateway the command names"),
    ("snat-exhaustion", "az monitor metrics list --resource " + SUB.format(6, "rg-prod-net")
     + "Microsoft.Network/natGateways/ngw-prod --metric SNATConnectionCount --offset 1h "
     "--interval PT15M -o json", False, "without the split no series says Failed"),
    ("snat-exhaustion", "az network nat gateway show -g rg-prod-net -n ngw-prod -o json", False,
     "the gateway's configuration (one public IP) is not the failure"),
    ("latency", "az network watcher test-connectivity -g rg-app --source-resource app-vm-01 "
     "--dest-address 10.3.1.4 --dest-port 5432 -o json", True,
     "182 ms on average through the firewall"),
    ("latency", "az network watcher test-connectivity -g rg-app --source-resource app-vm-02 "
     "--dest-address 10.2.1.4 --dest-port 443 -o json", False, "1 ms inside the spoke"),
    ("firewall-rule-deny", "az network firewall show -g rg-hub-net -n afw-hub -o json", False,
     "the firewall's configuration denies nothing by itself"),
]


def _answer(scenario: Scenario, command: str) -> str:
    answer = LabRunner(scenario).run(shlex.split(command))
    assert answer.exit_code == 0, (command, answer.stderr)
    return answer.stdout + answer.stderr


@pytest.mark.parametrize(("name", "command", "shows", "why"), CASES,
                         ids=[f"{c[0]}: {c[3]}" for c in CASES])
def test_a_format_2_signal_reads_what_the_lab_answers(name: str, command: str, shows: bool,
                                                      why: str) -> None:
    scenario = load_scenario(SHIPPED[name])
    assert shows_fault(scenario.truth, command, _answer(scenario, command)) is shows, why


# findings as the engines title them (forensics/findings*.py, flowlogs_findings*.py; the
# flow-log lines as `ghost-forensics flowlogs` printed them on lb-probe-blocked's blobs)
FINDINGS: list[tuple[str, str, str, bool]] = [
    ("lb-probe-port-down", "cat summary.md",
     "1. **[HIGH] 4 TCP connection attempts to 10.1.3.4:8081 refused with RST**", True),
    ("latency", "cat summary.md",
     "1. **[MEDIUM] Slow TCP handshakes: median 215 ms over 84 connections**", True),
    ("firewall-rule-deny", "ghost-forensics flowlogs blobs/*.json",
     " 2. HIGH     Nothing comes back from 203.0.113.60:5432/TCP: 39 flow records one way from "
     "10.2.1.4, 13:50–14:19 UTC", True),
    ("lb-probe-blocked", "ghost-forensics flowlogs blobs/*.json",
     " 1. HIGH     UserRule_deny-all-inbound denied 168.63.129.16 → 10.1.3.4:8080/TCP and "
     "10.1.3.5:8080/TCP, 13:02–13:40 UTC (78 flow records)", True),
    ("lb-probe-blocked", "cat flowlogs_report.md",
     "| 1 | high | `flow_denied` | UserRule_deny-ssh denied 198.51.100.9 → 10.1.1.4:22/TCP, "
     "13:02–13:40 UTC (4 flow records) |", False),
]


@pytest.mark.parametrize(("name", "command", "line", "shows"), FINDINGS,
                         ids=[f"{f[0]}: {f[2][:40]}" for f in FINDINGS])
def test_capture_and_flow_log_findings_show_the_fault(name: str, command: str, line: str,
                                                      shows: bool) -> None:
    truth = load_scenario(SHIPPED[name]).truth
    assert shows_fault(truth, command, line) is shows


def test_every_built_in_category_has_a_signal_and_a_custom_one_falls_back() -> None:
    from lab.categories import CATEGORIES_V1, CATEGORIES_V2

    assert set(signal_names(CATEGORIES_V1 + CATEGORIES_V2)) == \
        set(CATEGORIES_V1 + CATEGORIES_V2) - {"healthy"}
    custom = Truth(category="x-endpoint-approval-pending", resources=("pe-kv-billing",),
                   keywords=("Pending",), red_herrings=(), fix="")
    assert "x-endpoint-approval-pending" not in SIGNALS
    assert shows_fault(custom, "az network private-endpoint show -n pe-kv-billing",
                       '{"name": "pe-kv-billing", "status": "Pending"}')
    assert not shows_fault(custom, "az network vnet show -n vnet-billing", '{"name": "x"}')
