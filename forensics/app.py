"""Application-layer hints read from the first bytes of TCP payloads: TLS alerts, HTTP status.

Only segments whose first byte could start a TLS alert record (0x15) or an HTTP response
("H") reach this module, so it costs nothing on bulk data.
"""

from __future__ import annotations

import ipaddress
from typing import Any

MAX_EXAMPLES = 25

TLS_ALERTS = {
    0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 22: "record_overflow",
    40: "handshake_failure", 42: "bad_certificate", 43: "unsupported_certificate",
    44: "certificate_revoked", 45: "certificate_expired", 46: "certificate_unknown",
    47: "illegal_parameter", 48: "unknown_ca", 49: "access_denied", 50: "decode_error",
    51: "decrypt_error", 70: "protocol_version", 71: "insufficient_security",
    80: "internal_error", 86: "inappropriate_fallback", 90: "user_canceled",
    109: "missing_extension", 110: "unsupported_extension", 112: "unrecognized_name",
    116: "certificate_required", 120: "no_application_protocol",
}


def _ip(raw: bytes) -> str:
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return raw.hex()


class AppStats:
    """TLS alert records and HTTP response status codes."""

    def __init__(self) -> None:
        self.tls_alerts: dict[str, int] = {}
        self.tls_alert_examples: list[dict[str, Any]] = []
        self.http_status: dict[str, int] = {}
        self.http_error_examples: list[dict[str, Any]] = []

    def tcp_payload(self, buf: bytes, p: int, end: int, frame: int, addrs: bytes, sport: int,
                    dport: int, first: int) -> None:
        """Look at a payload whose first byte is 0x15 (TLS alert) or 'H' (HTTP/1.x)."""
        half = len(addrs) // 2
        if first == 0x15:
            if p + 5 > end or buf[p + 1] != 3 or buf[p + 2] > 4:
                return
            length = (buf[p + 3] << 8) | buf[p + 4]
            if length == 2 and p + 7 <= end:
                level = "fatal" if buf[p + 5] == 2 else "warning"
                name = f"{level}:{TLS_ALERTS.get(buf[p + 6], str(buf[p + 6]))}"
            elif 2 < length < 64:
                name = "encrypted_alert"
            else:
                return
            self.tls_alerts[name] = self.tls_alerts.get(name, 0) + 1
            if len(self.tls_alert_examples) < MAX_EXAMPLES:
                self.tls_alert_examples.append({
                    "frame": frame, "alert": name, "from": f"{_ip(addrs[:half])}:{sport}",
                    "to": f"{_ip(addrs[half:])}:{dport}",
                })
            return
        if end - p >= 12 and buf[p : p + 7] == b"HTTP/1." and buf[p + 8] == 0x20:
            code = buf[p + 9 : p + 12]
            if not code.isdigit():
                return
            status = code.decode()
            self.http_status[status] = self.http_status.get(status, 0) + 1
            if status[0] in "45" and len(self.http_error_examples) < MAX_EXAMPLES:
                self.http_error_examples.append({
                    "frame": frame, "status": int(status), "server": f"{_ip(addrs[:half])}:{sport}",
                    "client": f"{_ip(addrs[half:])}:{dport}",
                })

    def summary(self) -> dict[str, Any]:
        """The semantic-JSON sections for TLS and HTTP."""
        return {
            "tls_alerts": {
                "counts": dict(sorted(self.tls_alerts.items())),
                "examples": self.tls_alert_examples,
            },
            "http": {
                "status_codes": dict(sorted(self.http_status.items())),
                "error_examples": self.http_error_examples,
            },
        }
