"""Tokens and dollars: Gemini's ``usageMetadata`` summed over model calls, priced from a table.

The price table is ``GHOST_PRICES``: JSON ``{"MODEL": {"prompt": $, "output": $, "thinking": $}}``
in US dollars per million tokens (thinking defaults to the output price, as Gemini bills it).
A model the table does not list has no cost (shown as n/a), never a guessed one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.brain import Brain, ModelReply
from core.errors import GhostError

#: usageMetadata's counters (camelCase, as the REST API and the SDK's by_alias dump write them)
PROMPT, OUTPUT, THINKING = "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"


class PriceTableError(GhostError):
    """GHOST_PRICES is not a valid price table."""


@dataclass(frozen=True)
class Usage:
    """Tokens over one or more model calls."""

    calls: int = 0
    prompt: int = 0
    output: int = 0
    thinking: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.output + self.thinking

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls, self.prompt + other.prompt,
                     self.output + other.output, self.thinking + other.thinking)

    @classmethod
    def of(cls, metadata: Mapping[str, Any] | None) -> Usage:
        """One call's ``usageMetadata`` (missing counters are 0)."""
        meta = metadata or {}
        return cls(1, _count(meta.get(PROMPT)), _count(meta.get(OUTPUT)),
                   _count(meta.get(THINKING)))

    @classmethod
    def sum(cls, metadata: Sequence[Mapping[str, Any] | None]) -> Usage:
        total = cls()
        for meta in metadata:
            total = total + cls.of(meta)
        return total


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    prompt: float
    output: float
    thinking: float

    def cost(self, usage: Usage) -> float:
        return (usage.prompt * self.prompt + usage.output * self.output
                + usage.thinking * self.thinking) / 1_000_000


def parse_prices(text: str | None) -> dict[str, Price]:
    """The price table from its JSON text; one clear line when it is wrong."""
    if not text or not text.strip():
        return {}
    hint = ('GHOST_PRICES is JSON like {"gemini-3.8-flash": {"prompt": 0.5, "output": 3, '
            '"thinking": 3}} (US$ per million tokens).')
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PriceTableError(f"GHOST_PRICES is not valid JSON ({exc}).", hint) from exc
    if not isinstance(data, dict):
        raise PriceTableError("GHOST_PRICES must be a JSON object of models.", hint)
    table: dict[str, Price] = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or set(entry) - {"prompt", "output", "thinking"}:
            raise PriceTableError(f"GHOST_PRICES[{model!r}] must have prompt, output and "
                                  "(optionally) thinking prices only.", hint)
        try:
            prompt, output = float(entry["prompt"]), float(entry["output"])
            thinking = float(entry.get("thinking", output))
        except (KeyError, TypeError, ValueError) as exc:
            raise PriceTableError(f"GHOST_PRICES[{model!r}] needs numeric prompt and output "
                                  "prices.", hint) from exc
        if min(prompt, output, thinking) < 0:
            raise PriceTableError(f"GHOST_PRICES[{model!r}] has a negative price.", hint)
        table[str(model)] = Price(prompt, output, thinking)
    return table


def price_for(table: Mapping[str, Price], model: str) -> Price | None:
    """The model's price: its exact name, else the name without a ``models/`` prefix."""
    return table.get(model) or table.get(model.removeprefix("models/"))


def cost_of(table: Mapping[str, Price], model: str, usage: Usage) -> float | None:
    """Dollars, or None when the table has no price for the model (a replay costs 0)."""
    if model.startswith("replay:"):
        return 0.0
    price = price_for(table, model)
    return None if price is None else round(price.cost(usage), 6)


class MeteredBrain:
    """A brain that remembers the ``usage`` of every reply it passes on."""

    def __init__(self, inner: Brain) -> None:
        self.inner = inner
        self.model = inner.model
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def generate(self, *, system_prompt: str, tools: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]]) -> ModelReply:
        reply = self.inner.generate(system_prompt=system_prompt, tools=tools, history=history)
        with self._lock:
            self.calls.append(dict(reply.usage or {}))
        return reply

    @property
    def usage(self) -> Usage:
        with self._lock:
            return Usage.sum(self.calls)
