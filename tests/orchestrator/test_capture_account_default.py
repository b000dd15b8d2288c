"""Which storage account a capture goes to (GHOST_CAPTURE_STORAGE_ACCOUNT, issue 27)."""

from __future__ import annotations

from typing import Any

import pytest

from core.orchestrator.validation import RequestError, capture_parameters

BASE = {"duration_seconds": 60, "resource_group": "prod-rg"}


def _where(params: dict[str, Any]) -> tuple[str, str | None]:
    return params["storage_account"], params.get("storage_resource_group")


def test_no_account_given_uses_the_configured_one_in_its_own_group() -> None:
    assert _where(capture_parameters(BASE, default_account="ghostcap1",
                                     default_resource_group="ghost-rg")) == \
        ("ghostcap1", "ghost-rg")


def test_the_configured_account_named_by_the_model_keeps_its_group() -> None:
    params = capture_parameters({**BASE, "storage_account": "ghostcap1"},
                                default_account="ghostcap1", default_resource_group="ghost-rg")
    assert _where(params) == ("ghostcap1", "ghost-rg")


@pytest.mark.parametrize(("given", "expected"), [
    ({"storage_account": "othersa"}, ("othersa", None)),            # the VM's group (records)
    ({"storage_account": "othersa", "storage_resource_group": "st-rg"}, ("othersa", "st-rg")),
])
def test_another_account_is_the_models_choice(given: dict[str, str],
                                              expected: tuple[str, str | None]) -> None:
    params = capture_parameters({**BASE, **given}, default_account="ghostcap1",
                                default_resource_group="ghost-rg")
    assert _where(params) == expected


def test_no_account_anywhere_is_refused_with_the_fix() -> None:
    with pytest.raises(RequestError) as caught:
        capture_parameters(BASE)
    assert caught.value.code == "missing_parameter"
    assert "GHOST_CAPTURE_STORAGE_ACCOUNT" in str(caught.value)
    assert "Nothing was started" in str(caught.value)
