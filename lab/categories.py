"""Scenario categories (``truth.category``): the closed lists of formats 1 and 2, custom ``x-``.

One place for every category rule, so validation, ``ghost lab list`` and the eval agree: what a
format accepts, and the words that name a category in a conclusion.
"""

from __future__ import annotations

import re

CATEGORIES_V1: tuple[str, ...] = (
    "nsg_deny", "nic_nsg_deny", "udr_blackhole", "udr_wrong_next_hop", "nva_down", "nva_loss",
    "nva_reset", "peering_disconnected", "peering_forwarding_blocked", "private_dns_link_missing",
    "custom_dns_broken", "vm_stopped", "service_down", "mtu_blackhole", "asymmetric_routing",
    "extension_missing", "healthy",
)
CATEGORIES_V2: tuple[str, ...] = (
    "lb_probe_blocked", "lb_probe_port_down", "lb_inbound_blocked", "private_endpoint_dns",
    "private_endpoint_not_approved", "firewall_rule_deny", "snat_exhaustion", "latency",
)
#: what starts a custom category's name (not part of the words that name it)
CUSTOM_PREFIX = "x-"
#: ``x-`` then [a-z0-9]+ words joined by ``-`` or ``_`` (e.g. ``x-dns-ttl-stale``)
CUSTOM_RE = re.compile(r"^" + re.escape(CUSTOM_PREFIX) + r"[a-z0-9]+(?:[-_][a-z0-9]+)*$")


def is_custom(category: str) -> bool:
    return CUSTOM_RE.match(category) is not None


def categories(fmt: int) -> tuple[str, ...]:
    """The built-in categories a format accepts (format 2 also takes custom ``x-`` ones)."""
    return CATEGORIES_V1 if fmt < 2 else CATEGORIES_V1 + CATEGORIES_V2


def category_problem(category: object, fmt: int) -> str | None:
    """Why ``category`` is not acceptable in format ``fmt``, or None."""
    if isinstance(category, str) and category in categories(fmt):
        return None
    if fmt >= 2 and isinstance(category, str) and is_custom(category):
        return None
    if fmt < 2 and isinstance(category, str) and (category in CATEGORIES_V2
                                                  or is_custom(category)):
        return f"{category!r} needs `format: 2`"
    listed = ", ".join(categories(fmt))
    custom = " or a custom one: x- then [a-z0-9] words joined by - or _" if fmt >= 2 else ""
    return f"{category!r} is not one of: {listed}{custom}"


def category_words(category: str) -> list[str]:
    """The words that name ``category`` in prose: ``nsg_deny`` -> [nsg, deny]; a custom
    ``x-dns-ttl-stale`` -> [dns, ttl, stale] (the ``x-`` is not part of its name)."""
    text = category[len(CUSTOM_PREFIX):] if category.startswith(CUSTOM_PREFIX) else category
    return [w for w in re.split(r"[\s_-]+", text) if w]
