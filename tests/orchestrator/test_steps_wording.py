"""What the approver reads on a capture's approval cards (core/orchestrator/steps.py)."""

from __future__ import annotations

import pytest

from core.orchestrator.steps import _context


@pytest.mark.parametrize(("given", "shown"), [
    ("Capture on api-vm-01 to see how it answers.", "Capture on api-vm-01 to see how it answers"),
    ("  Why it is needed.  ", "Why it is needed"),
    ("Ends without a stop", "Ends without a stop"),
    ("", "no context given"),
    ("...", "no context given"),
])
def test_the_models_reason_is_shown_without_a_doubled_full_stop(given: str, shown: str) -> None:
    assert _context({"investigation_context": given}) == shown
