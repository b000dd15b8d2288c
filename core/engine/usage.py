"""Tokens and dollars: Gemini's ``usageMetadata`` summed over model calls, priced from a table.

The price table is ``GHOST_PRICES``: JSON ``{"MODEL": {"prompt": $, "output": $, "thinking": $}}``
in US dollars per million tokens (thinking defaults to the output price, as Gemini bills it).
A model the table does not list has no cost (shown as n/a), never a guessed one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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


def recorded(engine_state: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The usageMetadata the engine saved per model call (``engine_state["usage"]``), each
    with its ``turn`` and ``model``."""
    calls = (engine_state or {}).get("usage")
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def priced(calls: Sequence[Mapping[str, Any]], table: Mapping[str, Price],
           model: str = "") -> tuple[Usage, float | None]:
    """Tokens over the calls and their cost, each call priced by the model that answered it
    (``model`` when a call does not say); None when one of those models has no price."""
    total, cost, unpriced = Usage(), 0.0, False
    for call in calls:
        usage = Usage.of(call)
        total = total + usage
        each = cost_of(table, str(call.get("model") or model), usage)
        unpriced = unpriced or each is None
        cost += each or 0.0
    return total, (None if unpriced else round(cost, 6))


def describe(usage: Usage, cost: float | None) -> str:
    """One line: tokens by kind, model calls and the estimated cost."""
    if not usage.calls:
        return "no model usage recorded"
    money = ("cost n/a (the model has no price in GHOST_PRICES)" if cost is None
             else f"est. ${cost:.4f}")
    return (f"{usage.total:,} tokens (prompt {usage.prompt:,}, output {usage.output:,}, "
            f"thinking {usage.thinking:,}) in {usage.calls} model call"
            f"{'' if usage.calls == 1 else 's'}, {money}")


def usage_line(engine_state: Mapping[str, Any] | None, prices: str | None,
               model: str = "") -> str:
    """The investigation's usage so far, for ``ghost session show``, the closing banner, the
    chat status and the RCA. ``prices`` is GHOST_PRICES' text; an invalid table prices
    nothing (``ghost eval`` and ``ghost doctor`` say what is wrong with it)."""
    try:
        table = parse_prices(prices)
    except PriceTableError:
        table = {}
    return describe(*priced(recorded(engine_state), table, model))


def status_usage(engine_state: Mapping[str, Any] | None, prices: str | None,
                 now: datetime) -> str:
    """The chat status's short form: ``52,301 tokens · est. $0.0312 · 4 min so far`` (whole
    minutes, so the status is not edited every second); empty when no call reported usage."""
    calls = recorded(engine_state)
    if not calls:
        return ""
    try:
        table = parse_prices(prices)
    except PriceTableError:
        table = {}
    usage, cost = priced(calls, table)
    parts = [f"{usage.total:,} tokens", "cost n/a" if cost is None else f"est. ${cost:.4f}"]
    started = str((engine_state or {}).get("started_at") or "")
    try:
        begun = datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return " · ".join(parts)
    minutes = max(0, int((now - begun).total_seconds() // 60))
    parts.append("<1 min so far" if minutes < 1 else f"{minutes} min so far")
    return " · ".join(parts)
