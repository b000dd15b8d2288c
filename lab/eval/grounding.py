"""Is the conclusion grounded? Every figure and every resource name it states must appear in
the output of a record the investigation cited (or in the symptom the engineer gave).

A **figure** is a number as the summary writes it: an address or prefix (``10.1.2.4``,
``10.3.2.0/24``), a time (``07:00``), a date, a count, a size or a percentage (``1400``,
``1460-byte``, ``8 %``, ``30s``). A **resource name** is a name of the scenario (a VM, NSG, rule,
route, route table, VNet, subnet, peering, zone, DNS name) or a word shaped like one: joined by
``-``, ``_`` or ``.`` and carrying a digit (``nva-fw-02``), a resource prefix or suffix
(``nsg-…``, ``rt-…``, ``…-vm``), a domain or an address (``alice@contoso.com``). Audit and
hypothesis ids are neither. A figure is found in an output as the same number (``8`` in
``8%`` or ``8.0``), not inside a longer one (``10.1.2.4`` is not in ``10.1.2.40``); a name as a
whole word, case-insensitive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

AUDIT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*_\d{3,}\b")
_TOKEN = re.compile(r"[A-Za-z0-9@][A-Za-z0-9._:/@%'-]*")
_HYPOTHESIS = re.compile(r"^[Hh]\d{1,3}$")
_IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?"
_FIGURE = re.compile(
    rf"^(?:{_IPV4}|\d{{1,2}}:\d{{2}}(?::\d{{2}})?|\d{{4}}-\d{{2}}-\d{{2}}|"
    r"\d+(?:\.\d+)?%?)$")
#: a number with a unit glued to it: 1460-byte, 30s, 200ms, 5-minute, 2KB
_WITH_UNIT = re.compile(r"^(\d+(?:\.\d+)?)(?:-?[A-Za-z]{1,12})$")
#: protocol and version words are not resources (SHA-256, HTTP/1.1, IPv4, TLSv1.2, ICMPv6)
_PROTOCOL = re.compile(r"^[A-Z]{2,6}(?:v\d+(?:\.\d+)*)?(?:[-/]?\d+(?:\.\d+)*)?$")
#: lower case, as resource names are written (an "NIC-level" rule is not a resource)
_RESOURCE_AFFIX = re.compile(
    r"^(?:vnet|snet|subnet|nsg|rt|udr|nic|pip|lb|ilb|agw|appgw|afw|fw|nva|vm|pe|kv|st|sql|pg|"
    r"redis|law|ngw|rg|ipconfig|privatelink)[-_.]|[-_](?:vm|nic|nsg|rt|vnet|snet|fw|pip|lb|kv|"
    r"db|nva|subnet)(?:[-_]?\d+)?$")
_DOMAIN = re.compile(r"@|\.(?:com|net|org|io|local|internal|azure\.com|windows\.net)$",
                     re.IGNORECASE)


def _clean(token: str) -> str:
    return token.strip(".,:;'\"()[]").removesuffix("'s")


def _tokens(text: str) -> list[str]:
    """Words of the summary; ``redis-vm-01:6379``, ``10.1.2.4:6379`` and
    ``nsg-data/deny-web-to-redis`` are two words each (a time or a prefix stays whole)."""
    out: list[str] = []
    for raw in _TOKEN.findall(text):
        token = _clean(raw)
        if _FIGURE.match(token):
            out.append(token)
            continue
        if _PROTOCOL.match(token):
            continue  # HTTP/1.1, TLSv1.2, SHA-256: a protocol, not a figure or a resource
        for part in re.split(r"[:/]", token):
            if _clean(part):
                out.append(_clean(part))
    return out


def figures_and_names(summary: str, vocabulary: Iterable[str] = ()) -> tuple[list[str],
                                                                           list[str]]:
    """(figures, resource names) the summary states, each once, in order."""
    figures: list[str] = []
    names: list[str] = []
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", AUDIT_ID.sub(" ", summary))  # 4,000 is 4000
    for token in _tokens(text):
        if not token or _HYPOTHESIS.match(token):
            continue
        if _FIGURE.match(token):
            figures.append(token)
            continue
        unit = _WITH_UNIT.match(token)
        if unit:
            figures.append(unit.group(1))
            continue
        if not re.search(r"[A-Za-z]", token) or _PROTOCOL.match(token):
            continue
        if re.search(r"[-_.@]", token) and (re.search(r"\d", token)
                                            or _RESOURCE_AFFIX.search(token)
                                            or _DOMAIN.search(token)):
            names.append(token)
    lowered = text.lower()
    for alias in sorted(set(vocabulary), key=len, reverse=True):
        if len(alias) >= 4 and not re.fullmatch(r"[\d./]+", alias) and re.search(
                r"(?<![A-Za-z0-9.-])" + re.escape(alias.lower()) + r"(?![A-Za-z0-9-])",
                lowered) and not any(alias.lower() in n.lower() for n in names):
            names.append(alias)
    return list(dict.fromkeys(figures)), list(dict.fromkeys(names))


def has_figure(text: str, figure: str) -> bool:
    number = figure.rstrip("%")
    if re.fullmatch(r"\d+", number):  # 8 also as 8.0; 1400 not inside 14000 or 10.1.14.00
        pattern = r"(?<![\d.])" + number + r"(?:\.0+)?(?![\d]|\.\d)"
    else:
        pattern = r"(?<![\d.])" + re.escape(number) + r"(?![\d]|\.\d)"
    return re.search(pattern, text) is not None


def has_name(text: str, name: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])", text,
                     re.IGNORECASE) is not None


def ungrounded(summary: str, outputs: Sequence[str], subjects: Sequence[str] = (),
               vocabulary: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(figures, names) of the summary that no source shows: a figure must be in one of
    ``outputs``; a name in an output or in a ``subject`` (the command a cited record
    answered: the instance view of nva-fw-01 says "VM deallocated" without naming it)."""
    figures, names = figures_and_names(summary, vocabulary)
    return ([f for f in figures if not any(has_figure(s, f) for s in outputs)],
            [n for n in names if not any(has_name(s, n) for s in (*outputs, *subjects))])
