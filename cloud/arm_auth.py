"""A bearer-token policy for a loopback ARM endpoint (local fakes), since the SDK's refuses http.

Used only when AzureSettings says the endpoint is plain http on a loopback address, so a real
token can never travel unencrypted off the machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from azure.core.credentials import TokenCredential
from azure.core.pipeline import PipelineRequest
from azure.core.pipeline.policies import SansIOHTTPPolicy

from cloud.azure_settings import LOOPBACK_HOSTS


class LoopbackBearerPolicy(SansIOHTTPPolicy[Any, Any]):
    """Adds ``Authorization: Bearer`` to requests for loopback hosts, and to nothing else."""

    def __init__(self, credential: TokenCredential, scopes: Sequence[str]) -> None:
        self.credential = credential
        self.scopes = tuple(scopes)

    def on_request(self, request: PipelineRequest[Any]) -> None:
        host = urlsplit(request.http_request.url).hostname
        if host not in LOOPBACK_HOSTS:
            raise ValueError(f"refusing to send a bearer token to non-loopback host {host!r} "
                             "over this test policy")
        token = self.credential.get_token(*self.scopes)
        request.http_request.headers["Authorization"] = f"Bearer {token.token}"
