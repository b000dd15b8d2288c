"""A small fake of Azure Resource Manager for the network SDK: VMs, watchers, packet captures.

It speaks ARM's long-running-operation protocol (201/202 with Azure-AsyncOperation or Location,
operation polling, Retry-After), answers 404 for deleted resources (ResourceGroupNotFound for a
group that holds nothing), and injects failures:
NetworkWatcherNotEnabled, a provisioning that ends Failed, 429 throttling, and dropped
connections (the network gone). When a capture stops, it writes the capture's pcap to the
storage path (Azurite) through ``on_stopped``.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

TOKEN = "fake-arm-token"
SUB = "00000000-0000-0000-0000-000000000001"
WATCHER_RG = "NetworkWatcherRG"


@dataclass
class ArmState:
    vms: dict[str, dict[str, Any]] = field(default_factory=dict)
    extensions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    watchers: dict[str, str] = field(default_factory=dict)  # location -> name
    captures: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    running_polls: int = 1
    create_error: tuple[int, str, str] | None = None
    provisioning_fails: bool = False
    throttle_next: int = 0
    drop_next: int = 0  # hang up without an answer: the network is gone
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    on_stopped: Callable[[str], None] = lambda path: None
    #: where "Azure" really writes a capture, given the storagePath asked for (None: as asked)
    write_to: Callable[[str], str] | None = None
    #: ARM's answer to a DELETE of a capture that does not exist: 404, or 204 No Content
    delete_missing_status: int = 404
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_vm(self, name: str, rg: str = "prod-rg", location: str = "westus2",
               extension: bool = True) -> str:
        rid = (f"/subscriptions/{SUB}/resourceGroups/{rg}/providers/"
               f"Microsoft.Compute/virtualMachines/{name}")
        self.vms[rid.lower()] = {"id": rid, "name": name, "location": location,
                                 "type": "Microsoft.Compute/virtualMachines"}
        self.extensions[rid.lower()] = [{
            "name": "AzureNetworkWatcherExtension",
            "properties": {"publisher": "Microsoft.Azure.NetworkWatcher",
                           "type": "NetworkWatcherAgentLinux",
                           "provisioningState": "Succeeded"}}] if extension else []
        return rid


_op_ids = itertools.count(1)


class _Handler(BaseHTTPRequestHandler):
    state: ArmState
    base: str

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-ms-request-id", "fake")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.state.requests.append((self.command, urlsplit(self.path).path, status))

    def _error(self, status: int, code: str, message: str) -> None:
        self._send(status, {"error": {"code": code, "message": message}})

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        s = self.state
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._error(401, "AuthenticationFailed", "no or wrong bearer token")
        with s.lock:
            if s.drop_next > 0:
                s.drop_next -= 1
                self.close_connection = True
                self.state.requests.append((self.command, urlsplit(self.path).path, 0))
                return None
            if s.throttle_next > 0:
                s.throttle_next -= 1
                return self._send(429, {"error": {"code": "TooManyRequests",
                                                  "message": "throttled"}},
                                  {"Retry-After": "0"})
        path = urlsplit(self.path).path
        lower = path.lower()
        if lower.startswith("/operations/"):
            return self._operation(path.rsplit("/", 1)[-1])
        if method == "GET" and lower == f"/subscriptions/{SUB}/providers/microsoft.network/" \
                "networkwatchers":
            return self._send(200, {"value": [
                {"id": f"/subscriptions/{SUB}/resourceGroups/{WATCHER_RG}/providers/"
                       f"Microsoft.Network/networkWatchers/{n}", "name": n, "location": loc}
                for loc, n in s.watchers.items()]})
        if m := re.match(r"(.*/virtualmachines/[^/]+)/extensions$", lower):
            if m.group(1) not in s.vms:
                return self._error(404, "ResourceNotFound", "vm not found")
            return self._send(200, {"value": s.extensions[m.group(1)]})
        if ("/virtualmachines/" in lower or "/managedclusters/" in lower) and \
                not self._group_exists(lower):
            group = lower.split("/resourcegroups/", 1)[1].split("/", 1)[0]
            return self._error(404, "ResourceGroupNotFound",
                               f"Resource group '{group}' could not be found.")
        if "/virtualmachines/" in lower:
            vm = s.vms.get(lower)
            return self._send(200, vm) if vm else self._error(
                404, "ResourceNotFound", f"The Resource '{path.rsplit('/', 1)[-1]}' was not "
                "found.")
        if "/managedclusters/" in lower:
            cluster = s.clusters.get(lower)
            return self._send(200, cluster) if cluster else self._error(
                404, "ResourceNotFound", "cluster not found")
        if m := re.match(r".*/networkwatchers/([^/]+)/packetcaptures(?:/([^/]+))?(?:/(\w+))?$",
                         path, re.IGNORECASE):
            return self._capture(method, m.group(1), m.group(2), m.group(3), body)
        return self._error(404, "NotFound", f"fake ARM has no route for {method} {path}")

    def _group_exists(self, lower_path: str) -> bool:
        """ARM answers ResourceGroupNotFound before looking for the resource itself."""
        group = "/resourcegroups/" + lower_path.split("/resourcegroups/", 1)[1].split("/", 1)[0]
        return any(group + "/" in rid for rid in [*self.state.vms, *map(str.lower,
                                                                         self.state.clusters)])

    # ---- packet captures
    def _capture(self, method: str, watcher: str, name: str | None, action: str | None,
                 body: Any) -> None:
        s = self.state
        if name is None:
            return self._send(200, {"value": [c["resource"] for c in s.captures.values()
                                              if c["watcher"] == watcher]})
        capture = s.captures.get(name)
        if method == "DELETE" and capture is None and s.delete_missing_status == 204:
            return self._send(204)
        if method == "PUT":
            if s.create_error:
                status, code, message = s.create_error
                return self._error(status, code, message)
            props = body["properties"]
            if s.write_to is not None:
                location = dict(props["storageLocation"])
                location["storagePath"] = s.write_to(location["storagePath"])
                props = {**props, "storageLocation": location}
            resource = {"id": f"{self.path.split('?')[0]}", "name": name,
                        "properties": {**props, "provisioningState": "Updating"}}
            s.captures[name] = {"watcher": watcher, "resource": resource, "polls": 0}
            op = self._new_op("create", name)
            return self._send(201, resource, {"Azure-AsyncOperation": f"{self.base}/operations/"
                                                                     f"{op}",
                                              "Retry-After": "0"})
        if capture is None:
            return self._error(404, "NotFound", f"Packet capture {name} not found.")
        if method == "GET":
            return self._send(200, capture["resource"])
        if method == "DELETE":
            op = self._new_op("delete", name)
            return self._send(202, None, {"Location": f"{self.base}/operations/{op}",
                                          "Retry-After": "0"})
        if method == "POST" and action and action.lower() == "querystatus":
            op = self._new_op("status", name)
            return self._send(202, None, {"Location": f"{self.base}/operations/{op}",
                                          "Retry-After": "0"})
        return self._error(405, "MethodNotAllowed", "unsupported")

    def _new_op(self, kind: str, name: str) -> str:
        op = str(next(_op_ids))
        self.state.operations[op] = {"kind": kind, "name": name, "seen": 0}
        return op

    def _operation(self, op_id: str) -> None:
        s = self.state
        op = s.operations.get(op_id)
        if op is None:
            return self._error(404, "NotFound", "no such operation")
        op["seen"] += 1
        first = op["seen"] == 1
        name = op["name"]
        if op["kind"] == "create":
            if first:
                return self._send(200, {"status": "InProgress"}, {"Retry-After": "0"})
            resource = s.captures[name]["resource"]
            if s.provisioning_fails:
                resource["properties"]["provisioningState"] = "Failed"
                return self._send(200, {"status": "Failed", "error": {
                    "code": "InternalServerError", "message": "capture agent failed to start"}})
            resource["properties"]["provisioningState"] = "Succeeded"
            return self._send(200, {"status": "Succeeded"})
        location = {"Location": f"{self.base}/operations/{op_id}", "Retry-After": "0"}
        if first:
            return self._send(202, None, location)
        if op["kind"] == "delete":
            s.captures.pop(name, None)
            return self._send(204)
        capture = s.captures.get(name)
        if capture is None:
            return self._error(404, "NotFound", f"Packet capture {name} not found.")
        capture["polls"] += 1
        running = capture["polls"] <= s.running_polls
        if not running and not capture.get("stopped"):
            capture["stopped"] = True
            s.on_stopped(capture["resource"]["properties"]["storageLocation"]["storagePath"])
        return self._send(200, {
            "name": name, "id": capture["resource"]["id"],
            "captureStartTime": "2025-01-15T14:32:45Z",
            "packetCaptureStatus": "Running" if running else "Stopped",
            "stopReason": "" if running else "TimeExceeded", "packetCaptureError": []})


class FakeArm:
    """Runs the fake on 127.0.0.1 with a free port; ``state`` is shared with the tests."""

    def __init__(self) -> None:
        self.state = ArmState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        handler.base = self.url
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeArm:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
