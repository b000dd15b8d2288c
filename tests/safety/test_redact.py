"""Redaction tables: every secret gone, innocent output byte-identical, linear time."""

from __future__ import annotations

import base64
import hashlib

import pytest

from core.safety.redact import redact, redact_with_counts
from tests.fakes.timing import assert_linear

STORAGE_KEY = base64.b64encode(hashlib.sha512(b"ghost-test-key").digest()).decode()
ENTRA_SECRET = "Abc8Q~Zq3b9Zp1Lk8Vt2Rw7Yn4Md6Fs0Hg5Jc1A"
JWT = ("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9."
       "eyJhdWQiOiJodHRwczovL21hbmFnZW1lbnQuYXp1cmUuY29tIn0."
       "c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU")
PEM = ("-----BEGIN RSA PRIVATE KEY-----\n"
       "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
       "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
       "-----END RSA PRIVATE KEY-----")

SECRETS = [
    # (text, the secret substring that must disappear)
    (f"key1  FULL  {STORAGE_KEY}", STORAGE_KEY),
    (f'[{{"keyName": "key1", "permissions": "FULL", "value": "{STORAGE_KEY}"}}]', STORAGE_KEY),
    (f"DefaultEndpointsProtocol=https;AccountName=sa;AccountKey={STORAGE_KEY};EndpointSuffix="
     "core.windows.net", STORAGE_KEY),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey="
     "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=",
     "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo="),
    ("https://sa.blob.core.windows.net/c/x.pcap?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00"
     "%3A00%3A00Z&sig=AbCdEf%2BGhIjKlMnOpQrStUvWxYz0123456789%3D", "AbCdEf%2BGhIjKl"),
    ("Server=tcp:db.database.windows.net,1433;User ID=admin;Password=Sup3r$ecret!;", "Sup3r$ecret"),
    (f"client secret: {ENTRA_SECRET}", ENTRA_SECRET),
    (f'{{"clientSecret": "{ENTRA_SECRET}"}}', ENTRA_SECRET),
    ('{"client_secret": "plainoldsecret123"}', "plainoldsecret123"),
    (f"Authorization: Bearer {JWT}", "c2lnbmF0dXJl"),
    (f'{{"accessToken": "{JWT}", "tokenType": "Bearer"}}', "eyJhdWQi"),
    ("> Authorization: Basic YWRtaW46aHVudGVyMg==", "YWRtaW46aHVudGVyMg"),
    ("Authorization: SharedKey sa:c2lnbmF0dXJlIGhlcmU=", "c2lnbmF0dXJlIGhlcmU"),
    ("curl -H 'Authorization: Bearer opaque-token-value-123' https://x", "opaque-token-value"),
    ("Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234"),
    (PEM, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"),
    ('{"privateKey": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg\\n-----END PRIVATE KEY-----"}',
     "MIIEvQIBADANBg"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", "b3BlbnNzaC1rZXktdjEAAAAA"),
    ("postgresql://ghost:S3cretPw@db.internal:5432/ghost", "S3cretPw"),
    ("redis://:redispass@10.0.0.4:6379/0", "redispass"),
    ("SLACK_BOT_TOKEN=xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", "xoxb-1234567890"),
    ("xapp-1-A0123456789-1234567890123-abcdef0123456789", "xapp-1-A0123"),
    ("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXX"),
    ("GEMINI_API_KEY=AIzaSyD-1234567890abcdefghijklmnopqrstu", "AIzaSyD-12345"),
    ("token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "ghp_0123456789"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABC"),
    ("gho_0123456789abcdefghijklmnopqrstuvwxyzAB", "gho_0123"),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("password=hunter22", "hunter22"),
    ("PASSWORD: hunter22", "hunter22"),
    ('{"password": "correct horse battery staple"}', "correct horse"),
    ('{"adminPassword": "P@ssw0rd!"}', "P@ssw0rd"),
    ("secret='s3cr3tvalue'", "s3cr3tvalue"),
    ("export AZURE_CLIENT_SECRET=abc~def.ghi", "abc~def.ghi"),
    ("api_key: 0123456789abcdef0123", "0123456789abcdef0123"),
    ("https://api.example.com/v1?token=tok_9f8e7d6c5b4a&x=1", "tok_9f8e7d6c5b4a"),
    ('"primaryKey": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo="', "Zm9vYmFyYmF6"),
    ('"primaryMasterKey": "Zm9vYmFyYmF6cXV4"', "Zm9vYmFyYmF6cXV4"),
    ("az login --service-principal -u app-id -p mypassw0rd --tenant t", "mypassw0rd"),
    ("az storage blob list --account-key abcDEF123== --account-name sa", "abcDEF123"),
    ("az storage blob list --sas-token 'sv=2022&sig=abc' --account-name sa", "sig=abc"),
    ("az sql server create --admin-password Hunter2Hunter2 -n s", "Hunter2Hunter2"),
    ("curl -u admin:letmein https://x", "letmein"),
    ("Cookie: session=abcdef0123456789", "abcdef0123456789"),
    ("Ocp-Apim-Subscription-Key: 0123456789abcdef0123456789abcdef", "0123456789abcdef0123"),
    ('<publishProfile userPWD="pubpw123" />', "pubpw123"),
    ("<Password>xmlpass</Password>", "xmlpass"),
    ('{"id": "https://kv.vault.azure.net/secrets/db/0123", "value": "the-db-password"}',
     "the-db-password"),
    ("ya29.a0AfH6SMBxxxxxxxxxxxxxxxxxxxxxxx", "ya29.a0AfH6"),
    ("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "sk-proj-abcdef"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s[1][:20] for s in SECRETS])
def test_secret_is_removed(text: str, secret: str) -> None:
    result = redact_with_counts(text)
    assert secret not in result.text, result.text
    assert "[REDACTED:" in result.text and result.count >= 1


DNSKEY_OUT = (
    "; <<>> DiG 9.18.28 <<>> DNSKEY cloudflare.com +nosplit\n;; ANSWER SECTION:\n"
    "cloudflare.com.\t3600\tIN\tDNSKEY\t257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+Gq"
    "JxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==\n"
    "cloudflare.com.\t3600\tIN\tDNSKEY\t256 3 13 oJMRESz5E4gYzS/q6XDrvU1qMPYIjCWzJaOau8XNEZeq"
    "CYKD5ar0IRd8KqXXFJkqmVfRvMGPmM1x8fGAa2XhSA==\n"
    "cloudflare.com.\t3600\tIN\tRRSIG\tDNSKEY 13 2 3600 20250201000000 20250101000000 2371 "
    "cloudflare.com. TQB0mKp4M8uxAnAE4PMRw6ImBLFeKlIQtg2+dKsSWVgTxzvgKXFp0p2R9mNkMVXBhcrvaaIyRy"
    "hCHXzDYDlXZw==\n"
)
INNOCENT = [
    "inet 10.0.0.4/24 brd 10.0.0.255 scope global eth0\ninet6 fe80::20d:3aff:fe12:3456/64",
    "link/ether 00:0d:3a:12:34:56 brd ff:ff:ff:ff:ff:ff",
    '{"id": "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/prod-rg/'
    'providers/Microsoft.Network/networkSecurityGroups/web-nsg", "etag": "W/\\"8f2d1c3e-'
    '0a1b-4c5d-9e8f-7a6b5c4d3e2f\\"", "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47"}',
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  capture.pcap",
    "da39a3ee5e6b4b0d3255bfef95601890afd80709  report.md",
    "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877"
    "eec2f63b931bd47417a81a538327af927da3e  big.bin",
    DNSKEY_OUT,
    "-----BEGIN CERTIFICATE-----\n"
    "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
    "RTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD\n"
    "-----END CERTIFICATE-----",
    "256 SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s root@web-vm-01 (ED25519)",
    "web-vm-01 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7"
    "opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=",
    '{"tokenType": "Bearer", "expiresOn": "2025-01-15 14:30:22", "tenant": "t"}',
    '{"nextLink": "https://management.azure.com/subscriptions/x/providers/Microsoft.Network/'
    'virtualNetworks?api-version=2023-09-01&$skiptoken=eyJuZXh0IjoiMiJ9"}',
    '{"disablePasswordAuthentication": true, "adminPassword": null, "adminUsername": "azureuser"}',
    '{"sshPublicKey": {"keyData": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 user@host"}}',
    '[{"key": "env", "value": "prod"}, {"key": "owner", "value": "netops"}]',
    "tcp   LISTEN 0  4096  0.0.0.0:22  0.0.0.0:*  users:((\"sshd\",pid=812,fd=3))",
    "PING 10.0.0.4 (10.0.0.4) 56(84) bytes of data.\n64 bytes from 10.0.0.4: icmp_seq=1 ttl=64 "
    "time=0.045 ms",
    '"contentMd5": "1B2M2Y8AsgTpgAmY7PhCfg==", "contentCrc64": "AAAAAAAAAAA="',
    "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoG"
    "lODJ6+SfaPg==",
    "git@github.com:org/repo.git ssh://git@github.com/org/repo",
    '"authorization": {"action": "Microsoft.Network/networkSecurityGroups/write", "scope": "/"}',
    "PWD=/home/azureuser\nOLDPWD=/",
    "x-ms-request-id: 3f2c1b4a-0000-0000-0000-1234567890ab",
    '"secretName": "db-password", "keyVaultKeyName": "k1", "passwordProfile": {}',
    '"thumbprint": "A909502DD82AE41433E6F83886B00D4277A32A7B"',
]


@pytest.mark.parametrize("text", INNOCENT, ids=[t[:30] for t in INNOCENT])
def test_innocent_output_is_byte_identical(text: str) -> None:
    assert redact(text) == text


def test_command_lines_are_redacted_too() -> None:
    line = f"az storage blob list --account-name sa --connection-string 'AccountKey={STORAGE_KEY}'"
    assert STORAGE_KEY not in redact(line)
    assert redact("ping -c 4 10.0.0.4") == "ping -c 4 10.0.0.4"


def test_counts_by_kind() -> None:
    result = redact_with_counts(f"{PEM}\npassword=x1y2z3w4\n{STORAGE_KEY}\n")
    assert result.kinds.get("private_key") == 1 and result.kinds.get("storage_key") == 1
    assert result.count == sum(result.kinds.values()) >= 3


ADVERSARIAL = [
    "a" * 1_000_000,
    "A" * 1_000_000,
    "=" * 1_000_000,
    "-" * 1_000_000,
    "password" * 125_000,
    "password=" * 111_111,
    "eyJ" * 333_333,
    "eyJa." * 200_000,
    "-----BEGIN RSA PRIVATE KEY-----" * 30_000,
    "https://" * 125_000,
    "a://b:" * 166_666,
    "x:" * 500_000,
    "@" * 1_000_000,
    "sig=" * 250_000,
    "Bearer " * 140_000,
    "Authorization: " * 60_000,
    ("Q" * 86 + "=") * 11_500,
    "--password " * 90_000,
    "--a-b-c-d-e-f-g" * 65_000,
    "<a>" * 333_333,
    "8Q~" * 333_333,
    "AKIA" * 250_000,
    "ghp_" * 250_000,
    '"key": "' * 125_000,
    "vault.azure.net/secrets/ " + '"value": "' * 100_000,
    "az login -p " * 80_000,
    "key" * 333_333,
    "a-" * 500_000,
    "\n" * 1_000_000,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=[repr(t[:12]) for t in ADVERSARIAL])
def test_redaction_is_linear_on_adversarial_input(text: str) -> None:
    assert_linear(redact, text)
