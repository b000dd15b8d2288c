"""The token-shaped secrets redaction recognises by their form, with the needles that gate them.

Each pattern starts at a literal or behind a negative look-behind boundary and has no nested
unbounded quantifiers, so each start position costs bounded work and no input makes redaction
slow. A named group `s` (or `s2`, `s3`) is the part replaced; without one, the whole match is.
A pattern runs only when one of its lower-case needles occurs in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class TokenPattern:
    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    #: extra judgement on the replaced value (None: always a secret)
    accept: Callable[[str], bool] | None = None


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _not_auth_param(value: str) -> bool:
    """WWW-Authenticate: Bearer realm="x", authorization_uri="...": parameters, not a token."""
    return re.match(r"[A-Za-z_]+=", value) is None


def _not_a_path(value: str) -> bool:
    """PWD=/home/x or PWD=C:\\Users is the working directory, not a database password."""
    return not (value.startswith(("/", "~")) or re.match(r"[A-Za-z]:[\\/]", value))


#: A connection-string value; ODBC quotes values containing `;` in braces (`Pwd={a;b}`, with
#: `}}` standing for a literal brace), so a brace value runs to its closing brace.
_ODBC_VALUE: Final = (r"\{(?:[^}\r\n]|\}\}){0,1024}\}[^;\"'\s<>]{0,1024}"
                      r"|(?![\[<])[^;\"'\s<>]{1,4096}")

#: A header value: a JSON string, a single-quoted shell word, or the rest of the line with any
#: balanced double-quoted parts (Digest username="u", response="...").
_HEADER_VALUE: Final = (
    r"(?:\"(?P<s>(?:[^\"\\\r\n]|\\.){1,4096})\"|'(?P<s2>[^'\r\n]{1,4096})'"
    r"|(?P<s3>[^\r\n'\"]{1,4096}(?:\"[^\"\r\n]{0,1024}\"[^\r\n'\"]{0,1024}){0,16}))")
#: A token starts at a word boundary, or right after an escape that stands for one
#: (`\u0022eyJ...` in JSON, `%3DeyJ...` in a URL, `\x22` in a log).
_AFTER_ESCAPE: Final = (r"(?:(?<![A-Za-z0-9_-])|(?<=%[0-9A-Fa-f]{2})|(?<=\\u[0-9A-Fa-f]{4})"
                        r"|(?<=\\x[0-9A-Fa-f]{2}))")
#: Signatures Azure puts into its "identifiable" keys (Service Bus, Event Hubs, Relay, Functions,
#: Cosmos DB, Search, API Management, storage, Container Registry, Event Grid, IoT).
_AZURE_SIGNATURES: Final = ("AzFu", "ACDb", "+ASb", "+AEh", "+ARm", "AzSe", "+AStg", "APIM",
                            "AzCa", "AZEG", "+ACR", "AIoT")

TOKEN_PATTERNS: Final[tuple[TokenPattern, ...]] = (
    TokenPattern("url_password", ("://",), re.compile(
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@\"'<>]{0,256}:"
        r"(?P<s>[^\s/@\"'<>]{1,512}(?:@[^\s/@\"'<>]{1,512}){0,4})@")),
    # https://<PAT>@dev.azure.com/...: a token used as the user name (ssh://git@ is too short)
    TokenPattern("url_token", ("://",), re.compile(
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://(?P<s>[A-Za-z0-9_~-]{30,256})@")),
    TokenPattern("jwt", ("eyj",), re.compile(
        _AFTER_ESCAPE + r"eyJ[A-Za-z0-9_-]{6,}\.(?:[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*"
        r"|eyJ[A-Za-z0-9_-]{6,})")),
    TokenPattern("bearer_token", ("bearer",), re.compile(
        r"(?i)\bbearer(?:[ \t]{1,10}|%20|\+)(?P<s>[A-Za-z0-9._~+/=-]{8,})"), _not_auth_param),
    TokenPattern("authorization_header", ("authorization",), re.compile(
        r"(?i)(?<![A-Za-z0-9_-])(?:proxy-)?authorization[\"']?[ \t]{0,5}[:=][ \t]{0,5}"
        + _HEADER_VALUE)),
    TokenPattern("credential_header", (
        "cookie", "api-key", "subscription-key", "functions-key", "x-ms-token-", "auth-token",
        "private-token", "vault-token", "aeg-sas-"), re.compile(
        r"(?i)(?<![A-Za-z0-9_-])(?:set-cookie|cookie|x-api-key|api-key|x-goog-api-key|"
        r"ocp-apim-subscription-key|x-functions-key|x-ms-token-[a-z-]{1,40}|x-auth-token|"
        r"private-token|x-vault-token|aeg-sas-key|aeg-sas-token)"
        r"[\"']?[ \t]{0,5}:[ \t]{0,5}" + _HEADER_VALUE)),
    TokenPattern("slack_token", ("xox", "xapp-"), re.compile(
        r"(?<![A-Za-z0-9-])(?:xox[abposrecd]|xapp)[.-][A-Za-z0-9.%-]{10,}")),
    TokenPattern("slack_webhook", ("hooks.slack.com",), re.compile(
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9/_-]{8,})")),
    TokenPattern("google_api_key", ("aiza",), re.compile(
        r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}")),
    TokenPattern("google_oauth", ("ya29.", "gocspx-"), re.compile(
        r"(?<![A-Za-z0-9_-])(?:ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[A-Za-z0-9_-]{20,})")),
    TokenPattern("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
                 re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,255}|"
                            r"github_pat_[A-Za-z0-9_]{22,255})")),
    TokenPattern("aws_access_key_id", ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa",
                                       "anpa", "anva", "aipa"), re.compile(
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"
        r"(?![A-Z0-9])")),
    TokenPattern("api_token", ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_", "sk-",
                               "npm_", "glpat-", "hf_", "dop_v1_", "xkeysib-", "shpat_"),
                 re.compile(
        r"(?<![A-Za-z0-9_-])(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}|"
        r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}|npm_[A-Za-z0-9]{36}|glpat-[A-Za-z0-9_-]{20,}|"
        r"hf_[A-Za-z0-9]{30,}|dop_v1_[a-f0-9]{64}|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}|"
        r"shpat_[a-fA-F0-9]{32})")),
    TokenPattern("sendgrid_key", ("sg.",), re.compile(
        r"(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}")),
    TokenPattern("api_token", ("pypi-", "dckr_", "hvs.", "hvb.", "hvr.", "hrku-", "key-"),
                 re.compile(
        r"(?<![A-Za-z0-9_-])(?:pypi-AgE[A-Za-z0-9_-]{50,}|dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}"
        r"|hv[sbr]\.[A-Za-z0-9_-]{24,}|HRKU-[A-Za-z0-9_-]{20,}|key-[0-9a-f]{32})"
        r"(?![A-Za-z0-9_-])")),
    # Twilio API key SIDs (SK + 32 hex) are used as the user name of the key's secret
    TokenPattern("api_token", ("sk",), re.compile(
        r"(?<![A-Za-z0-9_-])SK[0-9a-f]{32}(?![A-Za-z0-9_-])")),
    # Discord bot tokens: base64(user id).timestamp.hmac
    TokenPattern("api_token", ("m", "n", "o"), re.compile(
        r"[MNO](?<![A-Za-z0-9_.-][MNO])[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"
        r"(?![A-Za-z0-9_.-])")),
    # Telegram bot tokens: bot id:secret (also inside api.telegram.org/bot<id>:<secret>/)
    TokenPattern("api_token", (":aa",), re.compile(
        r"(?<![0-9])[0-9]{6,12}:(?P<s>AA[A-Za-z0-9_-]{30,40})(?![A-Za-z0-9_-])")),
    # chat webhooks carry their secret in the path
    TokenPattern("webhook_url", ("webhook.office.com", "outlook.office.com/webhook",
                                 "discord.com/api/webhooks", "discordapp.com/api/webhooks"),
                 re.compile(
        r"(?i)(?:webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook"
        r"|discord(?:app)?\.com/api/webhooks)/(?P<s>[A-Za-z0-9@/_.-]{8,1024})")),
    # a kubeconfig, base64-encoded ("apiVersion: ..."), as az aks credential reads return it
    TokenPattern("kubeconfig", ("yxbpvmvyc2lvbj",), re.compile(
        r"YXBpVmVyc2lvbj[A-Za-z0-9+/]{16,65536}={0,2}")),
    # an Azure SAS signature inside a URL-encoded query (sas%3D.. in a redirect or log line)
    TokenPattern("sas_signature", ("sig%3d",), re.compile(
        r"(?i)(?<![A-Za-z0-9_](?<!%26)(?<!%3f))sig%3D(?P<s>(?:[A-Za-z0-9._~+-]|%(?!26)[0-9A-Fa-f]{2}){1,4096})")),
    TokenPattern("azure_devops_pat", ("azdo",), re.compile(
        r"(?<![A-Za-z0-9])[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}(?![A-Za-z0-9])")),
    TokenPattern("azure_key", tuple(s.lower() for s in _AZURE_SIGNATURES), re.compile(
        r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{30,84}(?:"
        + "|".join(re.escape(s) for s in _AZURE_SIGNATURES)
        + r")[A-Za-z0-9+/]{0,8}={1,2}(?![A-Za-z0-9+/=])")),
    TokenPattern("entra_client_secret", ("q~",), re.compile(
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"
        r"(?![A-Za-z0-9_~.-])")),
    # a PEM private key, base64-encoded (kubeconfig client-key-data, Kubernetes secrets)
    TokenPattern("private_key", ("ls0tls1crudjti",), re.compile(
        r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,24}?(?:UFJJVkFURSBLRVk|BSSVZBVEUgS0VZ|QUklWQVRFIEtFW)"
        r"[A-Za-z0-9+/=]{0,65536}")),
    TokenPattern("connection_string_secret", ("key=", "signature=", "password=", "secret=",
                                              "token="), re.compile(
        r"(?i)(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey|SharedAccessSignature|Password|"
        r"SharedSecret|AccessKey|ClientSecret|AccessToken)="
        r"(?P<s>" + _ODBC_VALUE + r")")),
    TokenPattern("connection_string_secret", ("pwd=",), re.compile(
        r"(?i);[ \t]{0,3}pwd=(?P<s>" + _ODBC_VALUE + r")"), _not_a_path),
    # Pwd=... opening a connection string; the shell's PWD=/home/x is a directory, not a secret
    TokenPattern("connection_string_secret", ("pwd=",), re.compile(
        r"(?i)(?<![A-Za-z0-9_;])pwd=(?P<s>" + _ODBC_VALUE + r");"), _not_a_path),
    TokenPattern("sas_signature", ("sig=",), re.compile(
        r"(?i)(?<![A-Za-z0-9_](?<!\\u0026))sig="
        r"(?P<s>(?:[^&\s\"'<>;\\]|\\(?!u00)){1,4096})")),
    # Azure Functions keys in URLs (?code=...), OAuth authorization codes
    TokenPattern("url_code", ("code=",), re.compile(
        r"(?i)(?<=[?&#])code=(?P<s>[A-Za-z0-9_%/+=.~-]{20,1024})"), _has_digit),
    # curl -u u:p, -uu:p, -su u:p, --user=u:p, --proxy-user u:p, -U u:p (not uid:gid)
    TokenPattern("cli_password", ("-u", "u ", "u\t", "-proxy-user"), re.compile(
        r"-(?<![A-Za-z0-9_-]-)(?:-(?:proxy-)?user(?:=|[ \t]{1,5})|[A-Za-z]{0,6}[uU][ \t]{1,5}"
        r"|[uU])[\"']?(?![0-9]{1,10}:[0-9]{1,10}(?:[\s\"']|$))[^\s:\"'=]{1,256}:"
        r"(?P<s>[^\s\"']{1,1024})")),
    TokenPattern("netrc_password", ("machine",), re.compile(
        r"(?i)\bmachine[ \t]+\S{1,253}[ \t\r\n]+(?:login[ \t]+\S{1,256}[ \t\r\n]+)?"
        r"password[ \t]+(?P<s>\S{1,1024})")),
    TokenPattern("cli_password", ("convertto-securestring",), re.compile(
        r"(?i)ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?[\"']?(?P<s>[^\"'\s]{1,1024})")),
)

#: (needles, program, flag, count): on a line where `program` matches, `flag` finds the
#: password the program takes in its own syntax (mysql -pSECRET, sshpass -p SECRET, sqlcmd -P
#: SECRET ...), at most `count` times per line (a program takes one password; openssl two).
_VALUE: Final = r"(?P<s>'[^'\r\n]{1,256}'|\"[^\"\r\n]{1,256}\"|[^\s'\"]{1,256})"
PROGRAM_FLAGS: Final[tuple[tuple[tuple[str, ...], re.Pattern[str], re.Pattern[str], int],
                           ...]] = (
    (("mysql", "mariadb"), re.compile(
        r"(?<![\w.-])(?:mysql|mariadb|mysqldump|mysqladmin|mysqlsh|mysqlimport|mysqlcheck|"
        r"mariadb-dump)(?![\w-])"), re.compile(r"(?<=[ \t])-p" + _VALUE), 1),
    (("sshpass",), re.compile(r"(?<![\w.-])sshpass(?![\w-])"),
     re.compile(r"(?<=[ \t])-p[ \t]*" + _VALUE), 1),
    (("sqlcmd", "bcp", "osql", "isql"), re.compile(r"(?<![\w.-])(?:sqlcmd|bcp|osql|isql)(?![\w-])"),
     re.compile(r"(?<=[ \t])-P[ \t]*" + _VALUE), 1),
    (("redis-cli",), re.compile(r"(?<![\w.-])redis-cli(?![\w-])"),
     re.compile(r"(?<=[ \t])-a[ \t]+" + _VALUE), 1),
    (("login",), re.compile(
        r"(?<![\w.-])(?:docker|podman|nerdctl|helm[ \t]+registry|oras|buildah|skopeo)[ \t]+"
        r"login(?![\w-])"), re.compile(r"(?<=[ \t])-p[ \t]+" + _VALUE), 1),
    (("mongo",), re.compile(r"(?<![\w.-])mongo(?:sh|dump|restore|export|import|stat|top)?"
                            r"(?![\w-])"), re.compile(r"(?<=[ \t])-p[ \t]+" + _VALUE), 1),
    (("ldap",), re.compile(r"(?<![\w.-])ldap(?:search|modify|add|delete|whoami|passwd|compare)"
                           r"(?![\w-])"), re.compile(r"(?<=[ \t])-w[ \t]*" + _VALUE), 1),
    (("smbclient", "rpcclient", "smbmap"), re.compile(
        r"(?<![\w.-])(?:smbclient|rpcclient|smbmap)(?![\w-])"),
     re.compile(r"(?<=[ \t])-U[ \t]*[^\s%]{1,256}%(?P<s>\S{1,256})"), 1),
    (("pass:",), re.compile(r"(?<![\w.-])(?:openssl|pkcs12|-passin|-passout|-pass)(?![\w-])"),
     re.compile(r"(?<![A-Za-z0-9])pass:" + _VALUE), 4),
    # openssl enc -k PASSWORD (the password itself, not a file)
    (("openssl",), re.compile(r"(?<![\w.-])openssl[ \t]+enc(?![\w-])"),
     re.compile(r"(?<=[ \t])-k[ \t]+" + _VALUE), 1),
    # nuget push -k API_KEY, dotnet nuget push -k API_KEY
    (("nuget",), re.compile(r"(?<![\w.-])nuget(?![\w-])"),
     re.compile(r"(?<=[ \t])-k[ \t]+" + _VALUE), 1),
)
