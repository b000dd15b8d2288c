"""bot: the front ends (terminal, Slack, Teams, the JSON contract) and the wiring.

``__version__`` is Ghost's one version number (pyproject.toml reads it from here), so
``ghost --version`` answers without loading the packaging metadata.
"""

__version__ = "0.1.0"
