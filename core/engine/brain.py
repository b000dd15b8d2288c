"""The brain port: the model behind the investigation, seen from the domain.

Conversation turns are plain JSON-able dicts in the Gemini REST shape (camelCase):
``{"role": "user" | "model", "parts": [...]}`` where a part is ``{"text": …}``,
``{"functionCall": {"name", "args", "id"?}}``, ``{"functionResponse": {"name", "response",
"id"?}}``, and may carry ``"thoughtSignature"`` (base64) and ``"thought": true``. Model turns are
stored exactly as returned (current Gemini models reject a function-calling history whose
thought signatures were dropped). The adapter (``bot/gemini_brain.py``) is the only place that
imports google-genai.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class FunctionCall:
    """One function call the model asked for."""

    name: str
    args: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class ModelReply:
    """One model response: the verbatim turn plus what the loop needs from it."""

    content: dict[str, Any]
    function_calls: tuple[FunctionCall, ...] = ()
    text: str = ""
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)


class BrainError(Exception):
    """The model could not answer. ``transient`` errors (429, 5xx, timeouts) may be retried."""

    def __init__(self, message: str, *, transient: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.status = status


class Brain(Protocol):
    """Generates the next model turn from the whole history."""

    model: str

    def generate(
        self,
        *,
        system_prompt: str,
        tools: Sequence[Mapping[str, Any]],
        history: Sequence[Mapping[str, Any]],
    ) -> ModelReply: ...
