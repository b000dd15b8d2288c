"""Passwords in command lines, by how programs take them (not by the program's name alone).

- fed on standard input: `echo PASS | docker login --password-stdin`, `printf PASS | sudo -S`,
  `echo PASS | passwd --stdin user` (any program reading a password from stdin);
- positional: `htpasswd -b FILE USER PASS`, `mysqladmin ... password NEW`,
  `rabbitmqctl add_user|change_password USER PASS`, `net use ... PASS /user:X` and
  `net use ... /user:X PASS`, Oracle's `user/pass@db` connect strings (sqlplus, sqlldr, expdp,
  impdp, rman), `cmdkey /pass:X`, `az ... -p X`;
- `NAME=VALUE` arguments (`az deployment group create --parameters adminPasswordOrKey='…'`,
  `helm --set db.password=…`, `--settings API_TOKEN=…`): each word judged by its name and the
  value's shape (`secret_judge.is_secret`), whatever option carries it.
Each rule starts at a literal, is bounded, and runs only when its needle occurs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Final

from core.safety.secret_judge import is_secret
from core.safety.secret_names import looks_empty
from core.safety.secret_pairs import learn, mark

_WORD: Final = r"(?:'[^'\r\n]{1,256}'|\"[^\"\r\n]{1,256}\"|[^\s'\"|;&)]{1,256})"
_STDIN_RE: Final = re.compile(
    r"(?<![\w-])(?:echo|printf)(?:[ \t]+-[neE]{1,3})?(?:[ \t]+(?:\"%s\\?n?\"|'%s\\?n?'|%s))?"
    r"[ \t]+(?P<s>" + _WORD + r")[ \t]*\|[ \t]*[^\r\n|]{0,200}?"
    r"(?:--password-stdin|--pass-stdin|--passwd-stdin|--password-from-stdin|sudo[ \t]+(?:-\w+"
    r"[ \t]+)*-\w*S|passwd\b|--stdin[ \t]+\S+|-S\b)")
_POSITIONAL: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("htpasswd", re.compile(
        r"(?<![\w.-])htpasswd[ \t]+-\w*b\w*(?P<n>n)?(?:[ \t]+-\w+)*(?:[ \t]+(?!-)" + _WORD
        + r"){1,2}[ \t]+(?P<s>" + _WORD + r")")),
    ("mysqladmin", re.compile(
        r"(?<![\w.-])mysqladmin\b[^\r\n|;]{0,200}?[ \t]password[ \t]+(?P<s>" + _WORD + r")")),
    ("rabbitmqctl", re.compile(
        r"(?<![\w.-])rabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+" + _WORD
        + r"[ \t]+(?P<s>" + _WORD + r")")),
    ("net use", re.compile(
        r"(?i)(?<![\w.-])net[ \t]+use\b[^\r\n]{0,200}?[ \t]/user:\S{1,200}[ \t]+(?P<s>[^\s/*]"
        r"[^\s]{0,255})")),
    ("net use", re.compile(
        r"(?i)(?<![\w.-])net[ \t]+use(?:[ \t]+[A-Za-z]:)?[ \t]+\\{1,4}\S{1,200}[ \t]+"
        r"(?P<s>[^\s/*][^\s]{0,255})")),
    ("cmdkey", re.compile(r"(?i)(?<![\w-])/pass(?:word)?:(?P<s>[^\s/]{1,256})")),
    ("sqlplus", re.compile(
        r"(?i)(?<![\w.-])(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl|sqlcl)"
        r"(?:[ \t]+-\w+)*[ \t]+(?:userid=|target[ \t]+|auxiliary[ \t]+)?[A-Za-z0-9_$#.]{1,64}"
        r"/(?P<s>[^\s@/'\"]{1,256})(?=@|\s|$)")),
    ("openssl passwd", re.compile(
        r"(?<![\w.-])openssl[ \t]+passwd(?:[ \t]+-(?:1|5|6|apr1|aixmd5|crypt|noverify|quiet"
        r"|table|reverse|stdin)|[ \t]+-salt[ \t]+\S+)*[ \t]+(?P<s>" + _WORD + r")")),
    ("call pair", re.compile(
        r"(?P<n>[\"'][A-Za-z0-9_.\-]{1,64}[\"'])[ \t]*(?:,|\][ \t]*=|\)[ \t]*=|=>)[ \t]*"
        r"(?P<q>[\"'])(?P<s>[^\"'\r\n]{1,512})(?P=q)")),
    ("az -p", re.compile(r"(?<![\w.-])az[ \t][^\r\n|;]{0,400}?[ \t]-p(?:[ \t]+|=)"
                         r"(?![A-Za-z_][A-Za-z0-9_.\-]{0,100}=)(?P<s>" + _WORD + r")")),
)
#: A `NAME=VALUE` word of a command line (after a blank or an opening quote, consumed rather
#: than looked behind at: twice as fast on megabytes of output).
_ARG_PAIR_RE: Final = re.compile(
    r"[ \t\"'](?P<n>[A-Za-z_][A-Za-z0-9_.\-]{0,100}+)=(?P<s>'[^'\r\n]{1,512}'"
    r"|\"[^\"\r\n]{1,512}\"|[^\s'\"|;&`]{1,512})")
_ARG_NEEDLES: Final = ("pass", "pwd", "secret", "token", "key", "cred", "auth", "sig", "psk",
                       "sas", "cookie", "pat", "pin", "otp")
_ARG_NEEDLE_RE: Final = re.compile("(?i)" + "|".join(_ARG_NEEDLES))
#: cloud-init `chpasswd: list: |` blocks: one `user:password` per line.
_CHPASSWD_LIST_RE: Final = re.compile(
    r"(?m)^[ \t]+(?:-[ \t]+)?[A-Za-z_][A-Za-z0-9_.-]{0,31}:(?P<s>[^\s:]{1,256})[ \t]*$")
_NEEDLES: Final = {"htpasswd": "htpasswd", "mysqladmin": "mysqladmin",
                   "rabbitmqctl": "rabbitmqctl", "net use": "net use", "cmdkey": "/pass",
                   "sqlplus": "/", "az -p": "az ", "openssl passwd": "passwd",
                   "call pair": "'"}
_ORACLE: Final = ("sqlplus", "sqlldr", "expdp", "impdp", "rman", "dgmgrl", "sqlcl")


def _call_pair(replace: Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    """`define('DB_PASSWORD', 'x')`, `ENV['TOKEN'] = 'x'`, `'api_key' => 'x'`: judged by name."""
    def judge(match: re.Match[str]) -> str:
        if not is_secret(match.group("n").strip("\"'"), match.group("s")):
            return match.group(0)
        return replace(match)
    return judge


def _arg_pair(replace: Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    """`adminPasswordOrKey='x'` on a command line: removed when its name and shape say secret."""
    def judge(match: re.Match[str]) -> str:
        name = match.group("n")
        if _ARG_NEEDLE_RE.search(name) is None:
            return match.group(0)
        value = match.group("s").strip("\"'")
        if "[REDACTED:" in value or not is_secret(name, value):
            return match.group(0)
        return replace(match)
    return judge


def redact_command_secrets(text: str, lower: str, counts: Counter[str]) -> str:
    """Replace passwords given to programs on their command line or standard input."""
    def replace(match: re.Match[str]) -> str:
        value = match.group("s")
        bare = value.strip("'\"")
        if looks_empty(bare) or "[REDACTED:" in value or bare.startswith("-"):
            return match.group(0)
        learn(bare, "cli_secret")
        counts["cli_secret"] += 1
        start, end = match.start("s") - match.start(), match.end("s") - match.start()
        whole = match.group(0)
        quote = value[0] if value[:1] in ("'", '"') and value.endswith(value[0]) else ""
        return whole[:start] + quote + mark("cli_secret") + quote + whole[end:]

    if "|" in text and ("echo" in lower or "printf" in lower) and (
            "stdin" in lower or "passwd" in lower or ("sudo" in lower and " -s" in lower)):
        text = _STDIN_RE.sub(replace, text)
    if "chpasswd" in lower and "list" in lower:
        text = _CHPASSWD_LIST_RE.sub(replace, text)
    if "=" in text:  # each name is checked for a secret word before it is judged
        text = _ARG_PAIR_RE.sub(_arg_pair(replace), text)
    for name, pattern in _POSITIONAL:
        if name == "sqlplus" and not any(p in lower for p in _ORACLE):
            continue
        if name == "call pair":
            if "define(" in lower or "environ[" in lower or "env[" in lower or "setenv(" in lower \
                    or "=>" in text:
                text = pattern.sub(_call_pair(replace), text)
            continue
        if _NEEDLES[name] in lower:
            text = pattern.sub(replace, text)
    return text
