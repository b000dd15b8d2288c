"""Libraries keep their chatter to themselves unless `ghost --verbose` asks for it.

apscheduler and alembic announce every job and migration at INFO; azure-identity logs each
credential it tried when nobody is signed in to Azure, which Ghost already reports in one line.
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
}


def quiet_library_logs(verbose: bool) -> None:
    """Below-WARNING library logs hidden (``verbose``: everything the libraries log)."""
    for name, level in QUIET.items():
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else level)
