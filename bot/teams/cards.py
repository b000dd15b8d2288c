"""Adaptive Card builders: the chat-neutral content of ``bot.chat`` as Teams cards.

Plain dicts, no botbuilder: the cards stay the same if the adapter moves to the Microsoft 365
Agents SDK. Buttons are ``Action.Execute`` (Universal Actions, schema 1.4), so a click arrives as
an ``adaptiveCard/action`` invoke with the verb and the card's inputs. Teams caps a message at
about 28 KB, so long text is clipped here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from bot.chat.approval_cards import ApprovalCard, DecisionOutcome
from bot.chat.command_lines import CommandLine
from bot.chat.endings import RcaSummary
from bot.chat.prompt_wording import Prompt
from bot.chat.status import StatusView

Card = dict[str, Any]
Names = Callable[[str | None], str]

CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
APPROVE, DENY, MODIFY = "approve", "deny", "modify"
CONTINUE, DONE, EXTEND, RCA = "continue", "done", "extend", "rca"
RESUME = "resume"
DECISION_VERBS = (APPROVE, DENY, MODIFY)
PROMPT_VERBS = (CONTINUE, DONE, EXTEND, RCA, RESUME)
STATE_ICON = {"ACTIVE": "🔎", "CONFIRMED": "✅", "CONTRADICTED": "❌", "UNVERIFIABLE": "❔",
              "DENIED_ONCE": "🚫", "DENIED_TWICE": "🚫"}
#: One Teams message carries about 28 KB; the RCA is split into parts below this.
RCA_PART_CHARS = 20_000
#: The longest text of one element of the report's cards (a long paragraph becomes several).
BLOCK_CHARS = 4_000


def raw_name(user: str | None) -> str:
    return user or "someone"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(text: str) -> str:
    """Text a model or user wrote: links are broken up (a model reading attacker-controlled
    output must not put a clickable link on a card); the rest renders as written."""
    return text.replace("](", "]\u200b(")


def with_names(text: str, names: Names) -> str:
    """The chat layer's ``{user:ID}`` placeholders as display names."""
    return re.sub(r"\{user:([^}]*)\}", lambda m: names(m.group(1)), text)


def text_block(text: str, **extra: Any) -> Card:
    return {"type": "TextBlock", "text": text, "wrap": True, **extra}


def code_block(text: str, limit: int = 3000) -> Card:
    return {"type": "TextBlock", "text": clip(text, limit), "wrap": True,
            "fontType": "Monospace"}


