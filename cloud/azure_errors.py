"""Azure SDK exceptions → :class:`CaptureBackendError` with Azure's own error code."""

from __future__ import annotations

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
)

from core.orchestrator.backend import NOT_FOUND, CaptureBackendError


def backend_error(exc: AzureError, doing: str) -> CaptureBackendError:
    """Keep Azure's code (NetworkWatcherNotEnabled, AuthorizationFailed…) and say what failed."""
    if isinstance(exc, ResourceNotFoundError):
        return CaptureBackendError(NOT_FOUND, f"{doing}: {_message(exc)}")
    # a plain ARM GET (send_request) reports 401 as HttpResponseError, not the typed error
    if isinstance(exc, ClientAuthenticationError) or getattr(exc, "status_code", None) == 401:
        return CaptureBackendError("AuthenticationFailed", (
            f"{doing}: Azure did not accept Ghost's credential, or none was found "
            f"({_message(exc).rstrip('. ')}). Sign in again (`az login`) or check the managed "
            "identity (AZURE_CLIENT_ID) and its role assignments."))
    if isinstance(exc, HttpResponseError):
        code = _code(exc)
        if exc.status_code == 404:
            code = NOT_FOUND
        elif exc.status_code == 429:
            code = "Throttled"
        return CaptureBackendError(code, f"{doing}: {_message(exc)}")
    return CaptureBackendError(type(exc).__name__, f"{doing}: {exc}")


def _code(exc: HttpResponseError) -> str:
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None) or getattr(exc, "error_code", None)
    if not code and exc.status_code is None:
        return "ProvisioningFailed"  # an LRO that ended Failed carries no HTTP status
    return str(code or f"HTTP{exc.status_code}")


def _message(exc: AzureError) -> str:
    error = getattr(exc, "error", None)
    message = getattr(error, "message", None) or getattr(exc, "message", None) or str(exc)
    return str(message).strip().splitlines()[0][:500]
