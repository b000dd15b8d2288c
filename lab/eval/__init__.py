"""``ghost eval``'s pure parts: scoring a finished lab investigation, usage and cost, the
report and the comparison of two reports (docs/eval.md).

Nothing here imports ``bot``: the runner that plays a scenario through the real engine lives in
``bot/eval/``; this package only reads what a run left behind (the conclusion, the hypothesis
log, the model turns, the audit records, the task records) and the scenario's truth.
"""
