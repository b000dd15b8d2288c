"""Engines and sessions for SQLite (default, one process) and PostgreSQL (production).

SQLite transactions start with ``BEGIN IMMEDIATE`` so that two writers serialise on the write
lock instead of failing on upgrade; WAL mode and a busy timeout let readers and a worker share the
file. PostgreSQL URLs written as ``postgresql://`` use psycopg 3.

Dropped connections (a server restart, ``pg_terminate_backend``, a failover): the pool pings a
connection before handing it out (``pool_pre_ping``) and replaces a dead one, so the next unit
of work gets a live connection; one that dies *during* a unit of work raises an error that
:func:`is_transient` recognises, and the caller retries the unit (the worker hands the
investigation back instead of failing it). PostgreSQL connections carry
``application_name=ghost`` (unless the URL sets one) so an operator can find them in
``pg_stat_activity``.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from core.errors import GhostError
from storage.errors import (
    DatabaseMissing,
    DatabaseNotMigrated,
    DatabaseUnreachable,
    too_new,
)

#: the databases Ghost runs on (SQLAlchemy backend names)
SUPPORTED_BACKENDS = ("sqlite", "postgresql")
URL_EXAMPLES = "postgresql://user@host:5432/ghost or sqlite:////var/lib/ghost/ghost.db"


class DatabaseUrlInvalid(GhostError):
    """GHOST_DATABASE_URL is not a URL Ghost can use (not a URL, another database, no driver)."""

    exit_code = 2


def normalise_url(url: str) -> str:
    """Pick the psycopg 3 driver for bare ``postgresql://`` / ``postgres://`` URLs."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def safe_url(url: str) -> str:
    """The URL with any password hidden, for error messages and logs."""
    try:
        return make_url(normalise_url(url)).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - never fail while reporting a failure
        return re.sub(r"//[^@/]*@", "//***@", url)


#: the execution option that marks a read-only unit of work (``Database.reading``)
READ_ONLY = "ghost_read_only"
#: a pooled SQLite connection's info key: it holds this process's write turn
GATE = "ghost_write_turn"


#: set while a request is being acknowledged: its record goes before the workers' writes
ACKING: ContextVar[bool] = ContextVar("ghost_acking", default=False)


@contextmanager
def acking() -> Iterator[None]:
    """Around the write a request's ack waits for (a slash command's investigation, a click's
    inbox entry): on SQLite it gets this process's next write turn ahead of the workers'."""
    token = ACKING.set(True)
    try:
        yield
    finally:
        ACKING.reset(token)


class WriteTurns:
    """This process's turn to write to a SQLite file, handed over at once (SQLite's own
    waiters sleep up to 100 ms between tries), and to a request being acknowledged first."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = False
        self._acking = 0

    def acquire(self, timeout: float, *, first: bool = False) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            self._acking += first
            try:
                while self._held or (self._acking and not first):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                self._held = True
                return True
            finally:
                self._acking -= first

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()


def _sqlite_setup(engine: Engine) -> None:
    gate = WriteTurns()  # this process's turn to write (see _on_begin)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # let us issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        if engine.url.database not in (None, "", ":memory:"):
            cur.execute("PRAGMA journal_mode=WAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # a unit of work that writes takes the write lock at once (no deadlock upgrading a
        # read lock); a read (``Database.reading``) takes none: under WAL it reads its
        # snapshot while a writer commits. Before, every read queued on the write lock too,
        # and twenty slash commands' records waited behind the workers' reads (issue 34)
        if conn.get_execution_options().get(READ_ONLY):
            conn.exec_driver_sql("BEGIN")
            return
        # this process's writers queue on a lock of ours, which hands over at once, rather
        # than on SQLite's, whose waiters sleep up to 100 ms between tries: twenty slash
        # commands' records no longer wait out those sleeps behind the workers' writes
        if not gate.acquire(30, first=ACKING.get()):
            raise sqlite3.OperationalError("database is locked (no write turn in 30 s)")
        conn.connection.info[GATE] = True
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            _release(conn.connection.info)
            raise

    def _release(info: Any) -> None:
        if info.pop(GATE, False):
            gate.release()

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        _release(record.info)  # the unit of work is over: committed, rolled back or failed

    @event.listens_for(engine, "invalidate")
    def _on_invalidate(_dbapi_conn: Any, record: Any, _exc: Any) -> None:
        _release(record.info)


#: what a JSON column that does not parse reads back as (SQLite stores JSON as text that
#: anyone can edit); the investigation view reports it as a corrupted state, not a traceback
CORRUPTED_JSON = "__ghost_corrupted_json__"


def tolerant_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return {CORRUPTED_JSON: f"malformed JSON ({exc.msg} at character {exc.pos})"}


def parse_url(url: str) -> Any:
    """The parsed URL, or one line saying what is wrong with GHOST_DATABASE_URL."""
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(normalise_url(url))
    except (ArgumentError, ValueError):
        raise DatabaseUrlInvalid(
            f"GHOST_DATABASE_URL is not a database URL: {safe_url(url)!r}.",
            f"Use a URL with a scheme, e.g. {URL_EXAMPLES}.") from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_BACKENDS:
        raise DatabaseUrlInvalid(
            f"GHOST_DATABASE_URL names a {backend} database ({safe_url(url)}); Ghost runs on "
            "PostgreSQL or SQLite only.", f"Use e.g. {URL_EXAMPLES}.")
    return parsed


def sqlite_file(url: str) -> Path | None:
    """The file a ``sqlite:///`` URL names (None for another database or ``:memory:``)."""
    parsed = parse_url(normalise_url(url))
    if parsed.get_backend_name() != "sqlite" or not parsed.database or \
            parsed.database == ":memory:" or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database).expanduser()


