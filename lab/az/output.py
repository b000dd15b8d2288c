"""az's output layer: ``--query`` through jmespath, then json/yaml/table/tsv/none as knack renders.

The rules copied in behaviour (not code) from knack: JSON is indented by 2 with sorted keys; the
query runs with ordered dicts so table and tsv keep the query's column order; a table uses the
command's table transformer unless a query is active, otherwise it shows every scalar field
(sorted, with the first letter capitalised, skipping id/type/etag) in tabulate's "simple" style;
tsv prints one line per item with sorted keys for plain objects. az also adds ``resourceGroup``
to every object that has a resource ``id``.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jmespath
import yaml

from lab.az.errors import AzError

TableTransformer = Callable[[Any], Any]


@dataclass(frozen=True)
class Raw:
    """Output az prints as it is, whatever ``-o`` says (a blob downloaded to stdout)."""

    text: str
_RG_IN_ID = re.compile(r"/resourceGroups/([^/]+)", re.IGNORECASE)
_SKIP_KEYS = ("id", "type", "etag")


def add_resource_groups(obj: Any) -> Any:
    """az's post-processing: objects carrying an ARM ``id`` get ``resourceGroup`` from it."""
    if isinstance(obj, list):
        return [add_resource_groups(x) for x in obj]
    if isinstance(obj, dict):
        out = {k: add_resource_groups(v) for k, v in obj.items()}
        ident = out.get("id")
        if isinstance(ident, str) and "resourceGroup" not in out:
            match = _RG_IN_ID.search(ident)
            if match:
                out["resourceGroup"] = match.group(1)
        return out
    return obj


def apply_query(result: Any, query: str) -> Any:
    return jmespath.search(query, result, jmespath.Options(dict_cls=OrderedDict))


def render(result: Any, fmt: str, query: str | None = None,
           transformer: TableTransformer | None = None) -> str:
    """stdout for one result, as ``az … -o fmt [--query q]`` prints it."""
    if isinstance(result, Raw):
        return result.text
    if query is not None:
        result = apply_query(result, query)
    if result is None or fmt == "none":
        return ""
    if fmt in ("json", "jsonc"):
        return json.dumps(result, ensure_ascii=False, indent=2, sort_keys=True,
                          separators=(",", ": ")) + "\n"
    if fmt in ("yaml", "yamlc"):
        plain = json.loads(json.dumps(result))
        return str(yaml.safe_dump(plain, default_flow_style=False, allow_unicode=True))
    if fmt == "tsv":
        return "".join(_tsv_row(item) for item in (result if isinstance(result, list)
                                                   else [result]))
    return _table(result, transformer if query is None else None, query is not None)


# -- table ---------------------------------------------------------------------------------


def _table(result: Any, transformer: TableTransformer | None, query_active: bool) -> str:
    try:
        if transformer is not None:
            result = transformer(result)
        rows = result if isinstance(result, list) else [result]
        sort_keys = not query_active and transformer is None
        return simple_table([_auto_row(r, sort_keys) for r in rows])
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise AzError("Table output unavailable. Use the --query option to specify an "
                      "appropriate query. Use --debug for more info.") from exc


def _auto_row(item: Any, sort_keys: bool) -> OrderedDict[str, Any]:
    row: OrderedDict[str, Any] = OrderedDict()
    if isinstance(item, dict):
        keys = sorted(item) if sort_keys else list(item)
        for key in keys:
            value = item[key]
            if key in _SKIP_KEYS or value is None or isinstance(value, (list, dict, set)):
                continue
            row[key[:1].upper() + key[1:]] = value
    elif isinstance(item, list):
        for col, value in enumerate(item):
            row[f"Column{col + 1}"] = value
    else:
        row["Result"] = item
    return row


def _cell(value: Any) -> str:
    return "" if value is None else str(value).strip()


def simple_table(rows: list[OrderedDict[str, Any]]) -> str:
    """tabulate(rows, headers="keys", tablefmt="simple", disable_numparse=True) + newline."""
    if not rows:
        return "\n"
    headers: list[str] = []
    for row in rows:
        headers.extend(k for k in row if k not in headers)
    if not headers:
        raise AzError("Table output unavailable. Use the --query option to specify an "
                      "appropriate query. Use --debug for more info.")
    cells = [[_cell(row.get(h)) for h in headers] for row in rows]
    widths = [max([len(h) + 2, *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(headers), line(["-" * w for w in widths]), *(line(c) for c in cells)]
    return "\n".join(out) + "\n"


# -- tsv -----------------------------------------------------------------------------------


def _tsv_value(value: Any) -> str:
    if isinstance(value, list):
        return str(len(value))
    if isinstance(value, dict):
        return ""
    return value if isinstance(value, str) else str(value)


def _tsv_row(item: Any) -> str:
    if isinstance(item, OrderedDict):
        values: list[Any] = list(item.values())
    elif isinstance(item, dict):
        values = [v for _, v in sorted(item.items())]
    elif isinstance(item, list):
        values = item
    elif isinstance(item, bool):
        return str(item).lower() + "\n"
    else:
        return _tsv_value(item) + "\n"
    return "\t".join(_tsv_value(v) for v in values) + "\n"
