"""Secrets held by syntax the key/value passes do not see: words, not `key=value`.

Three classes, each found by the shape of the text and judged by key and value:
- **Word pairs** (directive configs, SQL, command arguments): a line is read as words (quoted
  strings whole, SQL's `N'..'`, with `(` `)` `,` `=` `;` as separators), and the word after a
  secret-named word is its value: `requirepass X`, `masterauth X`, `user u password X`,
  `: PSK "X"`, `secret X`, `proxy_set_header Authorization "Basic X"`, `ALTER ROLE r PASSWORD
  'X'`, `SET PASSWORD = PASSWORD('X')`, `IDENTIFIED [WITH plugin] BY 'X'`, `nmcli … password X`.
  A quoted value is a value; an unquoted one must look like a password (a digit or symbol or an
  inner capital), so prose (`Failed password for root`, `Password expired`) stays.
- **Escaped JSON** inside a string: `{\"password\":\"X\"}`, double escaped, `\u0022`, `&quot;`:
  the same escape spelling on both sides of the key and the value.
- **Short password options** of any program: `-p X`, `-pX`, `-P X`, `/p:X`, judged by the
  value's shape, since `-p` is a port, a path or a PID for most programs (`ssh -p 2222`,
  `mkdir -p /x`, `ps -p 1`, `cp -p a b`).
Linear: lines are visited only where a needle occurs, words per line are bounded, and each
pattern starts at a literal.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Final

from core.safety.secret_judge import innocent_value, is_secret, name_class, weak_secret_shape
from core.safety.secret_names import looks_empty
from core.safety.secret_pairs import learn, mark

#: Where a secret-named word is followed by a word (searched on the lowercased text): the
#: lines worth reading word by word. `name=value` and `"name": value` are not (other passes).
_LINE_NEEDLE_RE: Final = re.compile(
    r"(?:pass|pwd|pw|secret|psk|auth|key|token|identified|credential|cookie)"
    r"[a-z0-9_.-]{0,40}[ \t(]{1,8}(?:=[ \t]{0,8})?[^\s=:,;)]")
_WORD_RE: Final = re.compile(
    r"(?P<pre>[NnEeXxBbUu]&?)?'(?P<sq>(?:[^'\r\n]|''){0,1024})'"
    r"|\"(?P<dq>(?:[^\"\\\r\n]|\\.){0,1024})\"|(?P<sep>[(),;=])|(?P<bare>[^\s(),;='\"]{1,1024})")
_NAME_RE: Final = re.compile(r"^[@$]?[A-Za-z][A-Za-z0-9_.-]{0,63}$")
#: A password hash in its scheme's braces (`{SSHA}…`, `{CRYPT}$6$…`): LDAP and Dovecot.
_SCHEME_HASH_RE: Final = re.compile(r"^\{[A-Z0-9.-]{2,16}\}\S{4,}$")
#: Header names that carry credentials as a directive's value (`proxy_set_header NAME VALUE`).
_HEADER_NAMES: Final = frozenset({"authorization", "proxy-authorization", "cookie",
                                  "set-cookie"})
#: A file named by a directive (`secret static.key`, `tls-auth ta.key`): not the secret itself.
_FILE_RE: Final = re.compile(
    r"^[\w.-]{1,200}\.(?:key|pem|crt|cer|der|pub|p12|pfx|jks|txt|conf|cfg|json|ya?ml|ini|db"
    r"|secret|secrets|gpg|asc|ovpn|htpasswd)$", re.IGNORECASE)
_TYPE_MARKER_RE: Final = re.compile(r"^[0-9]$")
_MAX_WORDS: Final = 256


class _Word:
    __slots__ = ("start", "end", "text", "quoted", "sep")

    def __init__(self, start: int, end: int, text: str, quoted: bool, sep: bool) -> None:
        self.start, self.end, self.text, self.quoted, self.sep = start, end, text, quoted, sep


def _words(line: str) -> list[_Word]:
    words: list[_Word] = []
    for found in _WORD_RE.finditer(line):
        if found.group("sq") is not None:
            words.append(_Word(found.start("sq"), found.end("sq"),
                               found.group("sq").replace("''", "'"), True, False))
        elif found.group("dq") is not None:
            words.append(_Word(found.start("dq"), found.end("dq"), found.group("dq"), True,
                               False))
        elif found.group("sep") is not None:
            words.append(_Word(found.start(), found.end(), found.group("sep"), False, True))
        else:
            words.append(_Word(found.start(), found.end(), found.group("bare"), False, False))
        if len(words) >= _MAX_WORDS:
            break
    return words


def password_shape(value: str) -> bool:
    """An unquoted word that looks like a password rather than prose, a number or a name:
    a letter with a digit or a symbol, or a capital inside the word (`Wif1Pw`, `Q!w2e`)."""
    v = value.strip()
    if v.endswith(":") or ("://" in v and "@" not in v):
        return False  # a label (`policy:`) or a plain URL, not a value
    if len(v) < 4 or innocent_value(v) or looks_empty(v) or _FILE_RE.match(v) or v[:1] in "[<(":
        return False
    if v.isupper() and v.replace("_", "").isalpha():
        return False  # PASSWORD, a metavar
    letters = any(c.isalpha() for c in v)
    digits = any(c.isdigit() for c in v)
    symbols = any(not c.isalnum() and c not in "._-" for c in v)
    inner_capital = any(c.isupper() for c in v[1:]) and any(c.islower() for c in v)
    return (letters and (digits or symbols or inner_capital)) or (digits and symbols)


def _option_password(value: str) -> bool:
    """Stricter than `password_shape` for `-p`, which is usually a port, PID, path or file:
    a capital inside the word or a symbol (`Z1pPw`, `Q!w2e`), never `file1` or `ff00`."""
    v = value.strip()
    if not password_shape(v) or v[:1] in "[<(":
        return False
    inner_capital = any(c.isupper() for c in v[1:]) and any(c.islower() for c in v)
    symbol = any(not c.isalnum() and c not in "._-" for c in v)
    return inner_capital or symbol


def _strong(name: str) -> bool:
    return name.lower() in _HEADER_NAMES or name_class(name) == "strong"


def _value_after(words: list[_Word], index: int) -> _Word | None:
    """The value word after a name at `index`: skips `=`, `(`, `WITH`-less type markers."""
    j = index + 1
    assigned = False
    while j < len(words) and words[j].sep and words[j].text in "=(":
        assigned = assigned or words[j].text == "="
        j += 1
    if j + 1 < len(words) and not words[j].quoted and _TYPE_MARKER_RE.match(words[j].text) \
            and not words[j + 1].sep:
        j += 1  # Cisco `password 7 0822…`, `secret 5 $1$…`
    if j < len(words) and not words[j].sep and (words[j].quoted or not assigned):
        return words[j]  # after `=` only a quoted literal (SQL); `k=v` is for the k=v passes
    return None


def _secret_word(name: str, value: _Word, *, directive: bool, prose_key: bool) -> bool:
    text = value.text
    if _SCHEME_HASH_RE.match(text) and _strong(name):
        return True
    if not text or "[REDACTED:" in text or innocent_value(text) or looks_empty(text):
        return False
    if _FILE_RE.match(text):
        return False
    strong = _strong(name)
    if not strong and name_class(name) != "weak":
        return False
    if value.quoted:
        return strong or weak_secret_shape(text) or password_shape(text)
    # unquoted: a password's shape, so `authorization failed`, `Set-Cookie header missing`
    # and `requirepass foobared` alike stay (a plain word cannot be told from prose)
    return password_shape(text) if strong else weak_secret_shape(text) or (
        password_shape(text) and len(text) >= 8 and ":" not in text)


def _identified_by(words: list[_Word], index: int) -> bool:
    """`IDENTIFIED BY x`, `IDENTIFIED WITH plugin BY x`: the word at `index` is that BY."""
    if words[index].text.lower() != "by":
        return False
    return any(w.text.lower() == "identified" for w in words[max(0, index - 3):index])


def _line_secrets(line: str) -> list[_Word]:
    words = _words(line)
    found: list[_Word] = []
    if len(words) < 2:
        return found
    first = words[0]
    if (not first.quoted and not first.sep and _NAME_RE.match(first.text) and not words[1].sep
            and 2 <= len([w for w in words if not w.sep]) <= 3):
        value = words[-1] if not words[-1].sep else (words[-2] if len(words) > 2 else None)
        if value is not None and value is not first:
            prose = first.text[:1].isupper() and first.text[1:].islower()
            if _secret_word(first.text, value, directive=True, prose_key=prose):
                return [value]
    for index, word in enumerate(words[:-1]):
        if word.quoted or word.sep:
            continue
        if _identified_by(words, index):
            value = _value_after(words, index)
            if value is not None and (value.quoted or password_shape(value.text)):
                found.append(value)
            continue
        if any(c.isdigit() for c in word.text) and password_shape(word.text):
            continue  # `Lftp9Pw`: a value that happens to end in a secret word, not a name
        call = words[index + 1].text == "("
        if not _NAME_RE.match(word.text) or (index and words[index - 1].text == "="
                                             and not call):
            continue  # `secretName=db-password`: a value, not a name (`= PASSWORD('x')` is)
        value = _value_after(words, index)
        if value is not None and not value.quoted and _NAME_RE.match(value.text):
            after = words.index(value) + 1
            if after < len(words) and words[after].text == "=":
                continue  # `… keyName=key1`: the next word is itself a key
        if value is not None and _secret_word(word.text, value, directive=False,
                                              prose_key=True):
            found.append(value)
    return found


def redact_word_pairs(text: str, lower: str, counts: Counter[str]) -> str:
    """Secret-named words followed by their value, on every line where a needle occurs."""
    rows: list[int] = []
    last_row_end = -1
    for needle in _LINE_NEEDLE_RE.finditer(lower):
        if needle.start() <= last_row_end:
            continue
        start = lower.rfind("\n", 0, needle.start()) + 1
        end = lower.find("\n", needle.end())
        end = len(lower) if end == -1 else end
        rows.append(start)
        last_row_end = end
    if not rows:
        return text
    out: list[str] = []
    pos = 0
    for start in rows:
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        line = text[start:end]
        secrets = _line_secrets(line[:8192])
        if not secrets:
            continue
        out.append(text[pos:start])
        cursor = 0
        for word in sorted(secrets, key=lambda w: w.start):
            if word.start < cursor:
                continue
            stop = word.end
            if not word.quoted:  # `$6$rounds=5000$salt$hash`: the whole unquoted run
                while stop < len(line) and not line[stop].isspace() and line[stop] not in ";,)":
                    stop += 1
            out.append(line[cursor:word.start])
            out.append(mark("secret_value"))
            learn(line[word.start:stop], "secret_value")
            counts["secret_value"] += 1
            cursor = stop
        out.append(line[cursor:])
        pos = end
    out.append(text[pos:])
    return "".join(out)


# ---- escaped JSON -------------------------------------------------------------------------

_ESCAPED_PAIR_RE: Final = re.compile(
    r"(?P<q>\\{1,15}\"|\\{1,7}u0022|&quot;|\\{1,7}x22|%22|%2522)"
    r"(?P<n>[A-Za-z0-9_.$@\-]{1,100})(?P=q)"
    r"[ \t]{0,5}(?::|%3[Aa]|%253[Aa])[ \t]{0,5}(?P=q)(?P<v>(?:(?!(?P=q))[^\r\n]){1,4096}?)(?P=q)")
#: An escaped quote closing a key, then the colon: cheap substring tests before the regex.
_ESCAPED_COLONS: Final = ('\\":', '\\" :', "u0022:", "u0022 :", "&quot;:", "x22:", "%22%3A",
                          "%22%3a", "%22:", "%2522%253A", "%2522%253a")
_UNESCAPE_RE: Final = re.compile(r"\\+(?=[\"/\\])|\\+u002[2f]|&quot;|%(?:25)?2[2Ff]")


def redact_escaped_json(text: str, counts: Counter[str]) -> str:
    """`"{\\"password\\":\\"X\\"}"` and its deeper or \\u0022 spellings, judged by key."""
    if not any(needle in text for needle in _ESCAPED_COLONS):
        return text

    out: list[str] = []
    pos = 0
    search_from = 0
    while True:
        match = _ESCAPED_PAIR_RE.search(text, search_from)
        if match is None:
            break
        name, raw = match.group("n"), match.group("v")
        value = _UNESCAPE_RE.sub("", raw)
        if "[REDACTED:" in raw or raw.lstrip("\\").startswith(("{", "[")) or not is_secret(
                name, value):
            search_from = match.start("v")  # an object as the value: look inside it
            continue
        learn(raw, "secret_value")
        if value != raw:
            learn(value, "secret_value")
        counts["secret_value"] += 1
        out.append(text[pos:match.start("v")])
        out.append(mark("secret_value"))
        pos = search_from = match.end("v")
    out.append(text[pos:])
    return "".join(out)


# ---- password schemes -------------------------------------------------------------------------

#: Dovecot/OpenLDAP password fields name their scheme in braces: `{PLAIN}pw`, `{SSHA}hash`,
#: `{SHA512-CRYPT}$6$…` (a password or its hash, wherever the line puts it: passdb files,
#: slapd.conf, LDIF `userPassword:`).
_SCHEME_RE: Final = re.compile(
    r"\{(?:PLAIN|CLEARTEXT|CLEAR|PLAIN-MD5|CRAM-MD5|DIGEST-MD5|S?SHA(?:256|512)?|S?MD5|CRYPT"
    r"|(?:SHA256|SHA512|MD5|BLF|DES)-CRYPT|BLF|ARGON2IDc?|ARGON2I|PBKDF2(?:-SHA\d{1,3})?"
    r"|SCRAM-SHA-\d{1,3})\}(?P<s>[^\s:\"',;]{1,1024})", re.IGNORECASE)


def redact_password_schemes(text: str, counts: Counter[str]) -> str:
    """`{PLAIN}pw`, `{SSHA}…`: the value after a password scheme's braces."""
    if "}" not in text or "{" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        value = match.group("s")
        if "[REDACTED:" in value:
            return match.group(0)
        learn(value, "secret_value")
        counts["secret_value"] += 1
        return match.group(0)[: match.start("s") - match.start()] + mark("secret_value")
    return _SCHEME_RE.sub(replace, text)


