"""The Slack front end: a thin bolt app over the chat-neutral layer in ``bot.chat``."""
