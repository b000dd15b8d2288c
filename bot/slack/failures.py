"""What to tell people when Slack refuses Ghost or cannot be reached: one line with the fix.

Shared by the app (its error handler, the bot-identity lookup), the handlers (a thread root
Slack refused) and ``ghost serve``'s start-up (Socket Mode), so none of them imports another
for the wording, and an operator never reads a raw ``<urlopen error …>``.
"""

from __future__ import annotations

import socket
from urllib.error import URLError

from slack_sdk.errors import SlackApiError

#: What to tell the engineer for the Slack errors they can fix themselves.
SLACK_HINTS = {
    "not_in_channel": "Ghost is not in this channel yet: `/invite @ghost`, then try again.",
    "channel_not_found": "Ghost cannot see this channel: `/invite @ghost` (private channels "
                         "need an invite too).",
    "invalid_auth": "Slack refused Ghost's token: check SLACK_BOT_TOKEN.",
    "missing_scope": "The Slack app lacks a scope: reinstall it from "
                     "deploy/slack-manifest.yaml.",
}

#: Slack's answers to a token it will not take, by which token was used
_TOKEN_ERRORS = ("invalid_auth", "not_authed", "account_inactive", "token_revoked",
                 "token_expired", "not_allowed_token_type")


def unreachable_reason(exc: BaseException) -> str | None:
    """Why a request never reached Slack (DNS, refused, timeout, TLS), in a few words; None
    when ``exc`` is not a network failure."""
    reason: object = exc.reason if isinstance(exc, URLError) else exc
    if isinstance(reason, socket.gaierror):
        return f"the name does not resolve ({reason.strerror or reason})"
    if isinstance(reason, TimeoutError | socket.timeout):
        return "no answer before the timeout"
    if isinstance(reason, ConnectionRefusedError):
        return "the connection was refused"
    if isinstance(reason, OSError):
        return str(reason.strerror or reason).strip() or type(reason).__name__
    if isinstance(exc, URLError):
        return str(reason).strip() or "the request failed"
    return None


def describe(exc: BaseException, *, api_url: str, token_name: str = "SLACK_BOT_TOKEN",
             doing: str = "call Slack") -> tuple[str, str]:
    """(what happened, what to do) for a failed call to Slack's Web API at ``api_url``."""
    network = unreachable_reason(exc)
    if network is not None:
        return (f"Cannot reach Slack's Web API at {api_url} to {doing}: {network}.",
                "Check this machine's network, DNS and proxy (HTTPS to slack.com must be "
                "allowed), or SLACK_API_URL.")
    if isinstance(exc, SlackApiError):
        code = str(exc.response.get("error") or "unknown_error")
        if code in _TOKEN_ERRORS:
            return (f"Slack refused {token_name} ({code}) when Ghost tried to {doing}.",
                    f"Copy a current token into {token_name} (the Slack app's settings).")
        hint = SLACK_HINTS.get(code, "See docs/slack.md; `ghost doctor` checks the settings.")
        return (f"Slack answered {code} when Ghost tried to {doing}.", hint)
    text = " ".join(str(exc).split()) or type(exc).__name__
    return (f"Ghost could not {doing}: {text}.",
            "Run `ghost serve --verbose` to see the Slack libraries' own log.")
