"""Structure first: find secrets by the structure that holds them, then judge key and shape.

- JSON (the whole text): every string is judged with the key that holds it (`secret_judge`);
  an object under a strong key (`"adminPasswordOrKey": {"value": ...}`, `protectedSettings`)
  has all its plain values judged secret; ARM `securestring`/`secureObject` parameters lose their
  `defaultValue` and `value`; `{"name": N, "value"|"secureValue": V}` pairs are judged by N.
- Lines (YAML, INI, `.env`, Java properties, HTTP headers): `key: value`, `key = value`,
  `export KEY=value`, with the value on the same line, in a YAML block scalar (`|`, `|-`, `>-`)
  or on the next, more indented line; every value under `data:`/`stringData:` of a Kubernetes
  `kind: Secret`.
- XML: text content judged by its element, or by its parent when the element is a generic
  `<Value>` (unattend.xml `<Password><Value>...`), or by a `key=`/`name=` attribute
  (`<entry key="db.password">`), across lines.
- URL query parameters (`X-Amz-Signature=`, `SAMLResponse=`, `access_token=`) and header
  arguments (`-H 'X-JFrog-Art-Api: ...'`), decoded when percent-encoded.

Each value found is replaced in place and learned (`secret_pairs.learn`), so its other
occurrences go too. Bounded work: JSON up to 4 MB is parsed, lines are visited only where a
cheap needle says a key might be secret, XML only when the text has closing tags.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Final
from urllib.parse import unquote

from core.safety.secret_judge import innocent_value, is_secret, name_class, weak_secret_shape
from core.safety.secret_pairs import learn, mark

_PARSE_LIMIT: Final = 4 * 1024 * 1024
_NAME_KEYS: Final = ("name", "Name", "key", "Key", "keyName", "KeyName", "settingName",
                     "variable", "Variable", "var", "param", "parameter", "setting", "field",
                     "parameterName", "variableName")
_VALUE_KEYS: Final = ("value", "Value", "secureValue", "SecureValue", "val", "secretValue")
_JSON_STRING_RE: Final = re.compile(r'"((?:[^"\\\r\n]|\\.){1,65536})"')


# ---- JSON -----------------------------------------------------------------------------

#: Under a strong key, these keys hold the secret itself (ARM parameters, ACI, Terraform).
_VALUE_NAMES: Final = frozenset({"value", "defaultvalue", "securevalue", "secret", "password"})


def _strings_under(node: object, found: dict[str, str]) -> None:
    """The values below a strong key: its `value`, strong keys, and credential-shaped strings.

    `"adminPassword": {"value": "x"}` and `"protectedSettings": {"commandToExecute": "… --token
    T0ken …"}` lose their values; `"secrets": ["get", "list"]` (Key Vault permissions) keeps its
    words, and keys that only point at a secret (`name`, `type`, `hint`) keep theirs.
    """
    if isinstance(node, dict):
        for key, value in node.items():
            name = str(key)
            if isinstance(value, str):
                cls = name_class(name)
                if cls == "pointer" or innocent_value(value):
                    continue
                if (name.lower() in _VALUE_NAMES or cls == "strong" or weak_secret_shape(value)
                        or " " in value.strip()):
                    found[value] = "secret_value"
            else:
                _strings_under(value, found)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, str):
                if not innocent_value(item) and weak_secret_shape(item):
                    found[item] = "secret_value"
            else:
                _strings_under(item, found)


def _walk(node: object, found: dict[str, str], depth: int = 0) -> None:
    if depth > 64:
        return
    if isinstance(node, dict):
        kind = node.get("type")
        if isinstance(kind, str) and kind.lower() in ("securestring", "secureobject"):
            for key in ("defaultValue", "value"):
                if key in node:
                    _strings_under({key: node[key]}, found)
        named = next((node[k] for k in _NAME_KEYS if isinstance(node.get(k), str)), None)
        for key in _VALUE_KEYS:
            value = node.get(key)
            if isinstance(value, str) and not innocent_value(value) and (
                    key.lower() == "securevalue" or (named is not None
                                                     and is_secret(named, value))):
                found[value] = "secret_value"
        for key, value in node.items():
            name = str(key)
            if isinstance(value, str):
                if is_secret(name, value):
                    found[value] = "secret_value"
            elif isinstance(value, (dict, list)):
                if name_class(name) == "strong":
                    _strings_under(value, found)
                _walk(value, found, depth + 1)
    elif isinstance(node, list):
        for item in node:
            _walk(item, found, depth + 1)


def redact_json_document(text: str, counts: Counter[str]) -> str:
    """If the whole text is JSON, redact the strings its structure says are secrets."""
    head = text.lstrip()[:1]
    if head not in ("{", "[") or len(text) > _PARSE_LIMIT:
        return text
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    found: dict[str, str] = {}
    _walk(doc, found)
    return replace_json_strings(text, found, counts) if found else text


def replace_json_strings(text: str, found: dict[str, str], counts: Counter[str]) -> str:
    """Replace every JSON string literal whose value is one of `found` (kept valid JSON)."""
    for value, kind in found.items():
        learn(value, kind)

    def replace(match: re.Match[str]) -> str:
        raw = match.group(1)
        value = raw
        if "\\" in raw:
            try:
                value = json.loads(f'"{raw}"')
            except ValueError:
                return match.group(0)
        kind = found.get(value)
        if kind is None:
            return match.group(0)
        counts[kind] += 1
        return f'"{mark(kind)}"'
    return _JSON_STRING_RE.sub(replace, text)


# ---- key/value lines: YAML, INI, .env, properties, headers ------------------------------

#: Key/value lines (searched on the lowercased text); the key is then checked for a needle.
_CANDIDATE_RE: Final = re.compile(
    r"(?m)^[ \t]*+(?:- )?(?:export )?[\"']?(?P<key>[a-z0-9_.$@/\-]{1,160}+)[\"']?[ \t]*+[:=]")
_KEY_NEEDLE_RE: Final = re.compile(
    r"pass|pwd|secret|token|key|auth|cred|sig|psk|sas|cookie|session|private|cert|secure"
    r"|protected|api|pat|saml|bearer|jwt|otp|pin")
_LINE_RE: Final = re.compile(
    r"^(?P<indent>[ \t]*)(?:-[ \t]+)?(?:export[ \t]+)?(?P<q>[\"']?)(?P<key>[A-Za-z0-9_.$@/\-]"
    r"{1,160})(?P=q)[ \t]*(?P<sep>[:=])[ \t]*(?P<value>[^\r\n]*)$")
_BLOCK_RE: Final = re.compile(r"^[|>](?:[+-]?[0-9]?|[0-9][+-])[ \t]*(?:#.*)?$")
_KIND_SECRET_RE: Final = re.compile(r"(?m)^kind:[ \t]*Secret[ \t]*$")
_DATA_RE: Final = re.compile(r"(?m)^(?P<indent>[ \t]*)(?:data|stringData):[ \t]*$")


def _plain_value(value: str, yaml_like: bool) -> tuple[int, int]:
    """The span (within `value`) of the scalar itself: quotes, trailing comments, commas."""
    end = len(value.rstrip())
    while end > 0 and value[end - 1] in ",;":
        end -= 1
    if value[:1] in ("'", '"') and end >= 2 and value[end - 1] == value[0]:
        return 1, end - 1
    if yaml_like:
        comment = value.find(" #", 0, end)
        return 0, comment if comment != -1 else end
    space = next((i for i in range(end) if value[i] in " \t"), end)
    return 0, space


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _redact_block(lines: list[str], start: int, indent: int, counts: Counter[str]) -> int:
    """Replace the block scalar that follows line `start`; return the index after it."""
    end = start + 1
    content: list[int] = []
    while end < len(lines):
        line = lines[end]
        if line.strip() and _indent_of(line) <= indent:
            break
        if line.strip():
            content.append(end)
        end += 1
    value = "\n".join(lines[i].strip() for i in content)
    if not content or innocent_value(value):
        return end
    for line_value in (lines[i].strip() for i in content):
        learn(line_value, "secret_value")
    counts["secret_value"] += 1
    first = True
    for index in content:
        pad = lines[index][:_indent_of(lines[index])]
        lines[index] = pad + (mark("secret_value") if first else "")
        first = False
    return end


def _secret_sections(text: str) -> list[tuple[int, int]]:
    """Line spans of `data:`/`stringData:` blocks in a Kubernetes Secret document."""
    if _KIND_SECRET_RE.search(text) is None:
        return []
    lines = text.split("\n")
    spans: list[tuple[int, int]] = []
    for index, line in enumerate(lines):
        found = _DATA_RE.match(line)
        if found is None:
            continue
        indent = len(found.group("indent"))
        end = index + 1
        while end < len(lines) and (not lines[end].strip() or _indent_of(lines[end]) > indent):
            end += 1
        spans.append((index + 1, end))
    return spans


def redact_lines(text: str, lower: str, counts: Counter[str]) -> str:
    """Key/value lines whose key and value say secret; block scalars; Kubernetes Secrets."""
    starts: set[int] = set()
    row, last = 0, 0
    for candidate in _CANDIDATE_RE.finditer(lower):
        if _KEY_NEEDLE_RE.search(candidate.group("key")) is None:
            continue
        row += lower.count("\n", last, candidate.start())
        last = candidate.start()
        starts.add(row)
    sections = _secret_sections(text) if "kind:" in lower and "secret" in lower else []
    if not starts and not sections:
        return text
    lines = text.split("\n")
    in_secret = {i for a, b in sections for i in range(a, b)}
    changed = False
    total = len(lines)
    todo = sorted(starts | in_secret)
    for index in todo:
        if index >= total:
            continue
        line = lines[index]
        if "[REDACTED:" in line and index not in in_secret:
            continue  # its value was found by a pattern already
        found = _LINE_RE.match(line)
        if found is None:
            continue
        key, value = found.group("key"), found.group("value")
        indent = len(found.group("indent"))
        yaml_like = found.group("sep") == ":"
        forced = index in in_secret
        if yaml_like and _BLOCK_RE.match(value.strip() or "x"):
            if forced or name_class(key) in ("strong", "weak"):
                before = counts["secret_value"]
                _redact_block_if_secret(lines, index, indent, key, counts, forced)
                changed = changed or counts["secret_value"] != before
            continue
        if not value.strip() and yaml_like and index + 1 < total:
            nxt = lines[index + 1]
            if (nxt.strip() and _indent_of(nxt) > indent and _LINE_RE.match(nxt) is None
                    and not nxt.lstrip().startswith(("-", "#"))):
                if forced or is_secret(key, nxt.strip()):
                    learn(nxt.strip(), "secret_value")
                    counts["secret_value"] += 1
                    lines[index + 1] = nxt[:_indent_of(nxt)] + mark("secret_value")
                    changed = True
            continue
        a, b = _plain_value(value, yaml_like)
        scalar = value[a:b]
        if not scalar or "[REDACTED:" in scalar:
            continue
        if (forced and not innocent_value(scalar)) or is_secret(key, scalar):
            learn(scalar, "secret_value")
            counts["secret_value"] += 1
            head = line[:found.start("value")]
            lines[index] = head + value[:a] + mark("secret_value") + value[b:]
            changed = True
    return "\n".join(lines) if changed else text


def _redact_block_if_secret(lines: list[str], index: int, indent: int, key: str,
                            counts: Counter[str], forced: bool) -> None:
    end = index + 1
    body: list[str] = []
    while end < len(lines) and (not lines[end].strip() or _indent_of(lines[end]) > indent):
        body.append(lines[end].strip())
        end += 1
    value = "\n".join(b for b in body if b)
    if value and (forced or is_secret(key, value) or (
            name_class(key) == "weak" and "\n" in value and not innocent_value(value))):
        _redact_block(lines, index, indent, counts)


# ---- XML ------------------------------------------------------------------------------

_TAG_RE: Final = re.compile(r"<(/?)([A-Za-z_][A-Za-z0-9_.:\-]{0,80})([^<>]{0,2048}?)(/?)>")
_ATTR_NAME_RE: Final = re.compile(
    r"""(?:^|\s)(?:key|name|Name|Key)\s*=\s*["']([^"'<>]{1,200})["']""")
_GENERIC_TAGS: Final = frozenset({"value", "string", "data", "text", "content", "item", "val",
                                  "plaintext", "entry", "setting", "property", "add", "param",
                                  "parameter", "element", "field", "secret"})


def redact_xml(text: str, counts: Counter[str]) -> str:
    """Element text judged by its element (or its named/generic parent), across lines."""
    stack: list[tuple[str, str | None]] = []
    out: list[str] = []
    pos = 0
    for match in _TAG_RE.finditer(text):
        between = text[pos:match.start()]
        if between.strip() and stack and "[REDACTED:" not in between:
            between = _judge_xml_text(between, stack, counts)
        out.append(between)
        out.append(match.group(0))
        pos = match.end()
        closing, tag, attrs, selfclosing = match.groups()
        if closing:
            while stack and stack[-1][0] != tag:
                stack.pop()
            if stack:
                stack.pop()
        elif not selfclosing and not tag.startswith(("?", "!")):
            named = _ATTR_NAME_RE.search(attrs)
            stack.append((tag, named.group(1) if named else None))
            if len(stack) > 256:
                stack.pop(0)
    out.append(text[pos:])
    return "".join(out)


def _judge_xml_text(between: str, stack: list[tuple[str, str | None]],
                    counts: Counter[str]) -> str:
    value = between.strip()
    tag, named = stack[-1]
    names = [named] if named else []
    names.append(tag)
    if tag.lower().rsplit(":", 1)[-1] in _GENERIC_TAGS and len(stack) >= 2:
        parent_tag, parent_named = stack[-2]
        names += [n for n in (parent_named, parent_tag) if n]
    for name in names:
        if name_class(name) == "pointer":
            return between
        if is_secret(name, value):
            learn(value, "secret_value")
            counts["secret_value"] += 1
            start = between.find(value)
            return between[:start] + mark("secret_value") + between[start + len(value):]
    return between


# ---- URL queries and header arguments -----------------------------------------------------

_QUERY_RE: Final = re.compile(
    r"(?:(?<=[?&;])|(?<=%26)|(?<=%3[Ff])|(?<=\\u0026))(?P<n>[A-Za-z][A-Za-z0-9_.\-]{0,63})"
    r"(?:=|%3[Dd])(?P<s>[^&#\s\"'<>\\]{1,8192})")
_HEADER_ARG_RE: Final = re.compile(
    r"(?:-H|--header)[ \t=]{0,3}(?P<q>[\"']?)(?P<n>[A-Za-z0-9][A-Za-z0-9\-_]{1,60})[ \t]*:"
    r"[ \t]*(?P<s>[^\"'\r\n]{1,4096})")


def redact_query_and_headers(text: str, lower: str, counts: Counter[str]) -> str:
    """`?X-Amz-Signature=...`, `&SAMLResponse=...`, `-H 'X-JFrog-Art-Api: ...'`."""
    def query(match: re.Match[str]) -> str:
        name, value = match.group("n"), match.group("s")
        plain = unquote(value) if "%" in value else value
        if "[REDACTED:" in value or not is_secret(name, plain):
            return match.group(0)
        learn(value, "url_secret")
        if plain != value:
            learn(plain, "url_secret")
        counts["url_secret"] += 1
        return match.group(0)[: match.start("s") - match.start()] + mark("url_secret")

    def header(match: re.Match[str]) -> str:
        name, value = match.group("n"), match.group("s").strip()
        if "[REDACTED:" in value or not is_secret(name, value):
            return match.group(0)
        learn(value, "credential_header")
        counts["credential_header"] += 1
        start = match.start("s") - match.start()
        return match.group(0)[:start] + mark("credential_header")

    if "=" in text and ("?" in text or "&" in text or "%3" in text or "\\u0026" in text):
        text = _QUERY_RE.sub(query, text)
    if "-h" in lower or "--header" in lower:
        text = _HEADER_ARG_RE.sub(header, text)
    return text
