"""Loading lab scenarios (specs/lab-scenario-format.md, formats 1 and 2): files, shipped names.

Loading validates everything (lab/validate.py) and raises one ScenarioError holding every
problem as a line ``FILE: field.path: problem``, so a scenario author fixes a file in one pass.
The dataclasses live in lab/model.py (and lab/model_v2.py for what format 2 adds); they are
re-exported here, the module callers have always imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.model import (
    SHIPPED_DIR,
    ActivityEvent,
    Fault,
    Nsg,
    NsgRule,
    Peering,
    PrivateDnsZone,
    Route,
    RouteTable,
    Scenario,
    ScenarioError,
    Subnet,
    Traffic,
    Truth,
    Vm,
    VNet,
)
from lab.validate import build_scenario, read_yaml

__all__ = [
    "ActivityEvent", "Fault", "Nsg", "NsgRule", "Peering", "PrivateDnsZone", "Route",
    "RouteTable", "Scenario", "ScenarioError", "Subnet", "Traffic", "Truth", "VNet", "Vm",
    "find_scenario", "load_scenario", "parse_scenario", "shipped_dir", "shipped_scenarios",
]


def parse_scenario(data: Any, source: str) -> Scenario:
    """Validate a decoded YAML document; ``source`` names it in error lines."""
    return build_scenario(data, source, None)


def load_scenario(path: str | Path) -> Scenario:
    """Read, validate and build a scenario file; ScenarioError lists every problem."""
    p = Path(path)
    data = read_yaml(p)
    return build_scenario(data, p.name, p)


def shipped_dir() -> Path:
    return SHIPPED_DIR


def shipped_scenarios() -> list[Path]:
    return sorted(SHIPPED_DIR.glob("*.yaml")) if SHIPPED_DIR.is_dir() else []


def find_scenario(name_or_path: str) -> Path:
    """A shipped scenario's name ("nsg-deny-redis") or a scenario file's path."""
    candidate = Path(name_or_path)
    if candidate.is_file():
        return candidate
    shipped = SHIPPED_DIR / f"{name_or_path}.yaml"
    if "/" not in name_or_path and shipped.is_file():
        return shipped
    names = ", ".join(p.stem for p in shipped_scenarios()) or "none"
    raise ScenarioError(
        [f"{name_or_path}: no such scenario file or shipped scenario (shipped: {names})"]
    )
