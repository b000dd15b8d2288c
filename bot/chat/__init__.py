"""The chat-neutral layer shared by Slack and (later) Teams: what is posted, what a decision
is, who may make it, and how an investigation is driven from a chat thread. No chat SDK here."""
