"""`az storage account list|show`, `az storage blob list|download` (the flow logs' blobs),
`az network watcher flow-log list|show` and `az sql server list|show` (format 2).

A flow log writes to the container ``insights-logs-flowlogflowevent`` of its storage account;
the blobs are computed from the timeline when first asked for (lab/flowlogs.py) and kept for the
runner's life. ``blob download --file F`` writes the blob to F (its directory must exist) and
prints the blob's properties, as az does; without ``--file`` the blob goes to stdout. Both work
with or without ``--auth-mode login`` *(lab)*.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.az import resources_v2 as res2
from lab.az.args import RG, RG_OPTIONAL, Command, Parsed, opt
from lab.az.catalog import Catalog, guid, same
from lab.az.errors import AzError, cloud_error, resource_not_found
from lab.az.network import N
from lab.az.output import Raw
from lab.flowlogs import CONTAINER, Blob, FlowLogWriter
from lab.model_v2 import FlowLog, StorageAccount
from lab.timeline import Timeline

Json = dict[str, Any]
ACCOUNT = opt("--account-name", dest="account", required=True)
CONTAINER_OPT = opt("--container-name", "-c", dest="container", required=True)
AUTH = opt("--auth-mode", dest="auth_mode", choices=("login", "key"))
LOCATION = opt("--location", "-l", dest="location", required=True)


# -- storage accounts ----------------------------------------------------------------------


def account_list(cat: Catalog, a: Parsed) -> Any:
    group = a.text("resource_group")
    wanted = cat.rg(group) if group is not None else None
    return [x for x in res2.storage_accounts(cat)
            if wanted is None or same(str(x["resourceGroup"]), wanted)]


def account_show(cat: Catalog, a: Parsed) -> Any:
    name, group = a.require("name"), a.text("resource_group")
    for x in res2.storage_accounts(cat):
        if same(str(x["name"]), name) and (group is None or same(str(x["resourceGroup"]),
                                                                 group)):
            return x
    if group is not None:
        raise resource_not_found("Microsoft.Storage/storageAccounts", name, cat.rg(group))
    raise AzError(f"The storage account '{name}' was not found.", 3)


# -- blobs ---------------------------------------------------------------------------------


def timeline(cat: Catalog) -> Timeline:
    found = cat.cache.get("timeline")
    if not isinstance(found, Timeline):
        found = cat.cache["timeline"] = Timeline(cat.timeline)
    return found


def _writer(cat: Catalog) -> FlowLogWriter:
    found = cat.cache.get("flow_log_writer")
    if not isinstance(found, FlowLogWriter):
        found = cat.cache["flow_log_writer"] = FlowLogWriter(timeline(cat))
    return found


def _account(cat: Catalog, name: str) -> StorageAccount:
    account = next((x for x in cat.scenario.storage_accounts if same(x.name, name)), None)
    if account is None:
        raise AzError(f"Storage account '{name}' not found.")
    return account


def _blobs(cat: Catalog, a: Parsed) -> list[Blob]:
    account = _account(cat, a.require("account"))
    if a.require("container") != CONTAINER or not any(
            fl.storage_account == account.name for fl in cat.scenario.flow_logs):
        raise AzError("The specified container does not exist.\nRequestId:"
                      f"{guid('request', a.require('container'))}\n"
                      "Time:" + cat.scenario.now.strftime("%Y-%m-%dT%H:%M:%S.0000000Z")
                      + "\nErrorCode:ContainerNotFound")
    key = f"blobs/{account.name}"
    blobs = cat.cache.get(key)
    if blobs is None:
        writer = _writer(cat)
        blobs = cat.cache[key] = [b for fl in cat.timeline.flow_logs
                                  if fl.storage_account == account.name
                                  for b in writer.blobs(fl)]
    return list(blobs)


def _stamp(blob: Blob) -> str:
    return blob.last_modified.isoformat()


def blob_json(blob: Blob, container: str) -> Json:
    return {
        "container": container, "content": "", "deleted": None, "encryptedMetadata": None,
        "encryptionKeySha256": None, "encryptionScope": None, "hasLegalHold": None,
        "hasVersionsOnly": None, "immutabilityPolicy": {"expiryTime": None, "policyMode": None},
        "isAppendBlobSealed": None, "isCurrentVersion": None, "lastAccessedOn": None,
        "metadata": {}, "name": blob.name, "objectReplicationDestinationPolicy": None,
        "objectReplicationSourceProperties": [],
        "properties": {
            "appendBlobCommittedBlockCount": None, "blobTier": "Hot",
            "blobTierChangeTime": None, "blobTierInferred": True, "blobType": "BlockBlob",
            "contentLength": len(blob.content), "contentRange": None,
            "contentSettings": {"cacheControl": None, "contentDisposition": None,
                                "contentEncoding": None, "contentLanguage": None,
                                "contentMd5": None, "contentType": "application/json"},
            "copy": {"completionTime": None, "destinationSnapshot": None, "id": None,
                     "incrementalCopy": None, "progress": None, "source": None,
                     "status": None, "statusDescription": None},
            "creationTime": _stamp(blob), "deletedTime": None,
            "etag": "0x8DC" + guid("etag", blob.name).replace("-", "")[:13].upper(),
            "lastModified": _stamp(blob),
            "lease": {"duration": None, "state": "available", "status": "unlocked"},
            "pageBlobSequenceNumber": None, "pageRanges": None, "rehydrationStatus": None,
            "remainingRetentionDays": None, "serverEncrypted": True},
        "rehydratePriority": None, "requestServerEncrypted": None, "snapshot": None,
        "tagCount": None, "tags": None, "versionId": None,
    }


def blob_list(cat: Catalog, a: Parsed) -> Any:
    prefix = a.text("prefix") or ""
    blobs = [b for b in _blobs(cat, a) if b.name.startswith(prefix)]
    limit = a.text("num_results")
    if limit is not None and limit != "*":
        if not limit.isdigit():
            raise AzError(f"argument --num-results: invalid int value: '{limit}'", 2)
        blobs = blobs[:int(limit)]
    return [blob_json(b, a.require("container")) for b in blobs]


def blob_download(cat: Catalog, a: Parsed) -> Any:
    name = a.require("name")
    blob = next((b for b in _blobs(cat, a) if b.name == name), None)
    if blob is None:
        raise AzError("The specified blob does not exist.\nRequestId:"
                      f"{guid('request', name)}\nTime:"
                      + cat.scenario.now.strftime("%Y-%m-%dT%H:%M:%S.0000000Z")
                      + "\nErrorCode:BlobNotFound")
    target = a.text("file")
    if target is None:
        return Raw(blob.content.decode())
    path = Path(target).expanduser()
    try:
        path.write_bytes(blob.content)
    except OSError as exc:
        raise AzError(f"[Errno {exc.errno}] {exc.strerror}: '{target}'") from None
    body = blob_json(blob, a.require("container"))
    body["content"] = None
    return body


# -- flow logs -----------------------------------------------------------------------------


def _location(cat: Catalog, a: Parsed) -> str:
    location = a.require("location").replace(" ", "").lower()
    if location != cat.scenario.location:
        raise AzError(f"network watcher is not enabled for region '{location}'.")
    return location


def _flow_log_json(cat: Catalog, fl: FlowLog) -> Json:
    account = next(x for x in cat.scenario.storage_accounts if x.name == fl.storage_account)
    return res2.flow_log_json(cat, fl, account)


def flow_log_list(cat: Catalog, a: Parsed) -> Any:
    _location(cat, a)
    return [_flow_log_json(cat, fl) for fl in cat.scenario.flow_logs]


def flow_log_show(cat: Catalog, a: Parsed) -> Any:
    _location(cat, a)
    name = a.require("name")
    for fl in cat.scenario.flow_logs:
        if same(fl.name, name):
            return _flow_log_json(cat, fl)
    raise cloud_error("NotFound", f"Resource {cat.scenario.network_watcher_id()}/flowLogs/"
                      f"{name} not found.", 3)


# -- SQL servers (private endpoint targets) ------------------------------------------------


def _sql_targets(cat: Catalog) -> list[Any]:
    seen: dict[str, Any] = {}
    for pe in cat.scenario.private_endpoints:
        if pe.target.kind == "sqlServer":
            seen.setdefault(pe.target.name.lower(), pe)
    return list(seen.values())


def sql_list(cat: Catalog, a: Parsed) -> Any:
    group = a.text("resource_group")
    wanted = cat.rg(group) if group is not None else None
    return [res2.sql_server_json(cat, pe) for pe in _sql_targets(cat)
            if wanted is None or same(pe.target.resource_group, wanted)]


def sql_show(cat: Catalog, a: Parsed) -> Any:
    group, name = cat.rg(a.require("resource_group")), a.require("name")
    for pe in _sql_targets(cat):
        if same(pe.target.resource_group, group) and same(pe.target.name, name):
            return res2.sql_server_json(cat, pe)
    raise resource_not_found("Microsoft.Sql/servers", name, group)


BLOB_COMMON = (ACCOUNT, CONTAINER_OPT, AUTH, opt("--account-key", dest="account_key"),
               opt("--connection-string", dest="connection_string"),
               opt("--sas-token", dest="sas_token"))

COMMANDS: list[Command] = [
    Command(("storage", "account", "list"), (RG_OPTIONAL,), account_list),
    Command(("storage", "account", "show"), (RG_OPTIONAL, N), account_show, None,
            (("resource_group", "resource_group"), ("name", "name"))),
    Command(("storage", "blob", "list"), (*BLOB_COMMON, opt("--prefix", dest="prefix"),
                                          opt("--num-results", dest="num_results"),
                                          opt("--include", dest="include"),
                                          opt("--delimiter", dest="delimiter"),
                                          opt("--show-next-marker", dest="next_marker",
                                              flag=True)), blob_list),
    Command(("storage", "blob", "download"), (*BLOB_COMMON, N, opt("--file", "-f", dest="file"),
                                              opt("--overwrite", dest="overwrite", flag=True),
                                              opt("--no-progress", dest="no_progress",
                                                  flag=True),
                                              opt("--max-connections", dest="max_conn")),
            blob_download),
    Command(("network", "watcher", "flow-log", "list"), (LOCATION,), flow_log_list),
    Command(("network", "watcher", "flow-log", "show"), (LOCATION, N), flow_log_show),
    Command(("sql", "server", "list"), (RG_OPTIONAL,), sql_list),
    Command(("sql", "server", "show"), (RG, N), sql_show, None,
            (("resource_group", "resource_group"), ("name", "name"))),
]
