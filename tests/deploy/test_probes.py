"""/healthz (the process answers) and /readyz (database reachable and migrated) on the web port."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

from bot.health import Readiness
from bot.slack.http import make_server
from storage.db import Database


@contextmanager
def _serving(server: ThreadingHTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str, method: str = "GET", timeout: float = 5) -> tuple[int, str]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_ready_when_the_database_is_migrated(migrated_url: str) -> None:
    db = Database(migrated_url)
    with _serving(make_server(None, "127.0.0.1", 0, Readiness(db))) as base:
        assert _get(f"{base}/healthz") == (200, "ok")
        assert _get(f"{base}/readyz") == (200, "ready")
        # a probe-only server answers no Slack requests
        assert _get(f"{base}/slack/events", "POST")[0] == 404
    db.dispose()


def test_not_ready_until_migrated_and_the_reason_stays_off_the_wire(database_url: str) -> None:
    db = Database(database_url)
    now = [0.0]
    ready = Readiness(db, ttl_s=5.0, clock=lambda: now[0])
    with _serving(make_server(None, "127.0.0.1", 0, ready)) as base:
        assert _get(f"{base}/healthz") == (200, "ok")  # alive, so not restarted
        assert _get(f"{base}/readyz") == (503, "not ready")
        assert ready()[1].endswith("is empty; run `ghost db upgrade` (in Azure: the migrate "
                                   "job, docs/deploy.md)")
        from storage import migrate

        migrate.upgrade(db.engine)
        assert _get(f"{base}/readyz") == (503, "not ready")  # cached for ttl_s
        now[0] = 5.0
        assert _get(f"{base}/readyz") == (200, "ready")
    db.dispose()


def test_not_ready_when_the_database_is_unreachable() -> None:
    db = Database("postgresql://ghost@127.0.0.1:9/ghost")  # port 9: nothing listens
    ok, why = Readiness(db)()
    assert not ok
    assert why.startswith("cannot reach the database at postgresql+psycopg://ghost@127.0.0.1:9/")
    assert "Connection refused" in why and why.endswith("that Ghost may log in")
    db.dispose()


def test_a_schema_from_a_newer_release_keeps_running_replicas_ready(migrated_url: str) -> None:
    """Upgrades migrate first, then roll the apps: the old replicas must stay in service."""
    from sqlalchemy import text

    from bot.health import database_status

    db = Database(migrated_url)
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    assert Readiness(db)() == (True, f"database {_safe(db)} is at revision 9999_from_the_future, "
                                     "newer than this Ghost (" + _head() + ")")
    ok, found, fix = database_status(db)  # what `ghost doctor` and a fresh start see
    assert not ok and fix == "run the newer Ghost release"
    db.dispose()


def _safe(db: Database) -> str:
    from storage.db import safe_url

    return safe_url(db.url)


def _head() -> str:
    from storage import migrate

    return migrate.head_revision()


def test_a_hanging_database_gets_one_readiness_check_at_a_time() -> None:
    """Issue 27: four concurrent /readyz took 5, 10, 15 and 20 s (each queued behind the last
    check). Now one check is in flight; the others answer at once with the last result."""
    import socket
    import time
    from concurrent.futures import ThreadPoolExecutor

    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(16)  # accepts, never answers: the connect waits for its timeout
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(hang.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    db = Database(f"postgresql://ghost@127.0.0.1:{hang.getsockname()[1]}/ghost")
    with _serving(make_server(None, "127.0.0.1", 0, Readiness(db))) as base:
        def timed(_i: int) -> tuple[float, int]:
            start = time.monotonic()
            status = _get(f"{base}/readyz", timeout=60)[0]
            return time.monotonic() - start, status

        first = ThreadPoolExecutor(1).submit(timed, 0)
        time.sleep(0.5)  # the first check is connecting
        with ThreadPoolExecutor(4) as pool:
            others = list(pool.map(timed, range(4)))
        slow, status = first.result()
    hang.close()
    db.dispose()
    assert status == 503 and all(s == 503 for _t, s in others)
    assert len(accepted) == 1  # one check reached the database, not five
    assert max(t for t, _s in others) < slow  # none waited for the check in flight