def make_engine(url: str, password: Callable[[], str] | None = None, *,
                create: bool = True) -> Engine:
    """An engine for ``url``. A SQLite file gets its directory created, unless ``create`` is
    False (a command that only reads): then a missing file is :class:`DatabaseMissing`, and
    nothing is created on disk.

    ``password``: called for each new PostgreSQL connection, its result is the password (an
    Entra ID token on Azure, which expires: a token fetched once would stop new connections
    an hour later). The URL's own password is used otherwise."""
    url = normalise_url(url)
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = sqlite_file(url)
        if path is not None and not create and not path.is_file():
            raise DatabaseMissing(str(path))
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30},
                               json_deserializer=tolerant_json)
        _sqlite_setup(engine)
        return engine
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "postgresql":
        connect_args["connect_timeout"] = 5
        if "application_name" not in parsed.query:
            connect_args["application_name"] = "ghost"
    try:
        engine = create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    except ImportError as exc:  # e.g. postgresql+asyncpg:// without that driver installed
        raise DatabaseUrlInvalid(
            f"GHOST_DATABASE_URL asks for the database driver {parsed.drivername!r}, which is "
            f"not installed ({exc.name or exc}).",
            "Use postgresql://… (Ghost's psycopg driver) or sqlite:///….") from None
    if password is not None:
        @event.listens_for(engine, "do_connect")
        def _password(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
            cparams["password"] = password()
    return engine


class Database:
    """An engine, its session factory, and the checks a command runs before using them."""

    def __init__(self, url: str, *, auto_migrate: bool = False,
                 password: Callable[[], str] | None = None, create: bool = True) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(self.url, password, create=create)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.reads = sessionmaker(self.engine.execution_options(**{READ_ONLY: True}),
                                  expire_on_commit=False)
        self.auto_migrate = auto_migrate
        self._checked = False

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def session(self) -> Session:
        return self.sessions()

    def reading(self) -> Session:
        """A session for reads only: on SQLite it does not take the write lock (a write in
        it may fail with "database is locked" — use ``session`` to write)."""
        return self.reads()

    def ensure_ready(self) -> None:
        """Fail with a one-line error when the database is unreachable or not migrated.

        With ``auto_migrate`` (the default SQLite file) a fresh database is created and
        migrated here instead, on first use, without a separate step.
        """
        if self._checked:
            return
        from storage import migrate

        try:
            current = migrate.current_revision(self.engine)
        except OperationalError as exc:
            raise DatabaseUnreachable(
                f"Cannot reach the database at {safe_url(self.url)}: {_first_line(exc)}.",
                "Check GHOST_DATABASE_URL and that the server is running.",
            ) from None
        head = migrate.head_revision()
        if current is not None and current not in migrate.known_revisions():
            raise too_new(safe_url(self.url), current, head)
        if current != head:
            if self.auto_migrate:
                migrate.upgrade(self.engine)
            else:
                found = "empty (never migrated)" if current is None else f"at revision {current}"
                raise DatabaseNotMigrated(
                    f"The database at {safe_url(self.url)} is {found}; this Ghost needs "
                    f"revision {head}.",
                    "Run `ghost db upgrade` (with the same GHOST_DATABASE_URL) and try again.",
                )
        self._checked = True

    def dispose(self) -> None:
        self.engine.dispose()


#: SQLite errors that pass once the other writer is done (its one write lock)
_SQLITE_TRANSIENT = ("database is locked", "database table is locked", "disk i/o error")


def is_transient(exc: BaseException) -> bool:
    """True for a database error that retrying the same unit of work fixes: the server
    dropped or refused the connection (restart, ``pg_terminate_backend``, failover), or
    SQLite's write lock outlasted the busy timeout. False for a real error (a bug, a schema
    that is not migrated), which must not be retried forever."""
    if isinstance(exc, DatabaseUnreachable):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError):
        return False
    module = type(exc.orig).__module__ if exc.orig is not None else ""
    if module.startswith("sqlite3"):
        return any(text in str(exc.orig).lower() for text in _SQLITE_TRANSIENT)
    return True  # psycopg's OperationalError: the connection, the server, a timeout


def transient_cause(exc: BaseException) -> BaseException | None:
    """The database error behind ``exc`` that a retry fixes (a dropped connection), if any;
    callers may wrap it (the engine, a listener), so the causes are followed a few levels."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        if is_transient(seen):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
