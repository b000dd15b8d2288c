"""The validation context: collects error lines for one scenario file, and reads typed values.

Every problem becomes one line ``FILE: field.path: problem``; readers return None for what is
broken, so parsing goes on and an author fixes a file in one pass. Shared by lab/validate*.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from ipaddress import IPv4Address, IPv4Network, ip_address
from typing import Any

from lab.model_v2 import Active
from lab.network.tags import parse_prefix, prefix_problem

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
DOMAIN_RE = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*"
                       r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
MISSING = object()


class Ctx:
    """Collects error lines for one source."""

    def __init__(self, source: str, fmt: int = 1) -> None:
        self.source = source
        self.fmt = fmt
        self.now: datetime | None = None
        self.errors: list[str] = []
        # names written in the file, even for entries dropped as broken: a reference to them
        # is not reported again as dangling (one mistake, one line)
        self.declared: dict[str, set[str]] = {
            k: set() for k in ("vnet", "subnet", "nsg", "route_table", "zone", "vm", "lb", "pe",
                               "firewall", "nat_gateway", "storage_account", "flow_log")
        }

    def declare(self, kind: str, name: str | None) -> None:
        if name:
            self.declared[kind].add(name)

    def err(self, path: str, problem: str) -> None:
        self.errors.append(f"{self.source}: {path}: {problem}")

    def mapping(self, value: Any, path: str, required: tuple[str, ...],
                optional: tuple[str, ...] = (), v2: tuple[str, ...] = ()) -> dict[str, Any] | None:
        """``value`` as a mapping with these keys; ``v2`` keys are optional in format 2 and
        "needs `format: 2`" in format 1."""
        if not isinstance(value, dict):
            self.err(path or "(top level)", f"expected a mapping, got {kind_of(value)}")
            return None
        allowed = required + optional + (v2 if self.fmt >= 2 else ())
        for key in value:
            if key in v2 and self.fmt < 2:
                self.err(join_path(path, str(key)), f"`{key}` needs `format: 2`")
            elif key not in allowed:
                self.err(join_path(path, str(key)),
                         f"unknown key (expected one of: {', '.join(allowed)})")
        for key in required:
            if key not in value:
                self.err(join_path(path, key), "required key is missing")
        return value

    def resources(self, top: dict[str, Any], key: str, kind: str, required: tuple[str, ...],
                  optional: tuple[str, ...] = (), *, name_re: re.Pattern[str] = NAME_RE,
                  name_what: str = "a valid resource name", v2: tuple[str, ...] = (),
                  ) -> Iterator[tuple[str, dict[str, Any], str | None, str | None]]:
        """(path, fields, name, resource group) of each mapping in a top-level resource list;
        the name is declared even when the entry is broken, so references to it stay quiet."""
        for path, raw in self.items(top, key, ""):
            d = self.mapping(raw, path, ("name", "resource_group", *required), optional, v2)
            if d is None:
                continue
            name = self.string(d, "name", path, name_re, name_what)
            self.declare(kind, name)
            rg = self.string(d, "resource_group", path, NAME_RE, "a valid resource group name")
            yield path, d, name, rg

    def items(self, data: dict[str, Any], key: str, path: str) -> list[tuple[str, Any]]:
        """(path, item) for each entry of a list field; [] when absent or not a list."""
        value = data.get(key, [])
        p = join_path(path, key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.err(p, f"expected a list, got {kind_of(value)}")
            return []
        return [(f"{p}[{i}]", item) for i, item in enumerate(value)]

    def string(self, data: dict[str, Any], key: str, path: str, pattern: re.Pattern[str] | None
               = None, what: str = "", default: Any = MISSING) -> str | None:
        value = data.get(key, default)
        if value is MISSING or (value is None and default is None):
            return None
        p = join_path(path, key)
        if not isinstance(value, str) or not value.strip():
            self.err(p, f"expected a non-empty string, got {kind_of(value)}")
            return None
        if pattern is not None and not pattern.match(value):
            self.err(p, f"{value!r} is not {what}")
            return None
        return value

    def number(self, data: dict[str, Any], key: str, path: str, lo: float, hi: float,
               integer: bool = True) -> Any:
        value = data.get(key, MISSING)
        if value is MISSING:
            return None
        p = join_path(path, key)
        ok_types = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, ok_types):
            self.err(p, f"expected {'an integer' if integer else 'a number'}, got {kind_of(value)}")
            return None
        if not lo <= value <= hi:
            self.err(p, f"{value} is out of range ({lo:g}-{hi:g})")
            return None
        return value

    def boolean(self, data: dict[str, Any], key: str, path: str, default: bool | None) -> Any:
        value = data.get(key, default)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.err(join_path(path, key), f"expected true or false, got {kind_of(value)}")
            return default
        return value

    def choice(self, data: dict[str, Any], key: str, path: str, choices: tuple[str, ...],
               default: Any = MISSING) -> str | None:
        value = data.get(key, default)
        if value is MISSING:
            return None
        if value not in choices:
            self.err(join_path(path, key),
                     f"{value!r} is not one of: {', '.join(choices)}")
            return None
        return str(value)

    def network(self, value: Any, path: str) -> IPv4Network | None:
        text = str(value) if isinstance(value, str) else None
        net = parse_prefix(text) if text and "/" in text else None
        if net is None:
            problem = prefix_problem(text) if text and "/" in text else None
            self.err(path, problem if problem and "host bits" in problem
                     else f"not an IPv4 CIDR: {value}")
        return net

    def address(self, value: Any, path: str) -> IPv4Address | None:
        try:
            addr = ip_address(value) if isinstance(value, str) else None
        except ValueError:
            addr = None
        if not isinstance(addr, IPv4Address):
            self.err(path, f"not an IPv4 address: {value}")
            return None
        return addr

    def names_unique(self, items: list[tuple[str, Any]], kind: str) -> None:
        seen: dict[str, str] = {}
        for path, obj in items:
            name = getattr(obj, "name", None)
            if name is None:
                continue
            key = name.lower() if kind == "private DNS zone" else name
            if key in seen:
                self.err(f"{path}.name", f"duplicate {kind} name {name!r} (also {seen[key]})")
            else:
                seen[key] = path


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


AGO_RE = re.compile(r"^(\d+)([smhd])$")
AGO_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: how far back format 2's time windows (``active``) and flow logs (``since``) may reach
MAX_WINDOW_S = 7 * 86400


def ago_seconds(ctx: Ctx, value: Any, path: str) -> int | None:
    """An ``ago`` value (an integer and s, m, h or d) in seconds, or None (error recorded)."""
    m = AGO_RE.match(value) if isinstance(value, str) else None
    if m is None:
        ctx.err(path, f"{value!r} is not an integer followed by s, m, h or d (e.g. 15m)")
        return None
    return int(m.group(1)) * AGO_UNITS[m.group(2)]


def recent_ago(ctx: Ctx, value: Any, path: str) -> int | None:
    """An ``ago`` within the 7 days format 2's windows may reach."""
    secs = ago_seconds(ctx, value, path)
    if secs is not None and secs > MAX_WINDOW_S:
        ctx.err(path, f"{value} is more than 7 days ago (format 2 windows reach back 7 days)")
        return None
    return secs


def parse_active(ctx: Ctx, d: dict[str, Any], path: str) -> tuple[bool, Active | None]:
    """Format 2's ``active: {from: AGO, until: AGO}``: (ok, window); ok is False when broken."""
    if "active" not in d:
        return True, None
    p = f"{path}.active"
    a = ctx.mapping(d["active"], p, (), ("from", "until"))
    if a is None:
        return False, None
    if not a:
        ctx.err(p, "give from, until or both (leave `active` out for always)")
        return False, None
    start = recent_ago(ctx, a["from"], f"{p}.from") if "from" in a else None
    end = recent_ago(ctx, a["until"], f"{p}.until") if "until" in a else None
    if ("from" in a and start is None) or ("until" in a and end is None) or ctx.now is None:
        return False, None
    if start is not None and end is not None and start <= end:
        ctx.err(p, f"from ({a['from']} ago) must be before until ({a['until']} ago)")
        return False, None
    now = ctx.now
    return True, Active(None if start is None else now - timedelta(seconds=start),
                        None if end is None else now - timedelta(seconds=end))
