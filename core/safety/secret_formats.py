"""Secrets found by the format that carries them, added after the third red team.

- network devices: strongSwan `: PSK "..."`, Cisco `pre-shared-key`/`isakmp key`/`key-string`/
  `enable secret`, VyOS `pre-shared-secret`, Juniper `ascii-text "$9$..."`, FortiGate `psksecret`;
- private keys outside PEM: OpenVPN static keys, .NET `<RSAKeyValue>` private parts, JWK private
  members, PKCS#12 (PFX) in base64, WireGuard `private key:` / `preshared key:` lines, base64
  `.dockerconfigjson`;
- `ip xfrm` keys, crypt(3) hashes in shadow lines (yescrypt, sha512-crypt, ...), `.pgpass`
  lines;
- tokens: Slack `xoxc-`/`xoxd-`, old 52-character Azure DevOps PATs, double-encoded SAS
  signatures, Slack webhook paths, PagerDuty integration keys, curl `-u` in logged argv lists.

The same rules as `secret_patterns`: each pattern starts at a literal or behind a look-behind,
has bounded quantifiers, and runs only when one of its needles occurs in the text.
"""

from __future__ import annotations

import re
from typing import Final

from core.safety.secret_patterns import TokenPattern

_QUOTED: Final = (r"(?:\"(?P<s>[^\"\r\n]{1,512})\"|'(?P<s2>[^'\r\n]{1,512})'"
                  r"|(?P<s3>[^\s\"';=:][^\s\"';]{0,511}))")


def _pat_like(value: str) -> bool:
    """An old Azure DevOps PAT: 52 base32 characters, with digits and letters mixed."""
    digits = sum(c.isdigit() for c in value)
    return 4 <= digits <= 40


def _not_port_path(value: str) -> bool:
    """`http://host:8080/a@b` has no password: the "value" is a port and a path."""
    return re.match(r"[0-9]{1,5}(?:/|$)", value) is None


