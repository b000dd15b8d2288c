"""Issue 28, after the third blind corpus: the redaction classes it found, in fresh spellings.

Each table row is a text and the secrets that must not survive (nor their base64 or URL
forms); innocents must come back byte-identical. The hex-dump rows are built from real
IPv4/TCP packets, so the secret is cut across dump lines as tcpdump cuts it.
"""

from __future__ import annotations

import base64
import struct
import urllib.parse

import pytest

from core.safety import redact


def _forms(secret: str) -> set[str]:
    forms = {secret, urllib.parse.quote(secret, safe="")}
    raw = secret.encode()
    if len(raw) >= 9:
        forms.add(base64.b64encode(raw[: len(raw) // 3 * 3]).decode())
    return forms


BICEP: list[tuple[str, list[str]]] = [
    ("@description('break-glass admin')\n@secure()\nparam breakGlass string = 'Gq7.x_Lm2!pz'\n",
     ["Gq7.x_Lm2!pz"]),
    ("@secure()\n@minLength(12)\n\n// rotated by hand\nparam opsLogin string = 'a\\'Bq9-zz.7Ke'\n",
     ["Bq9-zz.7Ke"]),
    ("@sys.secure() param settingsBlob object = '''\n{\"k\": \"Vz3_q8!mmP\"}\n'''\n",
     ["Vz3_q8!mmP"]),
    ("@secure()\nparam relay string='Hk2#pp.91Lq'\nparam location string = 'westeurope'\n",
     ["Hk2#pp.91Lq"]),
]
ARG_PAIRS: list[tuple[str, list[str]]] = [
    ("az deployment group create -g rg -f m.bicep --parameters tier=prod "
     "adminPasswordOrKey='Zz0*.kQmx71Lp' vmSize=Standard_B2s", ["Zz0*.kQmx71Lp"]),
    ('az deployment sub create -l westeurope -f x.bicep --parameters "sqlAdminSecret=k#2Lm!pq_9z"',
     ["k#2Lm!pq_9z"]),
    ("az deployment group what-if -g rg --template-file t.json --parameters "
     'relayToken="tq.88_Zx!ab" region=westeurope', ["tq.88_Zx!ab"]),
    ("helm upgrade web ./chart --set db.password=Yy9-pl_22q --set image.tag=1.4.2",
     ["Yy9-pl_22q"]),
    ("az webapp config appsettings set -g rg -n app --settings SMTP_PASS=Pq7_mm.x0z LEVEL=info",
     ["Pq7_mm.x0z"]),
]
YAML_BLOCKS: list[tuple[str, list[str]]] = [
    ("env:\n  - name: sqlAdminPwd\n    value: >-\n      Rr5_mP0xWq-44zT\n  - name: region\n"
     "    value: westeurope\n", ["Rr5_mP0xWq-44zT"]),
    ("- name: \"API_TOKEN\"\n  value: |+\n\n    tok-ZZ91kk_pp0Q\n    second-9xYq\n",
     ["tok-ZZ91kk_pp0Q", "second-9xYq"]),
    ("variables:\n- name: 'smtpSecret'\n  value: |\n    Lm3!nq_Z8w\n- name: ring\n  value: '2'\n",
     ["Lm3!nq_Z8w"]),
    ("containers:\n- env:\n  - name: DB_PASSWORD\n    value: >2-\n      Kk8_u7!zzQ\n",
     ["Kk8_u7!zzQ"]),
]
TCPDUMP_A: list[tuple[str, list[str]]] = [
    # SMTP AUTH LOGIN: user and password base64, each in its own packet after a 334 prompt
    ("09:00:01.100000 IP 10.1.0.4.40022 > 10.1.0.9.25: Flags [P.], length 12\n"
     "E..@z.@.@.jq\n...\n.a.K...eA.M.......\n..q..AUTH LOGIN\n\n"
     "09:00:01.120000 IP 10.1.0.9.25 > 10.1.0.4.40022: Flags [P.], length 18\n"
     "E..F..@.@...\n...\n..x..334 VXNlcm5hbWU6\n\n"
     "09:00:01.130000 IP 10.1.0.4.40022 > 10.1.0.9.25: Flags [P.], length 26\n"
     "E..N..@.@.m.\n...\n..(.%`.3..." + base64.b64encode(b"ops@example.org").decode() + "\n\n"
     "09:00:01.150000 IP 10.1.0.4.40022 > 10.1.0.9.25: Flags [P.], length 26\n"
     "E..N.E@.@...\n...\n.'..9S.." + base64.b64encode(b"Wn4_pQ!zz81").decode() + "\n",
     ["Wn4_pQ!zz81", base64.b64encode(b"Wn4_pQ!zz81").decode()]),
    # AUTH PLAIN with the initial response on the same line
    ("10:11:12.000001 IP 10.1.0.4.51000 > 10.1.0.9.587: Flags [P.], length 40\n"
     "E..\\..@.@...\n....z.AUTH PLAIN " + base64.b64encode(b"\0svc\0Jb7.qq_X9").decode() + "\n",
     ["Jb7.qq_X9"]),
    # IMAP LOGIN
    ("10:11:13.000001 IP 10.1.0.4.51002 > 10.1.0.9.143: Flags [P.], length 30\n"
     "E..\\..@.@...\n....z.a001 LOGIN ops \"Tt5!kq.Z2\"\n", ["Tt5!kq.Z2"]),
    # PostgreSQL PasswordMessage, short (length bytes all dots) and long (printable length byte)
    ("11:00:00.000001 IP 10.1.0.4.49920 > 10.1.0.5.6432: Flags [P.], length 20\n"
     "E..JXZ@.@.F.\n...\n...D...2p....Qe7^kk2_zZ.\n", ["Qe7^kk2_zZ"]),
    ("11:00:00.000002 IP 10.1.0.4.49921 > 10.1.0.5.5432: Flags [P.], length 45\n"
     "E..JXZ@.@.F.\n...\n...D...2p..." + chr(39 + 5) + "Ab1_" * 9 + "Q2Z.\n", ["Ab1_" * 9 + "Q2Z"]),
]
INNOCENTS: list[str] = [
    "Name:  api-db\nType:  Opaque\n\nData\n====\npassword:  32 bytes\ntoken:     1.2 KiB\n",
    "[vault]\nsecret_backend = keyvault\ntoken_store = file\nsecret.source = azure-kv\n",
    "SECRET_PROVIDER=hashicorp-vault\nTOKEN_STORE=memory\n",
    "- name: LOG_FORMAT\n  value: |\n    json\n",
    "az deployment group create -g rg -f m.bicep --parameters tier=prod vmSize=Standard_B2s",
    "param location string = 'westeurope'\n@secure()\nparam adminPassword string\n",
    "11:00:00.1 IP a.1 > b.2: length 9\nhttp.....get /status.\n",
    "11:00:00.2 IP a.1 > b.2: length 9\n..2p...+Tail.\n",  # length byte says 43, not 9
]


ROWS = BICEP + ARG_PAIRS + YAML_BLOCKS + TCPDUMP_A


@pytest.mark.parametrize(("text", "secrets"), ROWS, ids=[r[0][:40] for r in ROWS])
def test_secret_removed(text: str, secrets: list[str]) -> None:
    out = redact(text)
    for secret in secrets:
        assert not any(f in out for f in _forms(secret)), (secret, out)
    assert "[REDACTED:" in out


@pytest.mark.parametrize("text", INNOCENTS, ids=[t[:40] for t in INNOCENTS])
def test_innocent_unchanged(text: str) -> None:
    assert redact(text) == text


def test_shaped_value_under_a_setting_word_still_goes() -> None:
    out = redact("secret_backend = Zq8x-77Plm!q\n")
    assert "Zq8x-77Plm!q" not in out


@pytest.mark.parametrize("text, secret", [
    ("DB_PASSWORD_PROD=foobared\n", "foobared"),
    ("redis_pass_primary = sunshine\n", "sunshine"),
    ("export SMTP_SECRET_EU=letmein\n", "letmein"),
    ("api-token-staging: dragonfly\n", "dragonfly"),
])
def test_a_plain_word_under_a_secret_key_with_another_last_word_goes(text: str,
                                                                      secret: str) -> None:
    """Only a last word that chooses where or how secrets are kept (backend, store, method …)
    makes a plain word a setting; `DB_PASSWORD_PROD=foobared` holds the password itself."""
    assert secret not in redact(text)


# ---- tcpdump -X: secrets cut across dump lines --------------------------------------------

def _packet(payload: bytes) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 1, 0x4000, 64, 6, 0,
                     bytes([10, 0, 0, 4]), bytes([10, 0, 0, 5]))
    tcp = struct.pack("!HHIIBBHHH", 50122, 80, 1, 1, 0x50, 0x18, 502, 0, 0)
    return ip + tcp + payload


def _dump(data: bytes) -> str:
    lines = ["12:00:00.000001 IP 10.0.0.4.50122 > 10.0.0.5.80: Flags [P.], length 99"]
    for at in range(0, len(data), 16):
        chunk = data[at:at + 16]
        words = [chunk[i:i + 2].hex() for i in range(0, len(chunk), 2)]
        ascii_col = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"\t0x{at:04x}:  {' '.join(words):<39}  {ascii_col}")
    return "\n".join(lines) + "\n"


def _columns(text: str) -> tuple[str, str]:
    hex_col, ascii_col = [], []
    for line in text.splitlines():
        if line.startswith("\t0x"):
            hex_col.append(line[10:49].replace(" ", ""))
            ascii_col.append(line[51:])
    return "".join(hex_col), "".join(ascii_col)


LONG_JWT = ("eyJhbGciOiJSUzI1NiJ9." + base64.urlsafe_b64encode(b'{"aud":"x","pad":"'
            + b"q" * 900 + b'"}').decode().rstrip("=") + ".Sg9_" + "kZ3pQ-7mWx" * 40)
HEX_CASES: list[tuple[bytes, str]] = [
    (b"GET /v HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer " + LONG_JWT.encode() + b"\r\n\r\n",
     LONG_JWT),
    (b"GET / HTTP/1.1\r\nAuthorization: Basic " + base64.b64encode(b"ops:Xq7_pp.9Lz")
     + b"\r\n\r\n", base64.b64encode(b"ops:Xq7_pp.9Lz").decode()),
    (b"GET / HTTP/1.1\r\nCookie: session=Mz8kQ_p1-77xYtr0Wq\r\n\r\n", "Mz8kQ_p1-77xYtr0Wq"),
    (b"p\x00\x00\x00\x0fNq4_zz!k7P\x00", "Nq4_zz!k7P"),  # PostgreSQL PasswordMessage
    (b"POST /login HTTP/1.1\r\nContent-Length: 30\r\n\r\nuser=ops&password=Hv6!rt_Q0pz",
     "Hv6!rt_Q0pz"),
]


@pytest.mark.parametrize(("payload", "secret"), HEX_CASES, ids=[s[:20] for _, s in HEX_CASES])
def test_hex_dump_secret_masked_in_both_columns(payload: bytes, secret: str) -> None:
    text = _dump(_packet(payload))
    hex_before, ascii_before = _columns(text)
    assert secret.encode().hex() in hex_before  # the fixture really holds it
    out = redact(text)
    hex_after, ascii_after = _columns(out)
    assert secret.encode().hex() not in hex_after
    assert secret not in ascii_after
    for at in range(0, len(secret) - 8, 8):  # no dump line keeps a piece of it
        piece = secret[at:at + 8]
        assert piece not in out and piece.encode().hex() not in hex_after.replace("*", "")
    # the dump keeps its shape: same lines, same offsets
    assert len(out.splitlines()) == len(text.splitlines())
    assert ascii_after.startswith(ascii_before[:40])  # the headers are kept


def test_hex_dump_p_message_with_a_wrong_length_is_kept() -> None:
    text = _dump(_packet(b"p\x00\x00\x00\x2aNq4_zz!k7P\x00"))  # 42 is not 10 + 5: not PG
    assert redact(text) == text
