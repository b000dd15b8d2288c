"""The pure parts of Ghost's safety gate: classify, redact, truncate, execute.

`SafeExecShell` (the gate glue with approvals and audit) is built on top of these; everything here
is deterministic and imports only the standard library.
"""

from core.safety.classify import classify
from core.safety.paths import DataPathError, open_data_file, resolve_under
from core.safety.redact import RedactionResult, redact, redact_with_counts
from core.safety.truncate import TruncationResult, truncate
from core.safety.verdict import CLASSIFIER_VERSION, RULES, Classification, Rule, Verdict

__all__ = [
    "CLASSIFIER_VERSION",
    "RULES",
    "Classification",
    "DataPathError",
    "RedactionResult",
    "Rule",
    "TruncationResult",
    "Verdict",
    "classify",
    "open_data_file",
    "redact",
    "redact_with_counts",
    "resolve_under",
    "truncate",
]
