"""curl: GET/HEAD against http(s) URLs only, nothing written, nothing read, nothing sent.

curl has ~250 options and accepts unambiguous prefixes of long ones (`--out` is `--output`), so
the rule is an exact allowlist; well-known dangerous options get their own rule id for a clear
message, and everything else is RISKY as unknown.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from core.safety.hosts import parse_ip_loose, word_hits_local
from core.safety.options import OptionSpec, any_value, int_range, is_host, num_range, one_of
from core.safety.options import parse_options as _parse
from core.safety.rules.base import Context, allowed, risky
from core.safety.verdict import Verdict

_W = ("T1.writes_file", "writes a local file")
_S = ("T1.sends_data", "uploads or sends a request body")
_F = ("T1.reads_file", "reads a local file")
_C = ("T1.curl_credentials", "sends credentials")
_P = ("T1.unknown_option", "routes the request through a proxy")
_L = ("T1.loopback_target", "talks to a local unix socket")
_N = ("T1.curl_next", "starts a second request whose options are not checked")

_DENIED: dict[str, tuple[str, str]] = {}
for _names, _why in (
    (("-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name", "--output-dir",
      "--create-dirs", "-c", "--cookie-jar", "--libcurl", "--trace", "--trace-ascii",
      "--stderr", "--etag-save", "--hsts", "--alt-svc", "--trace-config"), _W),
    (("-T", "--upload-file", "-d", "--data", "--data-raw", "--data-binary", "--data-ascii",
      "--data-urlencode", "-F", "--form", "--form-string", "--json", "-G", "--get", "--post301",
      "--post302", "--post303", "--mail-from", "--mail-rcpt", "-Q", "--quote", "--url-query"),
     _S),
    (("-K", "--config", "-b", "--cookie", "-E", "--cert", "--key", "--cacert", "--capath",
      "--netrc-file", "--netrc", "-n", "--netrc-optional", "--etag-compare", "--proxy-cacert",
      "--crlfile", "--variable", "--expand-url", "--expand-header"), _F),
    (("-u", "--user", "--oauth2-bearer", "--proxy-user", "-U", "--aws-sigv4", "--negotiate",
      "--ntlm", "--digest", "--basic", "--anyauth", "--delegation", "--login-options"), _C),
    (("-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5",
      "--socks5-hostname", "-p", "--proxytunnel"), _P),
    (("--unix-socket", "--abstract-unix-socket"), _L),
    (("-:", "--next"), _N),
):
    for _name in _names:
        _DENIED[_name] = _why

_HEADER_NAMES = frozenset({
    "host", "accept", "accept-encoding", "accept-language", "user-agent", "cache-control",
    "pragma", "connection", "range", "if-none-match", "if-modified-since", "origin", "referer",
    "x-request-id", "x-correlation-id", "x-forwarded-for", "x-forwarded-proto",
    "x-forwarded-host", "content-type",
})
_RESOLVE_RE = re.compile(r"^[A-Za-z0-9_.*-]{1,253}:[0-9]{1,5}:[0-9A-Fa-f.:\[\],]{1,200}$")
_CONNECT_TO_RE = re.compile(r"^[A-Za-z0-9_.-]{0,253}:[0-9]{0,5}:[A-Za-z0-9_.\[\]:-]{0,253}$")
_V6_URL_RE = re.compile(r"^https?://(\[[0-9A-Fa-f:.]+\])", re.IGNORECASE)

CURL = OptionSpec(
    program="curl",
    flags=frozenset({"-s", "-S", "-v", "-I", "-i", "-L", "-k", "-f", "--fail-with-body", "-4",
                     "-6", "--compressed", "--http1.0", "--http1.1", "--http2", "-q", "-N",
                     "--tcp-nodelay", "--tlsv1", "--tlsv1.2", "--tlsv1.3", "--no-keepalive",
                     "--no-progress-meter", "-g", "--ssl-reqd", "--show-headers"}),
    valued={"-m": num_range(0.1, 120), "--connect-timeout": num_range(0.1, 60),
            "--max-redirs": int_range(0, 10), "--retry": int_range(0, 5),
            "--retry-delay": int_range(0, 30), "--retry-max-time": int_range(0, 120),
            "-w": any_value, "-H": any_value, "-X": any_value, "-A": any_value,
            "-e": any_value, "--resolve": any_value, "--connect-to": any_value,
            "-o": any_value, "-D": any_value, "--url": any_value,
            "--tls-max": one_of("1.0", "1.1", "1.2", "1.3", "default"),
            "-r": lambda v: bool(re.match(r"^[0-9]{0,12}-[0-9]{0,12}$", v))},
    aliases={"--silent": "-s", "--show-error": "-S", "--verbose": "-v", "--head": "-I",
             "--include": "-i", "--location": "-L", "--insecure": "-k", "--fail": "-f",
             "--ipv4": "-4", "--ipv6": "-6", "--disable": "-q", "--no-buffer": "-N",
             "--globoff": "-g", "--max-time": "-m", "--write-out": "-w", "--header": "-H",
             "--request": "-X", "--user-agent": "-A", "--referer": "-e", "--output": "-o",
             "--dump-header": "-D", "--range": "-r"},
    denied=_DENIED,
)


def _check_url(url: str, argv: tuple[str, ...]) -> Verdict | None:
    if not re.match(r"^https?://", url, re.IGNORECASE):
        return risky("T1.curl_scheme", argv, f"curl URL {url[:80]!r} must start with http:// or "
                     "https://; other schemes (file, gopher, dict, ftp, ...) and scheme "
                     "guessing are not allowed without approval.")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return risky("T1.bad_target", argv, f"curl URL {url[:80]!r} does not parse.")
    if "@" in parts.netloc:
        return risky("T1.curl_credentials", argv, "curl URL carries user:password@; "
                     "credentials in URLs end up in logs.")
    check = url
    bracket = _V6_URL_RE.match(url)
    if bracket:
        check = url[: bracket.start(1)] + url[bracket.end(1):]
    if any(c in check for c in "[]{}"):
        return risky("T1.curl_url_glob", argv, "curl expands [] and {} in URLs into many "
                     "requests (and -o #1 file names); percent-encode them or ask for approval.")
    if word_hits_local(parts.netloc) or word_hits_local(host):
        return risky("T1.loopback_target", argv, "curl to loopback, link-local or unspecified "
                     "addresses reaches services on the bot's own host (e.g. the Arc metadata "
                     "service on localhost:40342); an engineer must approve it.")
    if not host or not (is_host(host) or parse_ip_loose(host)):
        return risky("T1.bad_target", argv, f"curl URL host {host[:60]!r} is not a plain host "
                     "name or IP address.")
    return None


def _check_values(name: str, value: str, argv: tuple[str, ...]) -> Verdict | None:
    if name in ("-o", "-D") and value not in ("/dev/null", "-"):
        return risky("T1.writes_file", argv, f"curl {name} {value[:60]!r} writes a local file; "
                     "only /dev/null or - (stdout) are allowed without approval.")
    if name == "-w" and (value.startswith("@") or "%output" in value.lower()):
        return risky("T1.writes_file", argv, "curl -w @file reads a file and %output{} writes "
                     "one.")
    if name in ("-A", "-e") and value.startswith("@"):
        return risky("T1.reads_file", argv, f"curl {name} @...: values starting with @ may be "
                     "read from a file.")
    if name == "-X" and value not in ("GET", "HEAD"):
        return risky("T1.curl_method", argv, f"curl -X {value[:20]!r}: only GET and HEAD are "
                     "read-only.")
    if name == "-H":
        header = value.split(":", 1)[0].split(";", 1)[0].strip().lower()
        if value.startswith("@") or header not in _HEADER_NAMES:
            return risky("T1.curl_header", argv, f"curl header {header[:40]!r} is not on the "
                         "harmless-header allowlist (auth, cookies, keys and @file need "
                         "approval).")
    if name == "--resolve" and (not _RESOLVE_RE.match(value) or word_hits_local(value)):
        return risky("T1.loopback_target", argv, f"curl --resolve {value[:60]!r} must map a "
                     "host to a non-local IP address.")
    if name == "--connect-to" and (not _CONNECT_TO_RE.match(value) or word_hits_local(value)):
        return risky("T1.loopback_target", argv, f"curl --connect-to {value[:60]!r} must point "
                     "at a non-local host.")
    return None


def classify_curl(argv: tuple[str, ...], ctx: Context) -> Verdict:
    parsed = _parse(CURL, list(argv[1:]), argv)
    if isinstance(parsed, Verdict):
        return parsed
    urls = list(parsed.positionals) + parsed.values("--url")
    if not urls:
        return risky("T1.bad_target", argv, "curl without a URL.")
    for name, value in parsed.options:
        if value is not None:
            bad = _check_values(name, value, argv)
            if bad:
                return bad
    for url in urls:
        bad = _check_url(url, argv)
        if bad:
            return bad
    return allowed(argv, "HTTP GET/HEAD")
