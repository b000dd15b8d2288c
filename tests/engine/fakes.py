"""A scripted brain (a queue of replies, every request recorded) and a recording orchestrator."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from core.engine.brain import BrainError, FunctionCall, ModelReply


def call(name: str, **args: Any) -> FunctionCall:
    return FunctionCall(name=name, args=args, id=None)


def reply(*calls: FunctionCall, text: str = "") -> ModelReply:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"text": text})
    for i, c in enumerate(calls):
        part: dict[str, Any] = {"functionCall": {"name": c.name, "args": c.args}}
        if i == 0:
            part["thoughtSignature"] = "c2lnLW9mLXR1cm4="
        parts.append(part)
    return ModelReply(content={"role": "model", "parts": parts}, function_calls=tuple(calls),
                      text=text, finish_reason="STOP")


class FakeBrain:
    """Answers from a queue; each entry a ModelReply or a BrainError to raise."""

    model = "fake-model"

    def __init__(self, *replies: ModelReply | BrainError) -> None:
        self.replies: deque[ModelReply | BrainError] = deque(replies)
        self.requests: list[dict[str, Any]] = []

    def generate(self, *, system_prompt: str, tools: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]]) -> ModelReply:
        self.requests.append({"system_prompt": system_prompt, "tools": list(tools),
                              "history": [dict(h) for h in history]})
        if not self.replies:
            raise AssertionError("the fake brain ran out of scripted replies")
        nxt = self.replies.popleft()
        if isinstance(nxt, BrainError):
            raise nxt
        return nxt

    def function_responses(self, request_index: int) -> list[dict[str, Any]]:
        """The functionResponse bodies in the last user turn of one request."""
        last = self.requests[request_index]["history"][-1]
        return [p["functionResponse"] for p in last["parts"] if "functionResponse" in p]


class RecordingOrchestrator:
    """Answers orchestrator intents from a script and records each request."""

    def __init__(self, *responses: dict[str, Any]) -> None:
        self.responses = deque(responses)
        self.requests: list[dict[str, Any]] = []

    def orchestrate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        self.requests.append(dict(request))
        if self.responses:
            return self.responses.popleft()
        return {"status": "error", "error": "unscripted", "message": "no scripted response"}
