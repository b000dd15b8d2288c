"""The brain port over the real google-genai client (the only module that imports it).

History turns arrive as REST-shaped dicts (``core/engine/brain.py``) and go out as
``types.Content``; the reply's candidate content comes back as such a dict, to be stored verbatim.
The delicate field is ``thoughtSignature``: JSON carries it as base64, the SDK as ``bytes``.
This module decodes and encodes it itself (standard or URL-safe base64 in, standard out) instead
of relying on how a pydantic version treats a ``str`` given for a ``bytes`` field, so the bytes
the server signed are the bytes sent back. Retries belong to the loop: the SDK's own retrying
stays off, and every failure becomes a :class:`BrainError` saying whether a retry can help.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from google import genai
from google.genai import errors, types

from core.engine.brain import BrainError, FunctionCall, ModelReply
from core.engine.models import DEFAULT_MODEL

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# A reply without content for these reasons is a verdict on the conversation, not bad luck.
_BLOCKED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
                      "LANGUAGE", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "MODEL_ARMOR"})
_SIGNATURE_KEYS = ("thoughtSignature", "thought_signature")
# The REST version Ghost speaks. google-genai 3.x defaults the Gemini API to ``v1``, but the
# documented generateContent surface (tools, systemInstruction, thought signatures) is ``v1beta``,
# and the ``v1`` endpoint has been seen refusing ``tools`` and ``systemInstruction``.
# ``GOOGLE_GENAI_API_VERSION`` (the SDK's own variable) still overrides it.
API_VERSION = "v1beta"

# Gemini adds enum values (finish reasons…) before the SDK knows them; the SDK keeps the raw
# string and warns on stderr, which only clutters the engineer's terminal.
warnings.filterwarnings("ignore", message=r".* is not a valid ", category=UserWarning,
                        module=r"google\.genai\.")


def _transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeouts, other transport errors) of whichever httpx flavour the SDK runs on."""
    timeouts: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(mod.TimeoutException)
        transport.append(mod.TransportError)
    return tuple(timeouts), tuple(transport)


_TIMEOUTS, _TRANSPORT = _transport_errors()


# ── thought signatures ─────────────────────────────────────────────────────────────────────────

def decode_signature(value: str | bytes) -> bytes:
    """Base64 (standard or URL-safe, padding optional) to bytes; bytes pass through."""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    text = value.strip()
    alt = b"-_" if ("-" in text or "_" in text) else None
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=alt, validate=True)


def encode_signature(value: bytes) -> str:
    """Standard base64, the form the REST API returns."""
    return base64.b64encode(value).decode("ascii")


# ── dicts ⇄ SDK types ──────────────────────────────────────────────────────────────────────────

def to_part(part: Mapping[str, Any]) -> types.Part:
    fields = {k: v for k, v in part.items() if k not in _SIGNATURE_KEYS}
    sig = next((part[k] for k in _SIGNATURE_KEYS if part.get(k) is not None), None)
    if sig is not None:
        fields["thought_signature"] = decode_signature(sig)
    return types.Part.model_validate(fields)


def to_content(turn: Mapping[str, Any]) -> types.Content:
    """One stored turn (REST camelCase dict) as the SDK's Content."""
    return types.Content(role=turn.get("role"), parts=[to_part(p) for p in turn.get("parts", [])])


def from_part(part: types.Part) -> dict[str, Any]:
    out = part.model_dump(mode="json", by_alias=True, exclude_none=True)
    out.pop("thoughtSignature", None)
    if part.thought_signature is not None:
        out["thoughtSignature"] = encode_signature(part.thought_signature)
    return out


def from_content(content: types.Content) -> dict[str, Any]:
    """The SDK's Content as the REST dict the engine stores."""
    return {"role": content.role or "model", "parts": [from_part(p) for p in content.parts or []]}


def to_tool(declarations: Sequence[Mapping[str, Any]]) -> types.Tool:
    return types.Tool(function_declarations=[
        types.FunctionDeclaration.model_validate(dict(d)) for d in declarations])


# ── the adapter ────────────────────────────────────────────────────────────────────────────────

