"""Truncation keeps the head, says what was cut, and keeps JSON parseable."""

from __future__ import annotations

import json

from core.safety.truncate import truncate


def test_small_output_is_untouched() -> None:
    result = truncate("a\nb\n")
    assert result.text == "a\nb\n" and not result.truncation_applied
    assert result.original_lines == 2 and result.original_bytes == 4


def test_text_keeps_head_within_limits_and_advises_query() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    result = truncate(text, max_lines=200, max_tokens=4000)
    assert result.truncation_applied and result.format == "text"
    lines = result.text.splitlines()
    assert lines[0] == "line 0" and len(lines) <= 200
    assert "--query" in result.text and "1000 lines" in result.text
    assert result.original_lines == 1000 and len(result.text) <= 16000


def test_token_budget_applies_to_long_lines() -> None:
    text = ("x" * 500 + "\n") * 100
    result = truncate(text, max_lines=200, max_tokens=1000)
    assert result.truncation_applied and len(result.text) <= 4000


def test_single_huge_line_is_cut() -> None:
    result = truncate("y" * 100_000, max_tokens=100)
    assert result.truncation_applied and len(result.text) <= 400 + 600


def test_json_array_stays_parseable() -> None:
    items = [{"name": f"nsg-{i}", "id": f"/subscriptions/x/nsg-{i}", "rules": i}
             for i in range(500)]
    result = truncate(json.dumps(items, indent=2))
    doc = json.loads(result.text)
    assert result.truncation_applied and result.format == "json_array"
    assert doc["items"] == items[: len(doc["items"])] and 0 < len(doc["items"]) < 500
    assert doc["ghost_truncated"]["total_items"] == 500
    assert "--query" in doc["ghost_truncated"]["advice"]
    assert len(result.text.splitlines()) <= 200 and len(result.text) <= 16000
    assert result.kept_items == len(doc["items"]) and result.total_items == 500


def test_json_object_keeps_keys_that_fit() -> None:
    obj = {f"key{i}": "v" * 200 for i in range(300)}
    result = truncate(json.dumps(obj))
    doc = json.loads(result.text)
    assert result.format == "json_object" and "key0" in doc
    assert doc["ghost_truncated"]["omitted_keys"]


def test_json_with_one_giant_element_falls_back_to_text() -> None:
    result = truncate(json.dumps([{"blob": "z" * 100_000}]))
    assert result.truncation_applied and result.format == "json_text"
    assert "truncated" in result.text


def test_invalid_json_is_treated_as_text() -> None:
    result = truncate("[" + "1," * 50_000)
    assert result.truncation_applied and result.format == "json_text"
