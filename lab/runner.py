"""The lab runner: answers a diagnostic argv from the scenario, shaped like the real tool's output.

`az …` goes to the lab's Azure CLI (lab/az), the network probes (ping, dig, nslookup, curl, nc,
traceroute, mtr) run from the engineer's machine, outside every VNet (lab/probes). Everything
else — and anything the model cannot answer honestly — is "not modelled by the lab: …" on
stderr with exit 2. The runner never raises for bad input and never invents a success.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from lab.az.catalog import Catalog
from lab.az.dispatch import run_az
from lab.model import Scenario
from lab.network import Estate, NotModelled
from lab.probes import LOCAL, Vantage

NOT_MODELLED = "not modelled by the lab: "


@dataclass(frozen=True)
class LabAnswer:
    exit_code: int
    stdout: str
    stderr: str
    duration_s: float = 0.05


def _not_modelled(what: str) -> LabAnswer:
    return LabAnswer(2, "", NOT_MODELLED + what.rstrip() + "\n")


class LabRunner:
    """Answers commands from one scenario; the same command always gets the same answer."""

    def __init__(self, scenario: Scenario, estate: Estate | None = None) -> None:
        self.estate = estate if estate is not None else Estate(scenario)
        self.scenario = self.estate.scenario  # as it stands at ``now``
        self.catalog = Catalog(scenario, self.estate)

    def run(self, argv: Sequence[str]) -> LabAnswer:
        if not argv:
            return _not_modelled("an empty command")
        program = os.path.basename(argv[0]) if argv[0].startswith("/usr/") else argv[0]
        args = [program, *argv[1:]]
        try:
            if program == "az":
                code, out, err = run_az(self.catalog, args)
                return LabAnswer(code, out, err)
            probe = LOCAL.get(program)
            if probe is None:
                return _not_modelled(f"{program} (the lab answers az, "
                                     f"{', '.join(sorted(LOCAL))})")
            result = probe(Vantage(self.catalog, None), args)
            return LabAnswer(result.exit_code, result.stdout, result.stderr, result.seconds)
        except NotModelled as exc:
            return _not_modelled(str(exc))
        except NotImplementedError:
            return _not_modelled(f"{program}: the network model does not answer this yet")
        except Exception as exc:  # noqa: BLE001 - the runner must answer, never raise
            return _not_modelled(f"{program}: the lab failed to answer ({type(exc).__name__}: "
                                 f"{exc})")
