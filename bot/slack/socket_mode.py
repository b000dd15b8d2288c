"""Socket Mode: the one way ``ghost serve`` connects when SLACK_APP_TOKEN is set.

Kept here (not inline in ``serve``) so the tests drive exactly this path against a local
WebSocket server. slack_sdk's built-in client needs no websocket library of its own.
"""

from __future__ import annotations

from slack_bolt import App
from slack_bolt.adapter.socket_mode import SocketModeHandler


class SocketMode:
    """A connected Socket Mode session for the bolt app; ``close()`` ends it."""

    def __init__(self, app: App, app_token: str) -> None:
        self.handler = SocketModeHandler(app, app_token)

    def connect(self) -> SocketMode:
        """Ask Slack for a URL (``apps.connections.open``) and open the socket; returns once
        the WebSocket handshake is done, so the caller can log "connected" truthfully."""
        self.handler.connect()  # type: ignore[no-untyped-call]
        return self

    def close(self) -> None:
        self.handler.close()  # type: ignore[no-untyped-call]


def connect_socket_mode(app: App, app_token: str) -> SocketMode:
    """The connection ``ghost serve`` holds open until it is told to stop."""
    return SocketMode(app, app_token).connect()
