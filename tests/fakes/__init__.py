"""Local stand-ins for the services Ghost talks to, reached by the real client libraries."""
