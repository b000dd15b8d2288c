"""Command implementations for `ghost`; each is imported only when it runs."""
