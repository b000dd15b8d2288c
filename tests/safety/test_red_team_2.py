"""Second, independent red team of the gate: the holes it found, one table row per hole.

The bulk of the attack list lives in the corpora (family "red team 2: ..."); these tables pin the
rule each fix introduced, the near misses that must stay untouched, and the cost of the new
patterns on adversarial megabyte inputs.
"""

from __future__ import annotations

import pytest

from core.safety import classify, redact
from tests.fakes.timing import assert_linear

K44 = "Ab3dEf7hIj1lMn0pQr5tUv9xYz2AbCdEfGhIjKlMnO4="
SIG = "Xq8b%2FZ3kLm9Np0Rt4Uv6Wx1Yz2Ab3Cd4Ef5Gh6Ij7Kl8%3D"

# (command, rule) -- reads that looked harmless but return secrets or change state
NOT_SAFE = [
    ("az webapp hybrid-connection list -g rg -n w", "T2.az_secret_read"),
    ("az functionapp hybrid-connection list -g rg -n f", "T2.az_secret_read"),
    ("az iot hub device-identity show -n h -d d", "T2.az_secret_read"),
    ("az iot hub module-identity show -n h -d d -m m", "T2.az_secret_read"),
    ("az vm boot-diagnostics get-boot-log-uris -g rg -n v", "T2.az_secret_read"),
    ("az vm boot-diagnostics get-boot-log -g rg -n v", "T2.az_secret_read"),
    ("az network vpn-connection show-device-config-script -g rg -n c --vendor Generic "
     "--device-family x --firmware-version x", "T2.az_secret_read"),
    ("az network vnet-gateway vpn-client show-url -g rg -n g", "T2.az_secret_read"),
    ("az acr connected-registry get-settings -r r -n c --parent-protocol https",
     "T2.az_secret_read"),
    ("az logic workflow list-callback-url -g rg -n w", "T2.az_secret_read"),
    ("az vm show -g rg -n v --include-user-data", "T2.az_secret_read"),
    ("az vmss show -g rg -n v --include-user-data", "T2.az_secret_read"),
    ("az eventgrid event-subscription show -n e --source-resource-id x "
     "--include-full-endpoint-url", "T2.az_secret_read"),
    ("az resource show --ids /subscriptions/s/x/Microsoft.Web/sites/w/config%2Fappsettings",
     "T2.az_secret_read"),
    ("az storage message get -q q --account-name a", "T0.az_not_approvable"),
    ("ss -E", "T1.unbounded"),
    ("ss --events", "T1.unbounded"),
    ("ss -tnE", "T1.unbounded"),
]

# over-blocking is a defect too: these stay SAFE
STAY_SAFE = [
    "az webapp config show -g rg -n w",
    "az keyvault certificate show --vault-name v -n c",
    "az network vnet-gateway vpn-client show-health -g rg -n g",
    "az vm show -g rg -n v --show-details",
    "ip route get to 1.2.3.4 from 5.6.7.8 iif eth0",
    "ss -tnp state established",
]


#: Since the third red team, az reads are decided by an allowlist of clean reads: a read that is
#: not on it is RISKY as unlisted, an option that is not a selector as unknown.
AZ_NOT_CLEAN = {"T2.az_secret_read", "T2.az_unlisted_read", "T2.az_unknown_option",
                "T2.az_mutating_verb"}


@pytest.mark.parametrize(("command", "rule"), NOT_SAFE, ids=[c for c, _ in NOT_SAFE])
def test_secret_returning_or_stateful_read_needs_approval(command: str, rule: str) -> None:
    verdict = classify(command)
    if rule.startswith("T0."):  # issue 28: a change outside the approvable list
        assert verdict.rule == rule, verdict
        return
    assert verdict.classification == "RISKY", verdict
    if rule.startswith("T2."):
        assert verdict.rule in AZ_NOT_CLEAN, verdict
    else:
        assert verdict.rule == rule, verdict


@pytest.mark.parametrize("command", STAY_SAFE)
def test_neighbouring_read_stays_safe(command: str) -> None:
    verdict = classify(command)
    assert verdict.classification == "SAFE", verdict


