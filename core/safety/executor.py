"""Run one argv with shell=False, a scrubbed environment, a hard timeout and bounded output.

The only module in `core` that may import subprocess (spec layer 1). It runs exactly what it is
given: classification and approval happen before, in the gate. The child gets its own process
group so that a timeout kills everything it started, stdin is /dev/null, and each output stream is
read incrementally and capped, so a runaway command cannot exhaust memory. A text filter that
follows a pipe gets the previous stage's (bounded) output as stdin instead.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Final

BASE_ENV_NAMES: Final = ("PATH", "LANG", "HOME", "TZ", "AZURE_CONFIG_DIR")
#: Names that are never passed to a child, even if allowlisted: credentials for Ghost itself.
_NEVER_PASS_RE: Final = re.compile(
    r"^(GHOST_|SLACK_|GOOGLE_|GEMINI_|AWS_|TEAMS_|MICROSOFT_APP|BOT_|MSI_|IDENTITY_|OPENAI_)"
    r"|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|CONNECTION_STRING|_KEY$|^AZURE_CLIENT_"
    r"(SECRET|CERTIFICATE)|^AZURE_(FEDERATED|USERNAME|PASSWORD)|^LD_|^PYTHON|^BASH_ENV$|^ENV$",
    re.IGNORECASE)
#: The managed identity, as App Service and Container Apps hand it to a process
#: (IDENTITY_ENDPOINT + IDENTITY_HEADER; MSI_ENDPOINT + MSI_SECRET on older platforms) and the
#: user-assigned identity's client id. ``az`` needs them to get a token: they go to a child whose
#: program is exactly ``az`` (found on the scrubbed PATH) and to no other program, since any
#: other could hand the endpoint and its header to whoever reads its output.
AZ_IDENTITY_NAMES: Final = ("IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET",
                            "AZURE_CLIENT_ID")
_READ_CHUNK: Final = 65536
_KILL_GRACE_S: Final = 2.0


class ExecError(Exception):
    """The command could not be started."""


class ProgramNotFoundError(ExecError):
    """argv[0] is not on the PATH given to the child (maps to exit code 127 in the spec)."""


class ProgramNotExecutableError(ExecError):
    """argv[0] exists but cannot be executed (permissions, not a binary)."""


@dataclass(frozen=True)
class ExecResult:
    #: process exit status; negative N = killed by signal N; None if it timed out
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    #: bytes beyond max_output_bytes, summed over stdout and stderr
    output_bytes_dropped: int
    stdout_bytes_dropped: int
    stderr_bytes_dropped: int
    duration_s: float
    started_at: datetime
    finished_at: datetime


#: The last step of the gate, as a port: (argv, timeout_s, max_output_bytes) → the result.
#: Production runs the program (:func:`run_argv`); the lab answers from its scenario.
#: May raise :class:`ExecError` (the program does not exist).
Runner = Callable[[Sequence[str], float, int], "ExecResult"]


def scrubbed_env(env_allowlist: Iterable[str] = (),
                 environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: PATH, LANG, LC_*, HOME, TZ, AZURE_CONFIG_DIR + the allowlist.

    Raises ValueError if the allowlist names something that looks like a credential: that is a
    configuration bug, better loud than silently leaking or silently dropped.
    """
    source = os.environ if environ is None else environ
    extra = list(env_allowlist)
    for name in extra:
        if _NEVER_PASS_RE.search(name):
            raise ValueError(f"env allowlist entry {name!r} looks like a credential; Ghost never "
                             "passes credentials to commands it runs")
    wanted = set(BASE_ENV_NAMES) | set(extra)
    env = {k: v for k, v in source.items()
           if (k in wanted or k.startswith("LC_")) and not (
               k not in extra and _NEVER_PASS_RE.search(k))}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def child_env(argv: Sequence[str], env_allowlist: Iterable[str] = (),
              environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment ``argv`` runs with: :func:`scrubbed_env`, plus the managed-identity
    variables (:data:`AZ_IDENTITY_NAMES`) when the program is ``az`` by name. A program given by
    path (``./az``, ``/tmp/az``) or any other name gets none of them."""
    source = os.environ if environ is None else environ
    env = scrubbed_env(env_allowlist, source)
    if argv and argv[0] == "az":
        env.update({k: source[k] for k in AZ_IDENTITY_NAMES if source.get(k)})
    return env


class _Capture:
    """Keep the first `limit` bytes of a stream and count the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _leader_exited(pid: int) -> bool:
    """True once the child has exited, without reaping it (its pgid stays reserved)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def run_argv(argv: Sequence[str], *, timeout_s: float, max_output_bytes: int,
             env_allowlist: Iterable[str] = (), environ: Mapping[str, str] | None = None,
             cwd: str | os.PathLike[str] | None = None,
             stdin_data: bytes | None = None) -> ExecResult:
    """Run argv (no shell) and return its bounded, decoded output.

    `max_output_bytes` caps each of stdout and stderr. On timeout the whole process group gets
    SIGKILL and `timed_out` is True. `stdin_data` (bounded by the caller) is what the program
    reads on stdin, from a temporary file (a text filter after a pipe); otherwise /dev/null.
    Raises ProgramNotFoundError / ProgramNotExecutableError.
    """
    args = list(argv)
    if not args or not all(isinstance(a, str) for a in args):
        raise ValueError("argv must be a non-empty sequence of str")
    if any("\x00" in a for a in args):
        raise ValueError("argv must not contain NUL characters")
    if timeout_s <= 0 or max_output_bytes < 0:
        raise ValueError("timeout_s must be > 0 and max_output_bytes >= 0")
    env = child_env(args, env_allowlist, environ)
    started_at = datetime.now(UTC)
    start = time.monotonic()
    stdin = subprocess.DEVNULL if stdin_data is None else _stdin_file(stdin_data)
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv from the gate, shell=False
            args, shell=False, stdin=stdin, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, cwd=cwd, close_fds=True, start_new_session=True)
    except FileNotFoundError as exc:
        raise ProgramNotFoundError(f"{args[0]!r}: program not found on PATH "
                                   f"{env.get('PATH', '')!r}") from exc
    except PermissionError as exc:
        raise ProgramNotExecutableError(f"{args[0]!r}: not executable ({exc.strerror})") from exc
    finally:
        if not isinstance(stdin, int):
            stdin.close()  # the child has its own descriptor
    captures = {"stdout": _Capture(max_output_bytes), "stderr": _Capture(max_output_bytes)}
    timed_out = _pump(proc, captures, start + timeout_s)
    if not timed_out:
        deadline = start + timeout_s
        while not _leader_exited(proc.pid):
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(0.005)
    # Kill anything left in the group (stragglers, or everything on timeout) before reaping.
    _kill_group(proc.pid)
    returncode = proc.wait(timeout=_KILL_GRACE_S + timeout_s)
    finished_at = datetime.now(UTC)
    out, err = captures["stdout"], captures["stderr"]
    return ExecResult(
        exit_code=None if timed_out else returncode, stdout=out.text(), stderr=err.text(),
        timed_out=timed_out, output_bytes_dropped=out.dropped + err.dropped,
        stdout_bytes_dropped=out.dropped, stderr_bytes_dropped=err.dropped,
        duration_s=time.monotonic() - start, started_at=started_at, finished_at=finished_at)


def _stdin_file(data: bytes) -> IO[bytes]:
    """A temporary file holding `data`, positioned at its start, for a child's stdin."""
    source = tempfile.TemporaryFile()
    source.write(data)
    source.seek(0)
    return source


def _pump(proc: subprocess.Popen[bytes], captures: dict[str, _Capture], deadline: float) -> bool:
    """Read both pipes until EOF; return True if the deadline passed first."""
    selector = selectors.DefaultSelector()
    streams: dict[str, IO[bytes] | None] = {"stdout": proc.stdout, "stderr": proc.stderr}
    for name, stream in streams.items():
        if stream is not None:
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, selectors.EVENT_READ, name)
    try:
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            for key, _ in selector.select(timeout=min(remaining, 0.5)):
                try:
                    chunk = os.read(key.fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                captures[str(key.data)].feed(chunk)
        return False
    finally:
        selector.close()
        for stream in streams.values():
            if stream is not None:
                stream.close()


#: Short aliases used by the shell.
ProgramNotFound = ProgramNotFoundError
ProgramNotExecutable = ProgramNotExecutableError
