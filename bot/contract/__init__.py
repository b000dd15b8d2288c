"""The machine-readable contract of the `ghost` command line (docs/agent-contract.md).

Scripts and other agents read Ghost through it: a versioned envelope on every ``--json``
output, stable error codes with one exit-code table, ``--fields`` / ``--limit`` / ``--verbose``.
Kept free of heavy imports: ``bot.cli`` imports the flag helpers before any command runs.
"""