def card(body: list[Card], actions: list[Card] | None = None) -> Card:
    out: Card = {"type": "AdaptiveCard",
                 "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                 "version": "1.4", "body": body, "msteams": {"width": "Full"}}
    if actions:
        out["actions"] = actions
    return out


def execute(title: str, verb: str, data: dict[str, Any], *, style: str | None = None,
            inputs: bool = False) -> Card:
    action: Card = {"type": "Action.Execute", "title": title, "verb": verb, "data": data,
                    "associatedInputs": "auto" if inputs else "none"}
    if style:
        action["style"] = style
    return action


def show_card(title: str, body: list[Card], actions: list[Card]) -> Card:
    return {"type": "Action.ShowCard", "title": title, "card": card(body, actions)}


def status_card(view: StatusView, names: Names = raw_name) -> Card:
    body = [text_block(f"**Ghost investigation** {view.session_id or '(starting)'}",
                       size="Medium", weight="Bolder"),
            text_block(view.phase, color="Accent"),
            text_block(plain(clip(view.symptom, 500)), isSubtle=True),
            text_block(f"Requested by {plain(names(view.requested_by))} · turn {view.turn}/"
                       f"{view.max_turns} · denials {view.denials}"
                       + (f" · {plain(view.usage)}" if view.usage else ""), size="Small")]
    if view.hypotheses:
        body.append(text_block("**Hypotheses**"))
        body += [text_block(f"{STATE_ICON.get(h.state, '•')} {plain(h.id)} {h.state} — "
                            f"{plain(clip(h.description, 200))}", spacing="None")
                 for h in view.hypotheses[:10]]
    if view.tasks:
        body.append(text_block("Captures running: " + ", ".join(plain(t) for t in view.tasks),
                               size="Small"))
    return card(body)


def command_text(line: CommandLine) -> str:
    """One compact markdown line for a command that ran or was refused."""
    icon = line.icon()
    cmd = clip(line.command, 300).replace("`", "'")
    note = f" · {plain(line.note)}" if line.note else ""
    audit = f" · audit `{line.audit_id}`" if line.audit_id else ""
    return f"{icon} {line.classification} {plain(line.verdict)}: `{cmd}`{note}{audit}"


def approval_card(card_: ApprovalCard, outcome: DecisionOutcome | None = None, *,
                  names: Names = raw_name, notice: str | None = None) -> Card:
    """The card with its actions while pending; with the outcome (no actions) once decided.

    ``notice`` is shown on top, to the one person who clicked (why they cannot decide)."""
    title = "✏️ Edited command needs approval" if card_.modified_by else "⚠️ Approval needed"
    who = ""
    if outcome is not None:  # decided: the title says what happened, not what is needed
        who = names(outcome.actor) if outcome.actor and outcome.actor != "ghost" else ""
        title = f"{outcome.icon()} {plain(clip(outcome.headline(who), 200))}"
    tier = f"tier {card_.tier}" if card_.tier is not None else "tier ?"
    body: list[Card] = []
    if notice:
        body.append({"type": "Container", "style": "warning",
                     "items": [text_block(with_names(notice, names), weight="Bolder")]})
    body += [text_block(f"**{title}**", size="Medium"), code_block(card_.command, 2000),
             text_block(f"**{card_.classification}** ({tier}, rule {plain(card_.rule or '-')})"
                        f" · {plain(card_.environment)}"),
             text_block(f"Asked by Ghost (AI) in {plain(names(card_.investigation_requester))}"
                        f"'s investigation {card_.session_id}", size="Small")]
    if card_.modified_by:
        body.append(text_block(f"Edited by {plain(names(card_.modified_by))}", size="Small"))
    if card_.risk:
        body.append(text_block(f"**Why it is gated:** {plain(clip(card_.risk, 600))}"))
    if card_.reasoning:
        body.append(text_block(f"**Ghost's reasoning:** {plain(clip(card_.reasoning, 1500))}"))
    data = {"approval_id": card_.approval_id}
    if outcome is not None:
        body.append(text_block(f"{outcome.icon()} {plain(outcome.summary(who))}",
                               weight="Bolder"))
        return {**card(body), "fallbackText": f"{title} · {clip(card_.command, 120)}"}
    expires = f" Expires {card_.expires_at:%H:%M} UTC." if card_.expires_at else ""
    body.append(text_block(plain(card_.needed) + expires, size="Small", isSubtle=True))
    actions = [
        execute("Approve", APPROVE, data, style="positive"),
        show_card("Deny…", [{"type": "Input.Text", "id": "reason", "isMultiline": True,
                             "label": "Why? (optional — Ghost uses it to re-plan)",
                             "maxLength": 1000}],
                  [execute("Deny", DENY, data, style="destructive", inputs=True)]),
    ]
    if card_.modifiable:  # a step with nothing to edit is approved or denied only
        actions.append(show_card(
            "Modify…", [{"type": "Input.Text", "id": "command", "label": "Command",
                         "value": card_.command, "maxLength": 2000},
                        text_block("Re-checked by the safety gate; a second engineer "
                                   "must approve the edit.", size="Small")],
            [execute("Submit edit", MODIFY, data, inputs=True)]))
    return {**card(body, actions),
            "fallbackText": f"{title.split(' ', 1)[1]}: {clip(card_.command, 120)}"}


def prompt_card(prompt: Prompt, answered_by: str | None = None, choice: str | None = None,
                *, names: Names = raw_name, notice: str | None = None,
                closed: bool = False) -> Card:
    """With its actions while open; once answered (``closed``), who answered and how. The
    actions carry the prompt's key, so a click on an old prompt is recognised."""
    body: list[Card] = []
    if notice:
        body.append({"type": "Container", "style": "warning",
                     "items": [text_block(with_names(notice, names), weight="Bolder")]})
    body.append(text_block(plain(prompt.text)))
    data = {"session_id": prompt.session_id, "kind": prompt.kind, "key": prompt.key}
    if answered_by or closed:
        who = f" by {plain(names(answered_by))}" if answered_by else ""
        if choice or answered_by:
            body.append(text_block(f"{choice or 'Answered'}{who}.", size="Small",
                                   isSubtle=True))
        return card(body)
    if prompt.kind == "turn_limit":
        actions = [execute("Extend 10 turns", EXTEND, data),
                   execute("Generate RCA", RCA, data, style="positive")]
    elif prompt.kind == "parked":
        actions = [execute("Resume", RESUME, data, style="positive")]
    else:
        actions = [show_card("Continue…", [{"type": "Input.Text", "id": "instruction",
                                            "isMultiline": True, "maxLength": 2000,
                                            "label": "Instruction for Ghost (optional)"}],
                             [execute("Continue", CONTINUE, data, style="positive",
                                      inputs=True)]),
                   execute("Done — write the RCA", DONE, data)]
    return card(body, actions)


def rca_card(summary: RcaSummary, parts: int, filename: str | None = None) -> Card:
    actions = "\n".join(f"- {plain(a)}" for a in summary.actions[:5]) or "- (none given)"
    if filename:
        where = f"The full report is attached below ({filename}, in the channel's Files)."
    else:
        where = (f"The full report follows in {parts} message{'s' if parts != 1 else ''} "
                 "below." if parts else "")
    return card([
        text_block(f"**RCA for {summary.session_id}**", size="Medium"),
        text_block(f"Confidence **{plain(summary.confidence)}** · {summary.turns} turns · "
                   f"{summary.duration()}"),
        text_block(f"**Root cause:** {plain(clip(summary.root_cause, 2000))}"),
        text_block("**Recommended actions:**\n" + actions),
        text_block(where + " `ghost session show " + summary.session_id + "` and the audit "
                   "export have everything.", size="Small", isSubtle=True),
    ])


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(lines: list[str], limit: int = BLOCK_CHARS) -> list[Card]:
    """A Markdown pipe table as Adaptive Card ``Table``s (schema 1.5) — Teams messages do not
    render pipe tables. A long table is cut into several, each repeating the header row."""
    rows = [_cells(line) for line in lines
            if not re.fullmatch(r"\|?[\s:|-]+\|?", line.strip())]  # drop the |---| line
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [[clip(c, 1000) for c in r] + [""] * (width - len(r)) for r in rows]
    header, size = rows[0], 0
    groups: list[list[list[str]]] = [[]]
    for row in rows[1:]:
        n = sum(len(c) for c in row) + 40 * width
        if groups[-1] and size + n > limit:
            groups.append([])
            size = 0
        groups[-1].append(row)
        size += n
    return [{"type": "Table", "firstRowAsHeader": True, "showGridLines": True,
             "columns": [{"width": 1} for _ in range(width)],
             "rows": [{"type": "TableRow", "cells": [
                 {"type": "TableCell", "items": [text_block(plain(cell))]} for cell in row]}
                 for row in [header, *group]]} for group in groups]


def _chunks(lines: list[str], limit: int = BLOCK_CHARS) -> list[str]:
    """Lines joined into pieces under ``limit`` characters, cut at line ends (a longer line
    is cut where it must): nothing of the report is dropped."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        while len(line) > limit:
            pieces += ["\n".join(current)] if current else []
            current, size = [], 0
            pieces.append(line[:limit])
            line = line[limit:]
        if current and size + len(line) + 1 > limit:
            pieces.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        pieces.append("\n".join(current))
    return pieces


def report_elements(markdown: str) -> list[Card]:
    """The report as card elements: headings, paragraphs, code and tables."""
    out: list[Card] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            out += [code_block(chunk, BLOCK_CHARS) for chunk in _chunks(lines[i + 1:j])]
            i = j + 1
        elif line.lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out += tables(lines[i:j])
            i = j
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(text_block(plain(line.lstrip("#").strip()), weight="Bolder",
                                  size="Large" if level == 1 else "Medium"))
            i += 1
        elif not line.strip():
            i += 1
        else:
            j = i
            while (j < len(lines) and lines[j].strip() and not lines[j].startswith("#")
                   and not lines[j].lstrip().startswith(("|", "```"))):
                j += 1
            out += [text_block(plain(chunk)) for chunk in _chunks(lines[i:j])]
            i = j
    return out


def report_cards(markdown: str, limit: int = RCA_PART_CHARS) -> list[Card]:
    """The report as Adaptive Cards (1.5, for tables), each under ``limit`` characters of
    JSON, cut between elements."""
    parts: list[list[Card]] = [[]]
    size = 0
    for element in report_elements(markdown):
        n = len(json.dumps(element))
        if parts[-1] and size + n > limit:
            parts.append([])
            size = 0
        parts[-1].append(element)
        size += n
    out = []
    for i, body in enumerate(p for p in parts if p):
        if len(parts) > 1:
            body = [text_block(f"(part {i + 1}/{len(parts)})", size="Small", isSubtle=True),
                    *body]
        out.append({**card(body), "version": "1.5"})
    return out


def notice_card(text: str) -> Card:
    """What a clicker sees when the click could not be matched to anything."""
    return card([text_block(text, weight="Bolder")])
