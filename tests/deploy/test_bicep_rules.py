"""The Bicep templates use only values known at the start of a deployment where Bicep needs
them (names, scopes, conditions, loop sources, variable loop bodies), checked on checkov's own
parser (``bicep_rules.py``). The first template broke three of these rules and still passed
checkov; its copy in ``bicep/`` keeps the check honest. The final word stays with the compiler:
`az deployment sub what-if` (docs/deploy.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.bicep_rules import START_KNOWN_PROPERTIES, check

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted((ROOT / "deploy" / "azure").rglob("*.bicep"))


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_every_template_uses_only_start_values_where_bicep_needs_them(template: Path) -> None:
    assert [str(v) for v in check(template)] == []


def test_the_template_before_issue_27_fails_with_the_compilers_three_errors() -> None:
    found = {(v.rule, v.where, v.reference.split(" ")[0])
             for v in check(Path(__file__).parent / "bicep" / "ghost-before-issue-27.bicep")}
    assert found == {
        ("BCP120", "the name of resource postgresEntraAdmin", "identity.properties.principalId"),
        ("BCP182", "the for-body of variable appSecrets", "vault.properties.vaultUri"),
        ("BCP178", "the for-expression of variable plainEnv", "identity.properties.clientId"),
    }


def _violations(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "t.bicep"
    path.write_text(text)
    return [f"{v.rule} {v.where}: {v.reference}" for v in check(path)]


RESOURCES = """
param p string
param names array
resource kv 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: 'kv-${p}'
  location: 'westeurope'
  properties: {}
}
resource ws 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = {
  name: p
}
module m 'x.bicep' = {
  name: 'm'
}
"""


@pytest.mark.parametrize(("snippet", "expected"), [
    # a name from a module output, in an interpolation
    ("resource a 'A/b@2020-01-01' = {\n  name: 'a-${m.outputs.id}'\n}",
     "BCP120 the name of resource a: m.outputs.id"),
    # listKeys() on an existing resource, through a variable, in a module's scope
    ("var key = ws.listKeys().primarySharedKey\n"
     "module b 'x.bicep' = {\n  name: 'b'\n  scope: resourceGroup(key)\n}",
     "BCP120 the scope of module b: key (variable key holds ws.listKeys().primarySharedKey)"),
    # a loop over a runtime array, two variables deep
    ("var one = [kv.properties.vaultUri]\nvar two = concat(one, names)\n"
     "resource c 'A/b@2020-01-01' = [for n in two: {\n  name: n\n}]",
     "BCP178 the for-expression of resource c: two (variable two holds one (variable one "
     "holds kv.properties.vaultUri))"),
    # an if-condition on reference()
    ("resource d 'A/b@2020-01-01' = if (reference(kv.id, '2023-07-01').enabled) {\n"
     "  name: 'd'\n}", "BCP177 the if-condition of resource d: reference()"),
    # a variable loop whose body reads a runtime property
    ("var e = [for n in names: {\n  uri: kv.properties.vaultUri\n}]",
     "BCP182 the for-body of variable e: kv.properties.vaultUri"),
])
def test_each_rule_catches_a_runtime_value(tmp_path: Path, snippet: str, expected: str) -> None:
    assert _violations(tmp_path, RESOURCES + snippet) == [expected]


def test_start_values_pass(tmp_path: Path) -> None:
    """ids, names, parameters, resourceId(), environment() and a resource loop body's
    properties (ARM evaluates those during the deployment, which Bicep allows)."""
    ok = RESOURCES + """
var ids = [for n in names: '${kv.id}/${n}${environment().suffixes.keyvaultDns}']
resource f 'A/b@2020-01-01' = [for (n, i) in names: {
  name: guid(kv.id, ws.name, n, p)
  properties: {
    uri: kv.properties.vaultUri
    key: ws.listKeys().primarySharedKey
  }
}]
module g 'x.bicep' = [for i in range(0, length(names)): {
  name: 'g-${i}-${kv.name}'
  scope: resourceGroup(p)
  params: {
    out: m.outputs.id
  }
}]
"""
    assert _violations(tmp_path, ok) == []
    assert {"id", "name"} <= START_KNOWN_PROPERTIES
