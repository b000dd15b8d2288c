"""`ghost serve` (the Slack and/or Teams front end, plus a worker unless told not to) and
`ghost worker`.

Slack: Socket Mode when SLACK_APP_TOKEN is set (one process, no public URL); HTTP on $PORT
otherwise. Teams: the Bot Framework endpoint on $PORT and $GHOST_TEAMS_PORT when
MicrosoftAppId is set. One aiohttp server answers all of it (``bot/edge.py``). Both
commands run the lease-guarded periodic jobs, so any number of replicas can run.

SIGTERM drains within 10 s (``bot.worker.Drain``): no new requests or claims, the acks in flight
answered, the pacers stop sleeping, the steps in flight finished or handed back, leases released.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import TYPE_CHECKING, Any

from core.errors import GhostError

if TYPE_CHECKING:  # `ghost --help` builds the parsers below without loading the settings
    from bot.settings import Settings

log = logging.getLogger("ghost")


class MissingSetting(GhostError):
    exit_code = 2


SERVE_HELP = "run Ghost in Slack and/or Teams (plus a worker unless --no-worker)"
SERVE_DESCRIPTION = (
    "Answer Slack and/or Microsoft Teams, whichever is configured. Slack: Socket Mode when "
    "SLACK_APP_TOKEN is set (no public URL), else HTTP on $PORT at /slack/events (needs "
    "SLACK_SIGNING_SECRET). Teams: the Bot Framework endpoint /api/messages on $PORT and on "
    "$GHOST_TEAMS_PORT (default 3978) when MicrosoftAppId is set. Runs a worker too unless "
    "--no-worker or GHOST_SERVE_RUNS_WORKER=false. SIGTERM drains within 10 s: no new "
    "requests or claims, the steps in flight finished or handed back, every lease released "
    "(docs/reliability.md).")
WORKER_HELP = "run investigations from the database (any number of processes)"
WORKER_DESCRIPTION = (
    "Claim runnable investigations with a lease and advance them, posting into Slack and/or "
    "Teams (or, with neither configured, running `ghost investigate --detach` ones). Also "
    "runs the lease-guarded periodic jobs (approval expiry, recovery). SIGTERM drains within "
    "10 s like `ghost serve`.")


def add_parsers(groups: Any) -> None:
    """`ghost serve` and `ghost worker`, every argument with its help (bot/cli.py)."""
    serve_parser = groups.add_parser("serve", help=SERVE_HELP, description=SERVE_DESCRIPTION)
    serve_parser.add_argument(
        "--no-worker", action="store_true",
        help="only answer Slack/Teams; separate `ghost worker` processes run investigations")
    serve_parser.add_argument(
        "--host", default="0.0.0.0",
        help="address the Slack HTTP endpoint, the Teams endpoint and the /healthz and "
             "/readyz probes listen on (default: 0.0.0.0)")
    serve_parser.add_argument(
        "--port", type=int,
        help="port of the HTTP server: Slack's endpoint, Teams' /api/messages and the probes "
             "(default: $PORT or 3000; Teams is also on $GHOST_TEAMS_PORT, default 3978)")
    worker_parser = groups.add_parser("worker", help=WORKER_HELP,
                                      description=WORKER_DESCRIPTION)
    worker_parser.add_argument("--once", action="store_true",
                               help="advance everything runnable, then exit (no periodic jobs)")


def _setup_logging() -> None:
    from bot.logging_setup import configure

    configure()  # GHOST_LOG_FORMAT=json: JSON lines with the session id (bot/logging_setup.py)


def _require_gemini(settings: Settings) -> None:
    if not settings.gemini_api_key and not settings.lab:  # GHOST_LAB: the replay can answer
        raise MissingSetting("GEMINI_API_KEY is not set: `ghost serve` runs investigations with "
                             "Gemini.", "Set it in the environment or .env (see .env.example), "
                             "or set GHOST_LAB=SCENARIO to try Ghost in chat against the lab.")


def _drain() -> Any:
    from bot.worker import Drain

    drain = Drain()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_a: drain.begin())
    return drain


def _slack_waits(drain: Any, settings: Settings) -> dict[str, Any]:
    """build_slack's pacer and 429 sleep, both cut short by the drain (nothing sleeps through
    a backlog on SIGTERM: a queued post goes out, or a slash command's root stays queued)."""
    from bot.slack.client import Pacer

    return {"pacer": Pacer(settings.slack_post_interval_s, sleep=drain.sleep),
            "sleep": drain.sleep}


