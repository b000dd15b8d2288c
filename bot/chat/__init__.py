"""The chat-neutral layer shared by Slack and (later) Teams: what is posted, what a decision
is, who may make it, and how an investigation is driven from a chat thread. No chat SDK here.

What a message says, by module: ``status`` (the status message, the ``status``/``list``
replies, ``shown_status``), ``approval_cards`` (approval-card wording and decision outcomes),
``command_lines`` (one line per command, what shell errors mean), ``captures`` (capture task
lines), ``prompt_wording`` (Continue/Done and turn-limit prompts), ``endings`` (the RCA summary
and failure notices), ``help_text``; ``records`` holds the Protocols they read.
"""