# (family, text, secret that must go)
SECRETS = [
    ("url-encoded SAS", "?sv%3D2022%26sig%3D" + SIG + "%26sp%3Dr", SIG[:20]),
    ("JSON-escaped &", '"u": "https://a?sv=1\\u0026sig=' + SIG + '\\u0026se=2"', SIG[:20]),
    ("two-part JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0", "eyJzdWIiOiIxMjM0"),
    (".NET appSettings", '<add key="DbPassword" value="Sup3rS3cret!" />', "Sup3rS3cret!"),
    ("XML parameter", "<parameter name='adminPassword' value='Sup3rS3cret!'/>", "Sup3rS3cret!"),
    ("k8s env YAML", "- name: DB_PASSWORD\n  value: \"P@ssw0rd1234\"", "P@ssw0rd1234"),
    ("k8s env YAML bare", "env:\n- name: API_TOKEN\n  value: abcDEF123456ghi", "abcDEF123456ghi"),
    ("JSON value on next line", '{"password":\n  "P@ssw0rd1234"}', "P@ssw0rd1234"),
    ("Go :=", 'password := "P@ssw0rd1234"', "P@ssw0rd1234"),
    ("Ruby =>", "'password' => 'P@ssw0rd1234'", "P@ssw0rd1234"),
    ("primary (ambiguous)", '"primary": "' + K44 + '"', K44[:30]),
    ("hex key1", '"key1": "0123456789abcdef0123456789abcdef"', "0123456789abcdef0123"),
    ("hex key", '{"name":"key1","key":"0123456789ABCDEF0123456789ABCDEF"}', "0123456789ABCDEF"),
    ("sendKeyValue", '"sendKeyValue": "' + K44 + '"', K44[:30]),
    ("ExpressRoute auth key", '"authorizationKey": "01234567-89ab-cdef-0123-456789abcdef"',
     "01234567-89ab-cdef"),
    ("kubeconfig base64", '{"value": "YXBpVmVyc2lvbjogdjEKY2x1c3RlcnM6Ci0gY2x1c3Rlcjo="}',
     "YXBpVmVyc2lvbjogdjEK"),
    ("AWS pair in CSV", "u,,AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG"),
    ("curl -uU:P", "curl -uadmin:Sup3rS3cret! https://x", "Sup3rS3cret!"),
    ("curl -su U:P", "curl -su admin:Sup3rS3cret! https://x", "Sup3rS3cret!"),
    ("curl --user=U:P", "curl --user=admin:Sup3rS3cret! https://x", "Sup3rS3cret!"),
    ("curl --proxy-user", "curl --proxy-user admin:Sup3rS3cret! https://x", "Sup3rS3cret!"),
    ("az vm user -p", "az vm user update -u u -p Tr0ub4dor3xyz -n v", "Tr0ub4dor3xyz"),
    ("Pwd= first", "Pwd=Sup3rS3cret;Server=x", "Sup3rS3cret"),
    ("@ in URL password", "ftp://user:P@ssw0rd@host/", "ssw0rd"),
    ("chpasswd", 'echo "admin:P@ssw0rd1234" | chpasswd', "P@ssw0rd1234"),
    ("net user", "net user admin P@ssw0rd1234 /add", "P@ssw0rd1234"),
    ("PyPI", "pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LTEyMzQtMTIzNC0xMjM0LTEyMzQ1Njc4OTBhYgAC",
     "pypi-AgEIcHlwaS5vcmcC"),
    ("Docker Hub PAT", "dckr_pat_AbCdEfGhIjKlMnOpQrStUvWxYz0", "dckr_pat_AbCdEf"),
    ("Twilio API key", "sid SK0123456789abcdef0123456789abcdef", "SK0123456789abcdef"),
    ("Mailgun", "key-0123456789abcdef0123456789abcdef", "0123456789abcdef0123"),
    ("Vault", "hvs.CAESIAbCdEfGhIjKlMnOpQrStUvWxYz0123", "CAESIAbCdEfGhIjKlMnOp"),
    ("Heroku", "HRKU-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOpQrSt"),
    ("Discord bot", "MTA5ODc2NTQzMjEwOTg3NjU0Mw.GhIjKl.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
     "MTA5ODc2NTQzMjEwOTg3NjU0Mw"),
    ("Telegram bot", "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/",
     "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"),
    ("Teams webhook", "https://x.webhook.office.com/webhookb2/a@b/IncomingWebhook/0123abcd/V2Abc",
     "IncomingWebhook/0123abcd"),
    ("Discord webhook", "https://discord.com/api/webhooks/1234567890/AbCdEfGhIjKlMnOp", "AbCdEfGh"),
    ("implicit-flow code", "https://app/cb#code=0.AXoAbCdEfGh123456789IjKl&state=1",
     "AXoAbCdEfGh123456789"),
    ("escaped slash key", '{"key1":"pvPS3\\/oIUjYMiA4khArd8HbHkYONqJweZVwEd+H2h5Cd8dHF6nPaDgp'
     'CdwwPUS9OQmBr\\/0v0PDdpZzojmd6W\\/w=="}', "oIUjYMiA4khArd8"),
]

# near misses of the new patterns: must come through byte-identical
INNOCENT = [
    "docker run -u 1000:1000 image",
    "PWD=/home/azureuser",
    "OLDPWD=/home/azureuser;",
    "Password: (none)",
    "Authorization: (none)",
    '"keyName": "key1", "key": "primary"',
    '"key": "d41d8cd98f00"',
    '"primary": true',
    '"keyValue": "Ab3dEf7hIj1lMn0pQr5tUv9xYz2AbCdEfGhIjKlMnO4="',
    "- name: LOG_LEVEL\n  value: debug",
    "- name: KEYVAULT_URI\n  value: https://kv.vault.azure.net/",
    '<add key="LogLevel" value="Debug" />',
    "net user admin /active:yes",
    "net user admin *",
    "SKU Standard_LRS",
    "key-vault-name",
    "sig%3D",
    "bot12345:not-a-token",
    "user@host:~$ ls",
]


@pytest.mark.parametrize(("family", "text", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_new_secret_format_is_removed(family: str, text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize("text", INNOCENT)
def test_near_miss_is_untouched(text: str) -> None:
    assert redact(text) == text


ADVERSARIAL = [
    "sig%3D" + "%2F" * 330_000,
    "%26sig%3D" * 110_000,
    "key=\"a\" value=\"" * 60_000,
    "name: a\nvalue: " * 70_000,
    '"password":\n' * 80_000,
    "AKIAIOSFODNN7EXAMPLE " + "A" * 40 + " " + ("x" * 40 + " ") * 24_000,
    "-su a:" * 160_000,
    "ftp://u:" + "a@" * 400_000,
    "MTA5ODc2NTQzMjEwOTg3NjU0Mw." * 38_000,
    "123456789:AA" * 80_000,
    "webhook.office.com/webhookb2/" * 33_000,
    "YXBpVmVyc2lvbj" * 70_000,
    "echo a:b | " * 90_000 + "chpasswd",
    "net user " * 110_000,
    "eyJhbGciOi." * 90_000,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=[repr(t[:12]) for t in ADVERSARIAL])
def test_new_patterns_stay_linear(text: str) -> None:
    assert_linear(redact, text)
