"""A stand-in for the Microsoft Graph calls of the RCA upload: a channel's ``filesFolder`` and
a simple upload into it. ``allow`` off answers 403 as Graph does without Files.ReadWrite.All."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import unquote

from tests.fakes.json_server import JsonServer, Request


class FakeGraphFiles:
    def __init__(self, valid_tokens: set[str]) -> None:
        self.valid_tokens = valid_tokens
        self.allow = True
        self.files: dict[str, bytes] = {}
        self.server = JsonServer(self._route)

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> FakeGraphFiles:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def _route(self, request: Request) -> tuple[int, Any]:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.valid_tokens:
            return 401, {"error": {"code": "InvalidAuthenticationToken"}}
        if not self.allow:
            return 403, {"error": {"code": "accessDenied",
                                   "message": "Either scp or roles claim need to be present"}}
        path = unquote(request.path.split("?")[0])
        parts = path.strip("/").split("/")
        if request.method == "GET" and parts[1] == "teams" and parts[-1] == "filesFolder":
            return 200, {"id": "folder-1", "name": "incidents",
                         "webUrl": "https://contoso.sharepoint.test/incidents",
                         "parentReference": {"driveId": "drive-1"}}
        if request.method == "PUT" and path.startswith("/v1.0/drives/drive-1/items/folder-1:/"):
            name = path.split(":/")[1]
            self.files[name] = request.body
            guid = str(uuid.uuid4()).upper()
            return 201, {"id": "item-" + guid, "name": name, "eTag": f'"{{{guid}}},1"',
                         "webUrl": f"https://contoso.sharepoint.test/incidents/{name}"}
        return 404, {"error": {"code": "itemNotFound", "message": path}}
