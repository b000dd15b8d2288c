"""Errors the lab's `az` gives, worded and exit-coded as the Azure CLI words them.

az prints every error on stderr as ``ERROR: <message>`` followed by recommendation lines; usage
errors exit 2, a missing resource (HTTP 404) exits 3, every other failure exits 1. Errors from
Azure itself read ``(Code) message`` then ``Code: …`` and ``Message: …`` lines.
"""

from __future__ import annotations

ARM_NOT_FOUND_HINT = "For more details please go to https://aka.ms/ARMResourceNotFoundFix"
QUERY_REFERENCE = ("To learn more about --query, please visit: "
                   "'https://learn.microsoft.com/cli/azure/query-azure-cli'")


class AzError(Exception):
    """One az failure: the message after ``ERROR: `` and the exit code az would return."""

    def __init__(self, message: str, exit_code: int = 1, hints: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.hints = hints

    def stderr(self) -> str:
        lines = [f"ERROR: {self.message}", *self.hints]
        return "\n".join(lines) + "\n"


def usage_error(message: str, *hints: str) -> AzError:
    """An argument/usage error (argparse's), exit 2."""
    return AzError(message, 2, tuple(hints))


def cloud_error(code: str, message: str, exit_code: int = 1) -> AzError:
    """An error returned by Azure Resource Manager, in az's three-line shape."""
    return AzError(f"({code}) {message}\nCode: {code}\nMessage: {message}", exit_code)


def resource_not_found(resource_type: str, name: str, resource_group: str) -> AzError:
    """ARM's 404 for a top-level resource (exit 3, as az's ResourceNotFoundError)."""
    message = (f"The Resource '{resource_type}/{name}' under resource group '{resource_group}' "
               f"was not found. {ARM_NOT_FOUND_HINT}")
    return cloud_error("ResourceNotFound", message, 3)


def child_not_found(resource_id: str) -> AzError:
    """ARM's 404 for a child resource (subnet, rule, route, peering, link, record set)."""
    return cloud_error("NotFound", f"Resource {resource_id} not found.", 3)


def resource_group_not_found(resource_group: str) -> AzError:
    return cloud_error("ResourceGroupNotFound",
                       f"Resource group '{resource_group}' could not be found.", 3)
