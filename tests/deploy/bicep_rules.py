"""Bicep's "known at the start of the deployment" rules, checked on checkov's own Bicep parser.

No Bicep compiler can be installed where the tests run (it is a binary download), so this reads
the templates with ``pycep`` (the parser checkov 3.3 uses, pinned in pyproject.toml) and applies
the rules that broke the first template (docs/deploy.md, "What the tests check"):

- BCP120: a resource's or module's ``name`` and ``scope`` must be calculable at the start;
- BCP177: so must a resource's or module's ``if`` condition;
- BCP178: so must the source of every ``for`` (resources, modules, variables);
- BCP182: so must the whole body of a variable's ``for``.

"Runtime" is what ARM only knows once a resource exists: ``<resource>.properties…``,
``<resource>.listKeys()`` and other functions on a resource, ``reference()`` / ``list*()``,
``<module>.outputs…``, and any variable built from one of these. A resource's ``id``, ``name``,
``type`` and ``apiVersion`` are known at the start, and so are parameters (inside a module, a
parameter is known even when the caller passes a runtime value: that is the way around BCP120).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pycep import BicepParser

START_KNOWN_PROPERTIES = frozenset({"id", "name", "type", "apiVersion"})
_INTERPOLATION = re.compile(r"\$\{(.*?)\}")
_CHAIN = re.compile(r"([A-Za-z_]\w*)((?:\s*(?:\.\s*[A-Za-z_]\w*|\(\s*\)|\[[^\]]*\]))*)")
_LINK = re.compile(r"\.\s*([A-Za-z_]\w*)|(\(\s*\))|(\[[^\]]*\])")


@dataclass(frozen=True)
class Violation:
    file: str
    rule: str
    where: str
    reference: str

    def __str__(self) -> str:
        return (f"{self.file}: {self.rule} {self.where} uses {self.reference}, which ARM knows "
                "only during the deployment")


def parse(path: Path) -> dict[str, Any]:
    return dict(BicepParser().parse(text=path.read_text()))


class _Template:
    def __init__(self, tree: dict[str, Any]) -> None:
        self.resources: dict[str, Any] = tree.get("resources") or {}
        self.modules: dict[str, Any] = tree.get("modules") or {}
        self.variables: dict[str, Any] = tree.get("variables") or {}
        self.tainted: dict[str, str] = {}  # variable -> the runtime reference it holds
        changed = True
        while changed:  # variables built from variables: to a fixed point
            changed = False
            for name, var in self.variables.items():
                if name in self.tainted:
                    continue
                found = next(self.runtime_refs(var.get("value")), None)
                if found is not None:
                    self.tainted[name] = found
                    changed = True

    # ---------------------------------------------------------------- references
    def runtime_refs(self, node: Any) -> Iterator[str]:
        """Each runtime reference inside ``node`` (a pycep JSON subtree), described."""
        if isinstance(node, str):
            yield from self._string_refs(node)
        elif isinstance(node, list):
            for item in node:
                yield from self.runtime_refs(item)
        elif isinstance(node, dict):
            operator = node.get("operator")
            function = node.get("function")
            if isinstance(operator, dict) and operator.get("type") in (
                    "property_accessor", "index_accessor", "function_accessor"):
                judged = self._judge(self._chain(node))
                if judged is not None:
                    yield judged
                yield from self.runtime_refs(operator.get("operands"))
            elif isinstance(function, dict):
                kind = str(function.get("type") or "")
                if kind == "reference" or kind.startswith("list"):
                    yield f"{kind}()"
                yield from self.runtime_refs(function.get("parameters"))
            else:
                for value in node.values():
                    yield from self.runtime_refs(value)

    def _chain(self, node: Any) -> list[str]:
        if isinstance(node, str):
            return [node]
        if not isinstance(node, dict):
            return ["?"]
        operator = node.get("operator")
        if isinstance(operator, dict):
            operands = operator.get("operands") or {}
            kind = operator.get("type")
            if kind == "property_accessor":
                return self._chain(operands.get("operand_1")) + \
                    self._chain(operands.get("operand_2"))
            if kind == "index_accessor":
                return [*self._chain(operands.get("operand_1")), "[]"]
            if kind == "function_accessor":
                return [*self._chain(operands.get("operand_1")),
                        f"{operands.get('func_name')}()"]
        if isinstance(node.get("function"), dict):
            return [f"fn:{node['function'].get('type')}"]
        return ["?"]

    def _judge(self, chain: list[str]) -> str | None:
        """The runtime reference a chain like ``vault.properties.vaultUri`` makes, or None."""
        if not chain:
            return None
        head, rest = chain[0], [c for c in chain[1:] if c != "[]"]
        text = ".".join([head, *rest])
        if head in self.variables:
            return f"{text} (variable {head} holds {self.tainted[head]})" \
                if head in self.tainted else None
        if head in self.modules:
            return text if rest and rest[0] == "outputs" else None
        if head in self.resources:
            return text if rest and rest[0] not in START_KNOWN_PROPERTIES else None
        return None

    def _string_refs(self, text: str) -> Iterator[str]:
        if text.startswith(("{'", "[{", "['")):  # pycep hands some loop sources over as repr
            try:
                yield from self.runtime_refs(ast.literal_eval(text))
                return
            except (ValueError, SyntaxError):
                pass
        if text in self.tainted:  # a bare identifier: pycep writes references as strings
            yield f"{text} (variable {text} holds {self.tainted[text]})"
            return
        for expression in _INTERPOLATION.findall(text):
            for match in _CHAIN.finditer(expression):
                links = [m.group(1) or ("()" if m.group(2) else "[]")
                         for m in _LINK.finditer(match.group(2))]
                if links and links[-1] == "()" and len(links) >= 2:  # x.listKeys() → one link
                    links = [*links[:-2], f"{links[-2]}()"]
                judged = self._judge([match.group(1), *links])
                if judged is not None:
                    yield judged

    # ---------------------------------------------------------------- rules
    def violations(self, file: str) -> Iterator[Violation]:
        for kind, table in (("resource", self.resources), ("module", self.modules)):
            for symbol, declaration in table.items():
                config = declaration.get("config") or {}
                body = config
                if "loop_type" in config or "condition" in config:
                    yield from self._loop_source(file, f"{kind} {symbol}", config)
                    for ref in self.runtime_refs(config.get("condition")):
                        yield Violation(file, "BCP177", f"the if-condition of {kind} {symbol}",
                                        ref)
                    body = config.get("config") or {}
                for field in ("name", "scope"):
                    for ref in self.runtime_refs(body.get(field)):
                        yield Violation(file, "BCP120", f"the {field} of {kind} {symbol}", ref)
        for symbol, var in self.variables.items():
            value = var.get("value")
            if isinstance(value, dict) and "loop_type" in value:
                yield from self._loop_source(file, f"variable {symbol}", value)
                for ref in self.runtime_refs(value.get("config")):
                    yield Violation(file, "BCP182", f"the for-body of variable {symbol}", ref)

    def _loop_source(self, file: str, where: str, config: dict[str, Any]) -> Iterator[Violation]:
        loop = config.get("loop_type")
        if not isinstance(loop, dict):
            return
        detail = loop.get("detail") or {}
        for key in ("array_name", "object_name", "start_index", "count"):
            for ref in self.runtime_refs(detail.get(key)):
                yield Violation(file, "BCP178", f"the for-expression of {where}", ref)


def check(path: Path) -> list[Violation]:
    """Every start-of-deployment rule ``path`` breaks."""
    return list(_Template(parse(path)).violations(path.name))
