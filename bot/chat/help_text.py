"""The command reference Ghost answers `help` with, and its Teams form (Teams has no slash
commands: `/ghost resume SID` there is `@Ghost resume SID`)."""

from __future__ import annotations

HELP = """Ghost investigates Azure network problems in this channel.
`/ghost investigate <symptom>` — start, e.g. `/ghost investigate web-01 cannot reach redis:6379`
`/ghost status [SID]` — where an investigation stands (the newest one without SID)
`/ghost list` — recent investigations
`/ghost cancel SID` — stop one (pending approvals are closed; nothing else runs)
`/ghost resume SID` — pick up a stopped, failed or cancelled one
In an investigation's thread, use the buttons, or mention @ghost with an instruction.
Risky commands need a second engineer's approval; forbidden ones never run."""


def teams_words(text: str) -> str:
    """Slash commands do not exist in Teams: `/ghost resume SID` there is `@Ghost resume SID`.
    The shared wording names the Slack form; the Teams adapter passes its text through this."""
    return text.replace("/ghost ", "@Ghost ").replace("/ghost`", "@Ghost`").replace(
        "mention @ghost", "mention @Ghost")
