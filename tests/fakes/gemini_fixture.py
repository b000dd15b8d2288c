"""The ``fake_gemini`` fixture: a :class:`FakeGemini` that google-genai reaches by itself.

Registered from ``tests/conftest.py`` (``pytest_plugins``). It sets ``GOOGLE_GEMINI_BASE_URL``
and ``GEMINI_API_KEY=test-key`` for the test (subprocesses inherit them), removes the variables
that would send the client elsewhere, and fails the test if the server saw anything the script
did not foresee.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fakes.gemini_server import FakeGemini

TEST_API_KEY = "test-key"


@pytest.fixture
def fake_gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    server = FakeGemini(api_key=TEST_API_KEY)
    server.start()
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
    monkeypatch.setenv("GEMINI_API_KEY", TEST_API_KEY)
    for var in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(var, raising=False)
    no_proxy = ",".join(v for v in (os.environ.get("NO_PROXY"), "127.0.0.1", "localhost") if v)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    try:
        yield server
    finally:
        server.stop()
    if server.failures:
        pytest.fail("FakeGemini saw requests the script did not foresee:\n  "
                    + "\n  ".join(server.failures), pytrace=False)
