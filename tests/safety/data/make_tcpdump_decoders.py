"""Make real tcpdump output: run as `unshare -n python make_tcpdump_decoders.py [-v|-A|-X]`.

Inside the fresh network namespace it brings `lo` up, starts servers on the loopback ports of
RESP (6379), FTP, SMTP, POP3, IMAP, HTTP and SIP that answer `+OK`, starts `tcpdump -i lo -n -l
-c 200 --immediate-mode [-v]`, sends each protocol's login with a known fake credential (and
an SNMPv2c get-request with community "SnmpS3cret"), and prints what tcpdump printed.
`tcpdump_decoders_default.txt` and `tcpdump_decoders_verbose.txt` beside this file were made
this way with tcpdump 4.99.3 / libpcap 1.10.3; `tcpdump_payload_A.txt` and
`tcpdump_payload_X.txt` (issue 28) with -A and -X, which print the payload bytes themselves: a
RESP password alone on the line after its length, a bearer token split across hex-dump lines.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

TCP_PORTS = (6379, 21, 25, 110, 143, 80, 5060)
SESSIONS: tuple[tuple[int, tuple[bytes, ...]], ...] = (
    (6379, (b"*2\r\n$4\r\nAUTH\r\n$11\r\nS3cretRedis\r\n",
            b"*3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$12\r\nAclPassw0rd1\r\n",
            b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", b"*2\r\n$4\r\nPING\r\n")),
    (21, (b"USER alice\r\n", b"PASS FtpS3cret!\r\n", b"LIST\r\n")),
    (25, (b"EHLO client\r\n", b"AUTH PLAIN AGFsaWNlAFNtdHBTM2NyZXQ=\r\n", b"AUTH LOGIN\r\n",
          b"YWxpY2U=\r\n", b"U210cFMzY3JldDI=\r\n", b"MAIL FROM:<a@b.c>\r\n")),
    (110, (b"USER alice\r\n", b"PASS PopS3cret\r\n")),
    (143, (b"a1 LOGIN alice ImapS3cret\r\n", b"a2 SELECT INBOX\r\n")),
    (80, (b"GET /health?x=1 HTTP/1.1\r\nHost: web\r\n"
          b"Authorization: Basic YWxpY2U6SHR0cFMzY3JldA==\r\n"
          b"Cookie: session=CookieS3cret123\r\nX-Api-Key: ApiKeyS3cret456\r\n"
          b"User-Agent: curl/8\r\n\r\n",)),
    (5060, (b"REGISTER sip:x SIP/2.0\r\nAuthorization: Digest username=\"alice\", "
            b"response=\"0123456789abcdef0123456789abcdef\"\r\n\r\n",)),
    (6379, (b"*2\r\n$4\r\nAUTH\r\n$17\r\nRespLongS3cret_17\r\n",)),
    (80, (b"GET /api HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer "
          b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnaG9zdC10ZXN0In0.QmVhcmVyUzNjcmV0U2lnbmF0dXJl\r\n"
          b"\r\n",)),
)


def _serve(port: int) -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(5)

    def answer(conn: socket.socket) -> None:
        try:
            while conn.recv(4096):
                conn.sendall(b"+OK\r\n")
        except OSError:
            pass

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def _send(port: int, payloads: tuple[bytes, ...]) -> None:
    conn = socket.create_connection(("127.0.0.1", port))
    for payload in payloads:
        conn.sendall(payload)
        time.sleep(0.05)
        try:
            conn.recv(100)
        except OSError:
            pass
    conn.close()


def _snmp_get(community: bytes) -> bytes:
    oid = bytes([0x06, 0x08, 0x2B, 0x06, 0x01, 0x02, 0x01, 0x01, 0x01, 0x00])
    varbind = bytes([0x30, len(oid) + 2]) + oid + b"\x05\x00"
    varbinds = bytes([0x30, len(varbind)]) + varbind
    pdu_body = b"\x02\x01\x01\x02\x01\x00\x02\x01\x00" + varbinds
    pdu = bytes([0xA0, len(pdu_body)]) + pdu_body
    body = b"\x02\x01\x01" + bytes([0x04, len(community)]) + community + pdu
    return bytes([0x30, len(body)]) + body


def main() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for port in TCP_PORTS:
        _serve(port)
    snmp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    snmp.bind(("127.0.0.1", 161))
    mode = [a for a in sys.argv[1:] if a in ("-v", "-A", "-X")]
    command = ["tcpdump", "-i", "lo", "-n", "-l", "-c", "200", "--immediate-mode"]
    tcpdump = subprocess.Popen(command + mode, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    time.sleep(1.0)
    for port, payloads in SESSIONS:
        _send(port, payloads)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.sendto(_snmp_get(b"SnmpS3cret"), ("127.0.0.1", 161))
    time.sleep(1.5)
    tcpdump.terminate()
    out, _ = tcpdump.communicate(timeout=5)
    sys.stdout.write(out)


if __name__ == "__main__":
    main()
