"""The estate minute by minute (format 2's "Time"): what flow logs and metrics are made of.

Flow logs and metrics are computed over their window from what was active in each minute (the
rules, routes, faults and zone links of ``Scenario.at``) and the traffic flowing then. Minutes
with the same active set share one Estate, so a three-hour window costs a handful of models.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lab.model import Scenario, Traffic
from lab.network import Estate

MINUTE = timedelta(minutes=1)


def floor_minute(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(second=0, microsecond=0)


class Timeline:
    """One scenario's estate at any minute of the past week."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._estates: dict[tuple[bool, ...], Estate] = {}

    @property
    def now(self) -> datetime:
        return self.scenario.now

    def estate_at(self, t: datetime) -> Estate:
        """The estate as it stood at ``t``, with every flow kept in order (check
        :meth:`flowing`)."""
        key = self.scenario.window_key(t)
        estate = self._estates.get(key)
        if estate is None:
            estate = Estate(self.scenario.at(t, keep_traffic=True))
            self._estates[key] = estate
        return estate

    def flowing(self, flow: Traffic, t: datetime) -> bool:
        return self.scenario.flowing(flow, t)

    def minutes(self, start: datetime, end: datetime) -> list[datetime]:
        """The minutes (their starts) from ``start`` until ``end``, at most up to ``now``."""
        out: list[datetime] = []
        t = floor_minute(start)
        stop = min(end, self.now)
        while t < stop:
            out.append(t)
            t += MINUTE
        return out
