"""Libraries keep their chatter to themselves unless `ghost --verbose` asks for it.

apscheduler and alembic announce every job and migration at INFO; slack_sdk logs each retry
of a request at INFO and each failed attempt at ERROR before raising it (Ghost then says what
failed and what to do, once); azure-identity logs each credential it tried when nobody is
signed in to Azure, which Ghost already reports in one line; httpx (under google-genai) logs
every request to Gemini.
"""

from __future__ import annotations

import logging

#: logger -> the lowest level shown without --verbose
QUIET = {
    "apscheduler": logging.WARNING,
    "alembic": logging.WARNING,
    "azure": logging.WARNING,
    "azure.identity": logging.ERROR,  # Ghost says itself when no Azure login was found
    "msal": logging.WARNING,
    "urllib3": logging.WARNING,
    "slack_sdk": logging.WARNING,
    "slack_bolt": logging.WARNING,
    "botbuilder": logging.WARNING,
    "aiohttp": logging.WARNING,
    "httpx": logging.WARNING,
    "httpcore": logging.WARNING,
    "google_genai": logging.WARNING,
    "websocket": logging.WARNING,
}

#: (logger, the start of a message) a library logs at ERROR and then raises to Ghost, which
#: reports the failure itself in one line with the fix: shown only with --verbose
RAISED_ANYWAY = (
    ("slack_sdk.web.base_client", "Failed to send a request to Slack API server"),
    # Socket Mode logs through the bolt app's logger (or its own when it has none)
    ("slack_bolt.App", "Failed to retrieve WSS URL"),
    ("slack_sdk.socket_mode.builtin.client", "Failed to retrieve WSS URL"),
)


class _RaisedAnyway(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


_FILTERS: dict[tuple[str, str], _RaisedAnyway] = {}


def quiet_library_logs(verbose: bool) -> None:
    """Below-WARNING library logs hidden (``verbose``: everything the libraries log)."""
    for name, level in QUIET.items():
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else level)
    for key in RAISED_ANYWAY:
        logger = logging.getLogger(key[0])
        if key in _FILTERS:
            logger.removeFilter(_FILTERS.pop(key))
        if not verbose:
            _FILTERS[key] = _RaisedAnyway(key[1])
            logger.addFilter(_FILTERS[key])
