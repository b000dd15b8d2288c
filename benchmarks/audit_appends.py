"""Audit appends per second on SQLite and PostgreSQL, with 1 and 8 writer processes.

    .venv/bin/python benchmarks/audit_appends.py [--appends 400] [--pg-url URL]

Each writer appends to its own investigation and to a shared one, so both the per-investigation
lock and cross-investigation concurrency are exercised. PostgreSQL runs in a throw-away schema of
the server at --pg-url (default: the local test server), and is skipped if it does not answer.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text  # noqa: E402

from storage import migrate  # noqa: E402
from storage.db import make_engine  # noqa: E402
from storage.store import Store  # noqa: E402

ENTRY = {
    "kind": "command", "command": "dig +short redis.internal.example", "reasoning": "bench",
    "classification": "SAFE", "tier": 1, "rule": "T1.dig", "action": "auto_approved",
    "actor": "ghost", "status": "completed", "exit_code": 0, "output": "10.0.0.4\n" * 20,
    "stderr": "", "environment": "local", "duration_ms": 5,
    "output_metadata": {"truncation_applied": False},
}


def _writer(url: str, sids: list[str], n: int) -> None:
    store = Store.from_url(url)
    for i in range(n):
        store.append_audit(sids[i % 2], ENTRY)
    store.db.dispose()


def run(url: str, writers: int, appends: int) -> float:
    store = Store.from_url(url)
    shared = store.create_investigation(symptom="shared", model="m", audit_dir="a").session_id
    own = [store.create_investigation(symptom=f"w{i}", model="m", audit_dir="a").session_id
           for i in range(writers)]
    store.db.dispose()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(url, [own[i], shared], appends))
             for i in range(writers)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - start
    check = Store.from_url(url)
    assert all(check.verify_audit(sid).ok for sid in [shared, *own])
    check.db.dispose()
    return writers * appends / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=400, help="appends per writer")
    parser.add_argument("--pg-url", default="postgresql://root@127.0.0.1:5432/test")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        for writers in (1, 8):
            url = f"sqlite:///{Path(tmp) / f'bench{writers}.db'}"
            engine = make_engine(url)
            migrate.upgrade(engine)
            engine.dispose()
            rate = run(url, writers, args.appends)
            print(f"sqlite      writers={writers}  {rate:8.0f} appends/s (chains verified)")

    schema = f"ghost_bench_{uuid.uuid4().hex[:8]}"
    try:
        admin = make_engine(args.pg_url)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001 - benchmark reports and moves on
        print(f"postgresql  skipped: {str(exc).splitlines()[0]}")
        return
    try:
        url = f"{args.pg_url}?options={quote(f'-csearch_path={schema}')}"
        engine = make_engine(url)
        migrate.upgrade(engine)
        engine.dispose()
        for writers in (1, 8):
            rate = run(url, writers, args.appends)
            print(f"postgresql  writers={writers}  {rate:8.0f} appends/s (chains verified)")
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


if __name__ == "__main__":
    main()
