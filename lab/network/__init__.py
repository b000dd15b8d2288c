"""The network model: what Azure would answer for a scenario's estate (NSGs, routes, DNS, paths)."""

from lab.network.estate import Estate
from lab.network.results import (
    Connection,
    Delivery,
    DnsAnswer,
    EffectiveNsg,
    EffectiveNsgRule,
    EffectiveRoute,
    FlowVerdict,
    NextHop,
    NotModelled,
)

__all__ = [
    "Connection",
    "Delivery",
    "DnsAnswer",
    "EffectiveNsg",
    "EffectiveNsgRule",
    "EffectiveRoute",
    "Estate",
    "FlowVerdict",
    "NextHop",
    "NotModelled",
]