def _shut_down(started: list[Any], store: Any, drain: Any) -> None:
    """After the front ends stopped: join the worker until the deadline, hand back what it
    still holds, release the job leases (and, past the budget, exit regardless)."""
    scheduler, owner = started[0], started[-1]
    worker = started[2] if len(started) == 4 else None
    log.info("Shutting down: no new work; the steps in flight stop at their next save or are "
             "handed back within %.0f s.", drain.left())

    def release() -> None:
        if worker is not None:
            worker.hand_back()
        store.release_job_leases(owner)

    drain.arm(release)
    scheduler.shutdown(wait=False)
    if worker is not None:
        started[1].join(drain.left(reserve_s=1.0))
    release()
    if worker is not None and started[1].is_alive():  # a step reached no save in time
        drain.exit_now(lambda: None, "a step in flight did not reach a save within the budget;"
                       " it was handed back")


def _background(services: Any, settings: Settings, stop: threading.Event, *,
                run_worker: bool) -> list[Any]:
    """The periodic jobs and, optionally, a worker pool (not daemon threads: joined on
    shutdown by ``_shut_down``): [scheduler, (thread, worker,) owner]."""
    from bot.scheduler import PeriodicJobs, start_scheduler
    from bot.worker import Worker, worker_id
    from core.session_state import utc_now

    runtime = services.runtime
    runtime.background()  # roots right after the ack; posts sent off the workers' threads
    # Teams: card edits off the workers' threads too (Slack has no such port method; a worker
    # without chat has no port at all)
    edits = getattr(services.port, "background", None) if services.port is not None else None
    if edits is not None:
        edits()
    owner = worker_id("serve" if run_worker else "web")
    jobs = PeriodicJobs(store=services.store, shell_for=runtime.shell_for,
                        close_card=runtime.close_card, owner=owner,
                        audit_dir=settings.audit_dir, clock=utc_now,
                        reconcile_chat=runtime.reconcile_chat,
                        deliver_chat=runtime.deliver_due)  # owed posts, every 5 s
    started: list[Any] = [start_scheduler(jobs)]
    if run_worker:
        worker = Worker(store=services.store, engine=runtime.engine,
                        shell_for=runtime.shell_for, after=runtime.after_advance,
                        failed=runtime.failed, owner=owner,
                        lease_seconds=settings.lease_seconds, before=runtime.before_advance)
        runtime.kick = worker.wake
        thread = threading.Thread(target=worker.run_forever, args=(stop,),
                                  kwargs={"threads": settings.worker_threads},
                                  name="ghost-worker")
        thread.start()
        started += [thread, worker]
    return [*started, owner]