# ---- short password options -----------------------------------------------------------------

_SHORT_OPTION_RE: Final = re.compile(
    r"(?<=[ \t])(?:-[pP](?:[ \t]{1,5}|(?=[^\s-]))|/p(?:ass(?:word)?)?:)"
    r"(?P<s>'[^'\r\n]{1,256}'|\"[^\"\r\n]{1,256}\"|[^\s'\"|;&-][^\s'\"|;&]{0,255})")


def redact_short_password_options(text: str, counts: Counter[str]) -> str:
    """`-p X`, `-pX`, `-P X`, `/p:X` of any program, when X has a password's shape."""
    if " -p" not in text and " -P" not in text and " /p" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        raw = match.group("s")
        value = raw[1:-1] if raw[:1] in "'\"" and raw[-1:] == raw[:1] and len(raw) > 1 else raw
        if "[REDACTED:" in raw or not _option_password(value):
            return match.group(0)
        if value[:1] in "/~$" or re.fullmatch(r"[0-9,:.\-/]{1,64}", value):
            return match.group(0)  # a path, a variable, ports or PIDs
        learn(value, "cli_secret")
        counts["cli_secret"] += 1
        start = match.start("s") - match.start()
        quote = raw[0] if raw[:1] in "'\"" and raw.endswith(raw[0]) and len(raw) > 1 else ""
        return match.group(0)[:start] + quote + mark("cli_secret") + quote
    return _SHORT_OPTION_RE.sub(replace, text)
