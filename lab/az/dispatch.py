"""From an `az` argv to az's answer: find the command, parse its options, run it, render it.

Unknown words get az's "'x' is misspelled or not recognized by the system." (exit 2, with its
"Did you mean" hint); real az commands the lab does not answer (writes, help text, other
services) get an honest "not modelled by the lab" (exit 2). Nothing here invents a success.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.az import firewall, metrics, monitor, network, network_v2, storage, vm, watcher
from lab.az.args import Command, Parsed, parse
from lab.az.catalog import Catalog, parse_id, same
from lab.az.errors import AzError
from lab.az.output import add_resource_groups, render
from lab.network import NotModelled

EXTENSION_REFERENCE = (
    "If the command is from an extension, please make sure the corresponding extension is "
    "installed. To learn more about extensions, please visit "
    "'https://docs.microsoft.com/cli/azure/azure-cli-extensions-overview'")

#: az command groups and verbs that exist but that the lab does not answer.
REAL_WORDS = frozenset("""
account acr ad advisor afd aks ams apim appconfig appservice aro backup batch bicep billing bot
cache capacity cdn cloud cognitiveservices config consumption container containerapp cosmosdb
deployment disk disk-access disk-encryption-set eventgrid eventhubs extension feature functionapp
group hdinsight identity image iot keyvault kusto lab lock logicapp login logout managedapp maps
mariadb ml monitor mysql netappfiles network policy postgres ppg private-link provider redis relay
resource role search security servicebus sf sig signalr snapshot sql sshkey staticwebapp storage
synapse tag upgrade version vm vmss webapp rest find interactive init next self-test feedback
create delete update set add remove wait start stop restart deallocate redeploy reapply resize
open-port capture generalize convert list-sizes list-skus list-usage list-vm-resize-options
boot-diagnostics nic user secret encryption auto-shutdown diagnostics host availability-set
application assess-patches install-patches run-command check-ip-address list-available-ips
list-endpoint-services ip-config public-ip lb application-gateway vnet-gateway local-gateway
vpn-connection express-route firewall nat private-endpoint private-link-service dns asg
ddos-protection bastion traffic-manager front-door profile service-endpoint list-usages
list-service-tags manager routeserver virtual-appliance vhub vwan route-filter custom-ip
cross-region-lb flow-log packet-capture connection-monitor troubleshooting configure
run-configuration-script show-security-group-view list-effective-nsg show-effective-route-table
private-dns link record-set zone aaaa cname mx ptr soa srv txt invoke export import tenant
subscription get-access-token activity-log log-analytics metrics alert diagnostic-settings
""".split())


@dataclass
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    command: Command | None = None


def _tree(commands: Sequence[Command]) -> _Node:
    root = _Node()
    for command in commands:
        node = root
        for word in command.words:
            node = node.children.setdefault(word, _Node())
        node.command = command
    return root


#: reads a format-1 scenario answered before format 2 existed (its lists stay ``[]``)
FORMAT1_READS = frozenset({("network", "lb", "list"), ("network", "public-ip", "list"),
                           ("network", "nat", "gateway", "list"), ("network", "nic", "list"),
                           ("network", "nic", "show")})


def _format2_only(command: Command) -> Command:
    """A format-2 read keeps format 1's old answer: not modelled (format-1 files answer
    exactly as they did)."""
    if command.words in FORMAT1_READS:
        return command
    handler = command.handler

    def guarded(cat: Catalog, parsed: Parsed) -> Any:
        if cat.scenario.format < 2:
            raise NotModelled(f"az {' '.join(command.words)} in a format-1 scenario (format 2 "
                              "models it; docs/lab.md)")
        return handler(cat, parsed)
    return Command(command.words, command.options, guarded, command.table, command.ids)


FORMAT2: list[Command] = [_format2_only(c) for c in (
    *network_v2.COMMANDS, *firewall.COMMANDS, *storage.COMMANDS, *metrics.COMMANDS)]
COMMANDS: list[Command] = [*network.COMMANDS, *FORMAT2, *watcher.COMMANDS, *vm.COMMANDS,
                           *monitor.COMMANDS]
_ROOT = _tree(COMMANDS)


def _looks_like_option(token: str) -> bool:
    return token.startswith("-")


def _leading_options(tokens: Sequence[str]) -> None:
    """az loads its command table from the first words: options before them break it."""
    if not tokens or not _looks_like_option(tokens[0]):
        return
    run: list[str] = []
    for token in tokens[1:]:
        if _looks_like_option(token):
            if run:
                break
            continue
        run.append(token)
    if run:
        raise AzError(f"'{run[-1]}' is misspelled or not recognized by the system.", 2)


def _find(tokens: Sequence[str]) -> tuple[Command, list[str]]:
    _leading_options(tokens)
    node: _Node = _ROOT
    words: list[str] = []
    i = 0
    for i, token in enumerate(tokens):  # noqa: B007 - i is used after the loop
        if _looks_like_option(token) or (node.command is not None and not node.children):
            break
        child = node.children.get(token.lower())
        if child is None:
            if node.command is not None:
                break
            _unknown_word(node, words, token)
        words.append(token.lower())
        node = child  # type: ignore[assignment]
    else:
        i = len(tokens)
    if node.command is None:
        shown = " ".join(["az", *words])
        raise NotModelled(f"{shown} is a command group; az would print its help text, which "
                          "the lab does not reproduce")
    return node.command, list(tokens[i:])


def _unknown_word(node: _Node, words: list[str], token: str) -> None:
    if token.lower() in REAL_WORDS:
        raise NotModelled(f"az {' '.join([*words, token])} (the lab answers the reads listed in "
                          "docs/lab.md, 'What the lab answers')")
    close = difflib.get_close_matches(token, list(node.children), n=1, cutoff=0.7)
    hints = [f"Did you mean '{close[0]}' ?"] if close else []
    if not words and not close:
        hints.append(EXTENSION_REFERENCE)
    raise AzError(f"'{token}' is misspelled or not recognized by the system.", 2, tuple(hints))


def _check_subscription(cat: Catalog, wanted: str | None) -> None:
    if wanted is None:
        return
    if same(wanted, cat.sub) or same(wanted, monitor.subscription_name(cat)):
        return
    raise AzError(f"Subscription '{wanted}' not found. Check the spelling and casing and try "
                  "again.")


def _run_ids(cat: Catalog, command: Command, parsed: Parsed, ids: list[str]) -> Any:
    results = []
    for rid in ids:
        parts = parse_id(rid)
        values = dict(parsed.values)
        for part, dest in command.ids:
            if part == "@id":
                values[dest] = rid
            elif part in parts:
                values[dest] = parts[part]
            else:
                raise AzError(f"invalid resource ID: {rid}", 2)
        results.append(command.handler(cat, Parsed(values)))
    return results[0] if len(results) == 1 else results


def run_az(cat: Catalog, argv: Sequence[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``az …``; raises NotModelled for what the lab can't say."""
    try:
        command, rest = _find(argv[1:])
        prog = " ".join(["az", *command.words])
        dests = [dest for _, dest in command.ids]
        parsed = parse(prog, rest, command.options, bool(command.ids), dests)
        if parsed.get("_help"):
            raise NotModelled(f"{prog} --help (az's help text is not reproduced)")
        _check_subscription(cat, parsed.text("_subscription"))
        ids = parsed.get("_ids")
        result = (_run_ids(cat, command, parsed, ids) if ids
                  else command.handler(cat, parsed))
        result = add_resource_groups(result)
        return 0, render(result, parsed.output, parsed.query, command.table), ""
    except AzError as err:
        return err.exit_code, "", err.stderr()