FORMAT_PATTERNS: Final[tuple[TokenPattern, ...]] = (
    TokenPattern("network_psk", (": psk", ":psk", ": eap", ": xauth", ": ntlm", ": pin"),
                 re.compile(r"(?i):[ \t]{0,5}(?:PSK|EAP|XAUTH|NTLM|PIN)[ \t]+" + _QUOTED)),
    TokenPattern("network_psk", ("pre-shared", "preshared", "psksecret", "isakmp", "key-string",
                                 "authentication-key", "enable secret", "enable password",
                                 "username", "server key", "set passwd", "psk ",
                                 "plaintext-password", "encrypted-password", "\n password ",
                                 "\npassword "),
                 re.compile(
        r"(?i)(?<![A-Za-z0-9_-])(?:pre-?shared-?(?:key|secret)|psksecret|isakmp[ \t]+key"
        r"|key-string|authentication-key|(?:tacacs|radius)-server[ \t]+key"
        r"|psk[ \t]+[A-Za-z0-9_.-]{1,64}[ \t]+secret|set[ \t]+(?:passwd|password)"
        r"|(?:plaintext|encrypted)-password|(?<=\n)[ \t]{0,8}password(?=[ \t]+[0-9]{1,2}[ \t])"
        r"|(?:enable|username[ \t]+[^\s]{1,64}(?:[ \t]+privilege[ \t]+[0-9]{1,2})?)[ \t]+"
        r"(?:secret|password))"
        r"(?:[ \t]+(?:local|remote|ascii-text|hexadecimal|enc|hex|[0-9]{1,2})){0,2}[ \t]+"
        + _QUOTED)),
    TokenPattern("private_key", ("openvpn static key",), re.compile(
        r"-----BEGIN OpenVPN Static key V[0-9]-----[\s0-9a-fA-F]{0,4096}?"
        r"-----END OpenVPN Static key V[0-9]-----")),
    TokenPattern("private_key", ("<rsakeyvalue",), re.compile(
        r"<(?P<t>D|P|Q|DP|DQ|InverseQ)>(?P<s>[A-Za-z0-9+/=\s]{1,8192})</(?P=t)>")),
    TokenPattern("private_key", ('"kty"',), re.compile(
        r"\"(?:d|p|q|dp|dq|qi|k)\"[ \t\r\n]{0,5}:[ \t\r\n]{0,5}\"(?P<s>[A-Za-z0-9_-]{16,8192})\"")),
    TokenPattern("private_key", ("ibazcc",), re.compile(
        r"(?<![A-Za-z0-9+/])MII[A-Za-z0-9+/]{3}IBAzCC[A-Za-z0-9+/]{0,200000}={0,2}")),
    TokenPattern("private_key", ("private key", "preshared key", "private-key", "preshared-key",
                                 "privatekey", "presharedkey"), re.compile(
        r"(?i)(?<![A-Za-z0-9])(?:private|preshared)[ _-]?key(?:[ \t]{0,5}[:=][ \t]{0,5}|[ \t]{1,5})"
        r"[\"']?(?P<s>[A-Za-z0-9+/]{42,43}=)(?![A-Za-z0-9+/=])")),
    TokenPattern("docker_config", ("eyjhdxrocyi6",), re.compile(
        r"eyJhdXRocyI6[A-Za-z0-9+/]{8,200000}={0,2}")),
    TokenPattern("xfrm_key", ("0x",), re.compile(
        r"(?<![A-Za-z0-9_-])(?:auth-trunc|auth|enc|aead|comp)[ \t]+"
        r"(?:'[^'\r\n]{1,80}'|\"[^\"\r\n]{1,80}\"|[A-Za-z0-9()_,.-]{1,80})[ \t]+"
        r"(?P<s>0x[0-9a-fA-F]{8,1024})")),
    # crypt(3) hashes in shadow lines (user:HASH:lastchange:...); a hash elsewhere is data
    TokenPattern("password_hash", (":$", ":!$", ":*$"), re.compile(
        r"(?m)^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?:[!*]{0,2}(?P<s>\$(?:1|2[abxy]|5|6|7|y|gy|sha1|md5"
        r"|argon2(?:id|i|d))\$[A-Za-z0-9./$=,+-]{8,1024})(?=:)")),
    TokenPattern("pgpass_password", (":",), re.compile(
        r"(?m)^[A-Za-z0-9_.*-]{1,253}:(?:[0-9]{1,5}|\*):[A-Za-z_*][^:\s]{0,63}:"
        r"[A-Za-z_*][^:\s]{0,63}:(?P<s>(?:[^\s:\\]|\\.){1,256})$")),
    TokenPattern("slack_token", ("xoxc", "xoxd"), re.compile(
        r"(?<![A-Za-z0-9-])xox[cd]-[A-Za-z0-9.%-]{10,4096}")),
    TokenPattern("azure_devops_pat", ("pat", "devops", "dev.azure.com", "visualstudio.com"),
                 re.compile(r"(?<![A-Za-z0-9])(?P<s>[a-z2-7]{52})(?![A-Za-z0-9])"), _pat_like),
    TokenPattern("sas_signature", ("sig%25",), re.compile(
        r"(?i)(?<![A-Za-z_])sig%25(?:25){0,3}3D(?P<s>(?:[A-Za-z0-9._~+-]"
        r"|%(?!(?:25){0,4}26)[0-9A-Fa-f]{2}){1,4096})")),
    TokenPattern("slack_webhook", ("services",), re.compile(
        r"(?:/|%2[Ff])services(?:/|%2[Ff])T[A-Z0-9]{6,12}(?:/|%2[Ff])B[A-Z0-9]{6,12}"
        r"(?:/|%2[Ff])(?P<s>[A-Za-z0-9]{16,48})")),
    TokenPattern("integration_key", ("/integration/",), re.compile(
        r"/integration/(?P<s>[0-9a-f]{32})(?![0-9a-f])")),
    TokenPattern("cli_password", ("-u", "-proxy-user"), re.compile(
        r"[\"'](?:-[A-Za-z]{0,6}[uU]|--(?:proxy-)?user)[\"'][ \t]{0,3},[ \t]{0,3}[\"']"
        r"(?![0-9]{1,10}:[0-9]{1,10}[\"'])[^\s:\"']{1,256}:(?P<s>[^\"'\s]{1,1024})[\"']")),
    TokenPattern("url_password", ("://",), re.compile(
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@\"'<>]{0,256}:"
        r"(?P<s>[^\s@\"'<>]{1,512})@(?=[A-Za-z0-9\[])"), _not_port_path),
)