def serve(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store
    from bot.slack.app import build_slack

    _setup_logging()
    from bot.settings import load_settings

    settings = load_settings()
    socket_mode = bool(settings.slack_app_token)
    run_worker = settings.serve_runs_worker and not args.no_worker
    # The chat engine (clicks, resumptions) is built even without a worker.
    _require_gemini(settings)
    store = build_store(settings)
    drain = _drain()
    stop = drain.stop
    slack = build_slack(settings, store, socket_mode=socket_mode,
                        **_slack_waits(drain, settings)) \
        if settings.slack_bot_token or not settings.teams_configured else None
    teams = _teams(settings, store, slack)
    services = teams or slack  # the worker's runtime posts to every configured platform
    if teams and slack:  # its reconcile job finds Slack's inbox entries (mentions, clicks)
        teams.runtime.appliers.update(slack.runtime.appliers)
    started = _background(services, settings, stop, run_worker=run_worker)
    from bot.health import Readiness

    ready = Readiness(store.db)
    port = args.port or settings.port
    http_slack = slack if slack is not None and not socket_mode else None
    try:
        edge = _edge(args.host, port, ready, settings, slack=http_slack, teams=teams)
        if slack is not None and socket_mode:
            from bot.slack.socket_mode import connect_socket_mode

            handler = connect_socket_mode(slack.app, settings.slack_app_token or "")
            log.info("Ghost is connected to Slack (Socket Mode)%s.",
                     " with a worker" if run_worker else "")
            stop.wait()
            slack.runtime.in_flight.wait_idle(drain.left(reserve_s=7.5))  # acks go out first
            closing = threading.Thread(target=handler.close, daemon=True)
            closing.start()
            closing.join(drain.left(reserve_s=6.0))
        else:
            if http_slack is not None:
                log.info("Ghost listens on http://%s:%d/slack/events%s.", args.host, port,
                         " with a worker" if run_worker else "")
            stop.wait()
        if edge is not None:
            edge.shutdown()  # no new requests; those in flight are answered
        if http_slack is not None:
            http_slack.runtime.in_flight.wait_idle(drain.left(reserve_s=7.5))
    finally:
        drain.begin()
        _shut_down(started, store, drain)
        if teams:
            from bot.teams.app import settle

            settle(teams)
    return 0


def _edge(host: str, port: int, ready: Any, settings: Settings, *, slack: Any,
          teams: Any) -> Any:
    """The one HTTP server (``bot/edge.py``): Slack's HTTP mode, Teams' /api/messages (also on
    GHOST_TEAMS_PORT when it differs from PORT), /healthz and /readyz. Probes alone (Socket
    Mode) are optional: a busy port is a warning then, not a failure."""
    from bot.slack.http import make_server

    extra = (settings.teams_port,) if teams is not None else ()
    try:
        edge = make_server(slack.app if slack is not None else None, host, port, ready,
                           signing_secret=settings.slack_signing_secret, teams=teams,
                           extra_ports=extra)
    except OSError as exc:
        if slack is not None or teams is not None:
            raise
        log.warning("No /healthz or /readyz: cannot listen on %s:%d (%s); set PORT to a free "
                    "port.", host, port, exc.strerror or exc)
        return None
    threading.Thread(target=edge.serve_forever, daemon=True, name="ghost-edge").start()
    if teams is not None:
        for each in dict.fromkeys((port, *extra)):
            log.info("Ghost listens for Teams on http://%s:%d/api/messages.", host, each)
    log.info("Probes on http://%s:%d/healthz and /readyz.", host, port)
    return edge


def _teams(settings: Settings, store: Any, slack: Any) -> Any:
    """The Teams services when MicrosoftAppId is set; Slack's port joins their runtime."""
    if not settings.teams_configured:
        return None
    from bot.teams.app import build_teams

    return build_teams(settings, store, other_ports={"slack": slack.port} if slack else None)


def worker(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store
    from bot.slack.app import build_slack

    _setup_logging()
    from bot.settings import load_settings

    settings = load_settings()
    _require_gemini(settings)
    # the worker posts into Slack and/or Teams but receives nothing: no signing secret needed
    store = build_store(settings)
    drain = _drain()
    if not settings.slack_bot_token and not settings.teams_configured:
        # no chat configured: it runs what `ghost investigate --detach` queued (agent contract)
        from bot.contract.detach import cli_services

        services: Any = cli_services(settings, store)
        log.info("No Slack or Teams configured: this worker runs the investigations opened "
                 "with `ghost investigate --detach` (docs/agent-contract.md).")
    else:
        slack = build_slack(settings, store, socket_mode=True,
                            **_slack_waits(drain, settings)) \
            if settings.slack_bot_token or not settings.teams_configured else None
        teams = _teams(settings, store, slack)
        services = teams or slack
        if teams and slack:
            teams.runtime.appliers.update(slack.runtime.appliers)
    if args.once:
        from bot.worker import Worker

        runtime = services.runtime
        done = Worker(store=services.store, engine=runtime.engine,
                      shell_for=runtime.shell_for, after=runtime.after_advance,
                      failed=runtime.failed, before=runtime.before_advance,
                      lease_seconds=settings.lease_seconds).run_until_idle()
        print(f"ghost worker: advanced {done} investigation(s).")
        return 0
    started = _background(services, settings, drain.stop, run_worker=True)
    log.info("Ghost worker started (%d threads).", settings.worker_threads)
    drain.stop.wait()
    _shut_down(started, store, drain)
    return 0