class GeminiBrain:
    """``Brain`` over ``genai.Client``. ``base_url=None`` lets the SDK read
    ``GOOGLE_GEMINI_BASE_URL`` (how tests reach the local fake)."""

    def __init__(self, model: str, api_key: str, *, base_url: str | None = None,
                 timeout_s: float = 120, api_version: str | None = None) -> None:
        if not api_key:
            raise BrainError("no Gemini API key: set GEMINI_API_KEY (https://aistudio.google.com"
                             "/apikey)", transient=False)
        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.api_version = (api_version or os.environ.get("GOOGLE_GENAI_API_VERSION")
                            or API_VERSION)
        options = types.HttpOptions(base_url=base_url, api_version=self.api_version,
                                    timeout=max(1, int(timeout_s * 1000)))
        # vertexai=False: an API key means the Gemini API, whatever GOOGLE_GENAI_USE_VERTEXAI says.
        self._client = genai.Client(api_key=api_key, vertexai=False, http_options=options)

    def endpoint(self) -> str:
        """The URL ``generate`` posts to (named in a 404, where a wrong base URL shows)."""
        return f"{self.base()}/{self.api_version}/models/{self.model}:generateContent"

    def base(self) -> str:
        """The endpoint without the API path: short enough for a status line."""
        return (self.base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL")
                or "https://generativelanguage.googleapis.com").rstrip("/")

    def host(self) -> str:
        """The endpoint's host (and port), for a status line."""
        from urllib.parse import urlsplit

        return urlsplit(self.base()).netloc or self.base()

    def generate(self, *, system_prompt: str, tools: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]]) -> ModelReply:
        try:
            contents = [to_content(turn) for turn in history]
        except (binascii.Error, ValueError) as exc:
            raise BrainError(f"the stored history cannot be sent to Gemini: {exc}",
                             transient=False) from exc
        config = types.GenerateContentConfig(
            system_instruction=system_prompt,
            tools=[to_tool(tools)] if tools else None,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        try:
            response = self._client.models.generate_content(
                model=self.model, contents=contents, config=config)
        except errors.APIError as exc:
            raise self._api_error(exc) from exc
        except _TIMEOUTS as exc:
            raise BrainError(f"Gemini did not answer within {self.timeout_s:g}s at POST "
                             f"{self.endpoint()} ({exc or type(exc).__name__})",
                             transient=True) from exc
        except _TRANSPORT as exc:
            raise BrainError(f"could not reach Gemini at POST {self.endpoint()}: "
                             f"{type(exc).__name__}: {exc}", transient=True) from exc
        return self._reply(response)

    def _reply(self, response: types.GenerateContentResponse) -> ModelReply:
        if not response.candidates:
            feedback = response.prompt_feedback
            reason = _name(feedback.block_reason) if feedback else None
            if reason:
                detail = (feedback.block_reason_message if feedback else None) or ""
                raise BrainError(f"Gemini refused the conversation (prompt blocked: {reason}"
                                 f"{'; ' + detail if detail else ''}); asking again will not "
                                 "help", transient=False)
            raise BrainError("Gemini returned no answer (no candidates and no reason given); "
                             "asking again may help", transient=True)
        cand = response.candidates[0]
        finish = _name(cand.finish_reason)
        if cand.content is None or not cand.content.parts:
            blocked = finish in _BLOCKED
            raise BrainError(
                f"Gemini returned an empty answer (finish reason {finish or 'none'})"
                + ("; the conversation was blocked" if blocked else "; asking again may help"),
                transient=not blocked)
        parts = cand.content.parts
        calls = tuple(
            FunctionCall(name=p.function_call.name or "", args=dict(p.function_call.args or {}),
                         id=p.function_call.id)
            for p in parts if p.function_call is not None)
        text = "".join(p.text for p in parts if p.text and not p.thought)
        usage = (response.usage_metadata.model_dump(mode="json", by_alias=True,
                                                    exclude_none=True)
                 if response.usage_metadata else {})
        return ModelReply(content=from_content(cand.content), function_calls=calls, text=text,
                          finish_reason=finish, usage=usage)

    def _api_error(self, exc: errors.APIError) -> BrainError:
        code = exc.code
        detail = exc.message or str(exc)
        blob = f"{detail} {exc.details}".lower()
        transient = code in TRANSIENT_STATUS or code >= 500
        if code == 429:
            msg = f"Gemini rate limit or quota exhausted (429 at {self.host()}): {detail}"
        elif transient:
            msg = (f"Gemini is unavailable ({code} {exc.status or ''} at POST {self.endpoint()})"
                   f": {detail}")
        elif "api key" in blob or "api_key" in blob:
            msg = (f"Gemini rejected the API key ({code}): {detail} — check GEMINI_API_KEY "
                   "(create one at https://aistudio.google.com/apikey)")
        elif code == 404:
            msg = (f"Gemini model {self.model!r} was not found ({detail}) at POST "
                   f"{self.endpoint()} — it may be shut down; choose a current model with "
                   f"--model or GHOST_MODEL (default {DEFAULT_MODEL}); an endpoint that serves "
                   "another API version needs GOOGLE_GENAI_API_VERSION")
        elif code in (401, 403):
            msg = (f"Gemini refused the request ({code} {exc.status or ''}): {detail} — check "
                   "that GEMINI_API_KEY is valid and its project may use the Gemini API")
        elif "thought_signature" in blob or "thought signature" in blob:
            msg = (f"Gemini rejected the conversation's thought signatures ({code}): {detail} — "
                   "model turns must be stored and sent back exactly as returned")
        else:
            msg = f"Gemini rejected the request ({code} {exc.status or ''}): {detail}"
        return BrainError(msg, transient=transient, status=code)


def _name(value: Any) -> str | None:
    """An SDK enum (or an unknown raw string) as its plain name."""
    if value is None:
        return None
    return str(getattr(value, "value", value))
