"""Which Gemini model Ghost uses unless told otherwise.

The spec's ``gemini-2.0-flash`` and the 2.5 line are shut down. ``gemini-3.8-flash`` is the
current stable (GA) Flash model of the Gemini API (released 2026-09-02, no shutdown date
announced). ``gemini-3.5-flash`` and ``gemini-3.7-flash`` were deprecated on 2026-10-08 and are
silently routed to newer models, so naming them would hide which model really answered. The
model stays a setting (``--model``, ``GHOST_MODEL``): this is only the default.
"""

from __future__ import annotations

DEFAULT_MODEL = "gemini-3.8-flash"
