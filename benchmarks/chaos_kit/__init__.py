"""Parts of the reliability drill (benchmarks/chaos.py, issue #23): fakes with fault switches,
the process manager, the Slack user that drives investigations, and the accounting."""
