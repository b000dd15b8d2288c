import socket, subprocess, sys, time, threading
# run inside a fresh network namespace: unshare -n python3 gen.py
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
servers = []
def tcp_server(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(5)
    def loop():
        while True:
            try: c, _ = s.accept()
            except OSError: return
            def h(c=c):
                try:
                    while c.recv(4096): c.sendall(b"+OK\r\n")
                except OSError: pass
            threading.Thread(target=h, daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
for p in (6379, 21, 25, 110, 143, 80, 5060):
    tcp_server(p)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 161))
verbose = sys.argv[1:] == ["-v"]
cmd = ["tcpdump", "-i", "lo", "-n", "-l", "-c", "200", "--immediate-mode"] + (["-v"] if verbose else [])
td = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
time.sleep(1.0)
def send(port, payloads):
    c = socket.create_connection(("127.0.0.1", port))
    for p in payloads:
        c.sendall(p); time.sleep(0.05)
        try: c.recv(100)
        except OSError: pass
    c.close()
send(6379, [b"*2\r\n$4\r\nAUTH\r\n$11\r\nS3cretRedis\r\n", b"*3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$12\r\nAclPassw0rd1\r\n", b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", b"*2\r\n$4\r\nPING\r\n"])
send(21, [b"USER alice\r\n", b"PASS FtpS3cret!\r\n", b"LIST\r\n"])
send(25, [b"EHLO client\r\n", b"AUTH PLAIN AGFsaWNlAFNtdHBTM2NyZXQ=\r\n", b"AUTH LOGIN\r\n", b"YWxpY2U=\r\n", b"U210cFMzY3JldDI=\r\n", b"MAIL FROM:<a@b.c>\r\n"])
send(110, [b"USER alice\r\n", b"PASS PopS3cret\r\n"])
send(143, [b"a1 LOGIN alice ImapS3cret\r\n", b"a2 SELECT INBOX\r\n"])
send(80, [b"GET /health?x=1 HTTP/1.1\r\nHost: web\r\nAuthorization: Basic YWxpY2U6SHR0cFMzY3JldA==\r\nCookie: session=CookieS3cret123\r\nX-Api-Key: ApiKeyS3cret456\r\nUser-Agent: curl/8\r\n\r\n"])
send(5060, [b"REGISTER sip:x SIP/2.0\r\nAuthorization: Digest username=\"alice\", response=\"0123456789abcdef0123456789abcdef\"\r\n\r\n"])
# SNMPv2c get-request, community "SnmpS3cret"
comm = b"SnmpS3cret"
oid = bytes([0x06, 0x08, 0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x01, 0x00])
varbind = bytes([0x30, len(oid) + 2]) + oid + b"\x05\x00"
vbl = bytes([0x30, len(varbind)]) + varbind
pdu_body = b"\x02\x01\x01\x02\x01\x00\x02\x01\x00" + vbl
pdu = bytes([0xa0, len(pdu_body)]) + pdu_body
msg_body = b"\x02\x01\x01" + bytes([0x04, len(comm)]) + comm + pdu
msg = bytes([0x30, len(msg_body)]) + msg_body
cu = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); cu.sendto(msg, ("127.0.0.1", 161))
time.sleep(1.5)
td.terminate()
out, _ = td.communicate(timeout=5)
sys.stdout.write(out)
