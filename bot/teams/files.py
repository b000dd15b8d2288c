"""The RCA as a file in the channel's Files tab, through Microsoft Graph.

Teams' file-consent upload works only in personal chats; in a channel the file goes into the
channel's SharePoint folder: ``GET /teams/{team}/channels/{channel}/filesFolder``, then ``PUT
/drives/{drive}/items/{folder}:/{name}:/content``. The bot then posts a message in the thread with
the file attached (a Teams file card pointing at it). This needs the ``Files.ReadWrite.All``
application permission with admin consent; without it Graph answers 401/403 and
:class:`FilesRefused` tells the caller to fall back to posting the report as messages.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

import requests

from bot.teams.identity import BotIdentity, TokenUnavailable
from core.errors import GhostError

log = logging.getLogger(__name__)
FILE_CARD = "application/vnd.microsoft.teams.card.file.info"
GUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


class FilesRefused(GhostError):
    """Graph would not take the file (no permission, no team, unreachable): post it instead."""


@dataclass(frozen=True)
class UploadedFile:
    name: str
    url: str
    unique_id: str
    file_type: str

    def attachment(self) -> dict[str, Any]:
        """The Teams file card, as botbuilder's ``Attachment`` fields."""
        return {"content_type": FILE_CARD, "content_url": self.url, "name": self.name,
                "content": {"uniqueId": self.unique_id, "fileType": self.file_type}}


class ChannelFiles:
    """Uploads into a channel's files folder with the bot's identity."""

    def __init__(self, graph_url: str, identity: BotIdentity, *, timeout_s: float = 30.0) -> None:
        self.graph_url = graph_url.rstrip("/")
        self.identity = identity
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, tenant: str | None, **kw: Any) -> dict[str, Any]:
        try:
            token = self.identity.token(self.graph_url + "/.default", tenant)
        except TokenUnavailable as exc:
            raise FilesRefused(f"no Microsoft Graph token: {exc}") from exc
        headers = {"Authorization": f"Bearer {token}", **kw.pop("headers", {})}
        try:
            response = self.identity.http.request(method, self.graph_url + path, headers=headers,
                                                  timeout=self.timeout_s, **kw)
        except requests.RequestException as exc:
            raise FilesRefused(f"Microsoft Graph at {self.graph_url} could not be reached: "
                               f"{exc}") from exc
        if response.status_code in (401, 403):
            raise FilesRefused(f"Microsoft Graph answered HTTP {response.status_code} to "
                               f"{method} {path.split('?')[0]}",
                               "Grant the app the Files.ReadWrite.All application permission "
                               "with admin consent to get the RCA as a file.")
        if response.status_code >= 300:
            raise FilesRefused(f"Microsoft Graph answered HTTP {response.status_code} to "
                               f"{method} {path.split('?')[0]}")
        try:
            body = response.json()
        except ValueError as exc:
            raise FilesRefused("Microsoft Graph answered something that is not JSON") from exc
        if not isinstance(body, dict):
            raise FilesRefused("Microsoft Graph's answer is not a JSON object")
        return body

    def upload(self, team: str | None, channel: str, tenant: str | None, name: str,
               content: bytes) -> UploadedFile:
        """The file in the channel's folder (replacing one of the same name)."""
        if not team:
            raise FilesRefused("the conversation has no team (not a channel), so no files "
                               "folder")
        quote = urllib.parse.quote
        folder = self._call("GET", f"/v1.0/teams/{quote(team, safe='')}/channels/"
                                   f"{quote(channel, safe='')}/filesFolder", tenant)
        drive = str((folder.get("parentReference") or {}).get("driveId") or "")
        folder_id = str(folder.get("id") or "")
        if not drive or not folder_id:
            raise FilesRefused("the channel's files folder has no drive (SharePoint site not "
                               "provisioned yet?)")
        item = self._call("PUT", f"/v1.0/drives/{quote(drive, safe='')}/items/"
                                 f"{quote(folder_id, safe='')}:/{quote(name)}:/content", tenant,
                          data=content, headers={"Content-Type": "text/markdown"})
        match = GUID.search(str(item.get("eTag") or ""))
        return UploadedFile(name=str(item.get("name") or name), url=str(item.get("webUrl") or ""),
                            unique_id=match.group(0) if match else str(item.get("id") or ""),
                            file_type=name.rsplit(".", 1)[-1])
