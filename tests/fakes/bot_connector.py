"""A stand-in for the Bot Framework connector (the activity's ``serviceUrl``).

Answers the v3 conversation calls botbuilder makes — send, reply, update — keeping each
activity as everyone in the thread would see it, and recording the bearer token of every call.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from tests.fakes.json_server import JsonServer, Request


class FakeConnector:
    def __init__(self) -> None:
        self.activities: dict[str, dict[str, Any]] = {}   # id -> as it stands now
        self.order: list[str] = []
        self.updates: list[dict[str, Any]] = []
        self.tokens: list[str] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server = JsonServer(self._route)

    @property
    def url(self) -> str:
        return self.server.url + "/"

    def start(self) -> FakeConnector:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def posted(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self.activities[i] for i in self.order]

    def _route(self, request: Request) -> tuple[int, Any]:
        parts = request.path.split("?")[0].strip("/").split("/")
        if parts[:2] != ["v3", "conversations"] or len(parts) < 4 or parts[3] != "activities":
            return 404, {"error": {"code": "BadArgument", "message": request.path}}
        self.tokens.append(request.headers.get("authorization", ""))
        body = dict(request.json or {})
        with self._lock:
            if request.method == "PUT":
                activity_id = parts[4]
                if activity_id not in self.activities:
                    return 404, {"error": {"code": "ActivityNotFound"}}
                self.activities[activity_id] = {**body, "id": activity_id}
                self.updates.append(self.activities[activity_id])
                return 200, {"id": activity_id}
            activity_id = f"1700000{next(self._ids):06d}"
            self.activities[activity_id] = {**body, "id": activity_id}
            self.order.append(activity_id)
            return 201, {"id": activity_id}
