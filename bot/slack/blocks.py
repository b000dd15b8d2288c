"""Block Kit builders: the chat-neutral content of ``bot.chat`` as Slack messages.

Every builder returns ``(blocks, text)``; ``text`` is the notification/fallback line. Slack caps a
section's text at 3000 characters, so long model text and commands are shortened here.
"""

from __future__ import annotations

import re
from typing import Any

from bot.chat.approval_cards import ApprovalCard, DecisionOutcome
from bot.chat.command_lines import CommandLine
from bot.chat.endings import RcaSummary
from bot.chat.orphans import OrphanReport
from bot.chat.prompt_wording import Prompt
from bot.chat.prompts import button_value
from bot.chat.status import StatusView

Blocks = list[dict[str, Any]]

APPROVE, DENY, MODIFY = "ghost_approve", "ghost_deny", "ghost_modify"
CONTINUE, DONE, EXTEND, RCA = "ghost_continue", "ghost_done", "ghost_extend", "ghost_rca"
RESUME = "ghost_resume"
ORPHANS_CLEAN, ORPHANS_SKIP, ORPHANS_REVIEW, ORPHAN_CLEAN_ONE = (
    "ghost_orphans_clean", "ghost_orphans_skip", "ghost_orphans_review", "ghost_orphan_one")
DENY_VIEW, MODIFY_VIEW, CONTINUE_VIEW = "ghost_deny_view", "ghost_modify_view", \
    "ghost_continue_view"
WHO = "\x00who\x00"  # where the decider's mention goes, after escaping the rest
STATE_ICON = {"ACTIVE": "🔎", "CONFIRMED": "✅", "CONTRADICTED": "❌", "UNVERIFIABLE": "❔",
              "DENIED_ONCE": "🚫", "DENIED_TWICE": "🚫"}


def mention(user: str | None) -> str:
    return f"<@{user}>" if user else "someone"


def mentions(text: str) -> str:
    """The chat layer's ``{user:U123}`` placeholders as Slack mentions."""
    return re.sub(r"\{user:([^}]*)\}", lambda m: mention(m.group(1)), text)


def escape(text: str) -> str:
    """Slack's three control characters; everything a model or user wrote goes through this."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int = 2900) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def code(text: str, limit: int = 2800) -> str:
    return "```" + clip(escape(text).replace("```", "`\u200b``"), limit) + "```"


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text)}}


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(text)}]}


def button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    b: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": text},
                         "action_id": action_id, "value": value}
    if style:
        b["style"] = style
    return b


def status_message(view: StatusView) -> tuple[Blocks, str]:
    head = f"*Ghost investigation* `{view.session_id or 'starting'}` — {escape(view.phase)}"
    lines = [head, f">{escape(clip(view.symptom, 500))}",
             f"Requested by {mention(view.requested_by)} · turn {view.turn}/{view.max_turns}"
             f" · denials {view.denials}"
             + (f" · {escape(view.usage)}" if view.usage else "")]
    blocks: Blocks = [section("\n".join(lines))]
    if view.hypotheses:
        hyps = "\n".join(f"{STATE_ICON.get(h.state, '•')} `{escape(h.id)}` {escape(h.state)}"
                         f" — {escape(clip(h.description, 200))}" for h in view.hypotheses[:10])
        blocks.append(section("*Hypotheses*\n" + hyps))
    if view.captures:
        blocks.append(section("*Captures*\n" + "\n".join(escape(c) for c in view.captures)))
    elif view.tasks:
        blocks.append(context("Captures running: " + ", ".join(f"`{escape(t)}`"
                                                             for t in view.tasks)))
    return blocks, f"Ghost investigation {view.session_id or 'starting'}: {view.phase}"


def reasoning_message(text: str) -> tuple[Blocks, str]:
    return [section("🧠 " + escape(clip(text.strip(), 2800)))], clip(text.strip(), 150)


def notice_message(text: str) -> tuple[Blocks, str]:
    """Ghost's own words (errors, the orphan check), not the model's."""
    return [section(escape(clip(text.strip(), 2800)))], clip(text.strip(), 150)


def command_message(line: CommandLine) -> tuple[Blocks, str]:
    icon = line.icon()
    audit = f" · audit `{escape(line.audit_id)}`" if line.audit_id else ""
    note = f" · {escape(line.note)}" if line.note else ""
    cmd = escape(clip(line.command, 300)).replace("`", "'")
    text = f"{icon} {line.classification} {escape(line.verdict)}: `{cmd}`{note}{audit}"
    return [context(text)], f"{line.classification} {line.verdict}: {clip(line.command, 100)}"


def approval_card(card: ApprovalCard, outcome: DecisionOutcome | None = None
                  ) -> tuple[Blocks, str]:
    title = "✏️ Edited command needs approval" if card.modified_by else \
        "⚠️ Approval needed"
    if outcome is not None:  # decided: the title says what happened, not what is needed
        title = f"{outcome.icon()} {_decided(outcome)}"
    tier = f"tier {card.tier}" if card.tier is not None else "tier ?"
    facts = [
        f"*{card.classification}* ({tier}, rule `{escape(card.rule or '-')}`) · "
        f"{escape(card.environment)}",
        f"Asked by Ghost (AI) in {mention(card.investigation_requester)}'s investigation"
        f" `{card.session_id}`",
    ]
    if card.modified_by:
        facts.append(f"Edited by {mention(card.modified_by)}")
    blocks: Blocks = [section(f"*{title}*"), section(code(card.command, 2000)),
                      section("\n".join(facts))]
    if card.risk:
        blocks.append(section(f"*Why it is gated:* {escape(clip(card.risk, 600))}"))
    if card.reasoning:
        blocks.append(section(f"*Ghost's reasoning:* {escape(clip(card.reasoning, 1500))}"))
    if outcome is None:
        expires = f" Expires {card.expires_at:%H:%M} UTC." if card.expires_at else ""
        blocks.append(context(escape(card.needed) + expires))
        elements = [button("Approve", APPROVE, card.approval_id, "primary"),
                    button("Deny…", DENY, card.approval_id, "danger")]
        if card.modifiable:  # a step with nothing to edit is approved or denied only
            elements.append(button("Modify…", MODIFY, card.approval_id))
        blocks.append({"type": "actions", "block_id": f"approval:{card.approval_id}",
                       "elements": elements})
    else:
        who = _who(outcome)
        line = escape(outcome.summary(WHO if who else "")).replace(WHO, who)
        blocks.append(section(f"{outcome.icon()} {line}"))
        return blocks, f"{title} · {clip(card.command, 120)}"
    return blocks, f"Approval needed: {clip(card.command, 120)}"


def _who(outcome: DecisionOutcome) -> str:
    """The decider as a mention; empty when Ghost itself closed the card."""
    return mention(outcome.actor) if outcome.actor and outcome.actor != "ghost" else ""


def _decided(outcome: DecisionOutcome) -> str:
    who = _who(outcome)
    return escape(clip(outcome.headline(WHO if who else ""), 200)).replace(WHO, who)


def prompt_message(prompt: Prompt, done_by: str | None = None,
                   choice: str | None = None, *, closed: bool = False) -> tuple[Blocks, str]:
    """The prompt with its buttons, or once answered (``closed``) who answered and how.
    The buttons carry ``<session id>|<prompt key>`` so an old prompt's click is recognised."""
    blocks: Blocks = [section(escape(prompt.text))]
    value = button_value(prompt.session_id, prompt.key)
    if done_by or closed:
        who = f" by {mention(done_by)}" if done_by else ""
        blocks.append(context(f"{escape(choice or 'Answered')}{who}."))
    elif prompt.kind == "turn_limit":
        blocks.append({"type": "actions", "block_id": f"prompt:{value}",
                       "elements": [button("Extend 10 turns", EXTEND, value),
                                    button("Generate RCA", RCA, value, "primary")]})
    elif prompt.kind == "parked":
        blocks.append({"type": "actions", "block_id": f"prompt:{value}",
                       "elements": [button("Resume", RESUME, value, "primary")]})
    else:
        blocks.append({"type": "actions", "block_id": f"prompt:{value}",
                       "elements": [button("Continue…", CONTINUE, value, "primary"),
                                    button("Done — write the RCA", DONE, value)]})
    return blocks, prompt.text


def rca_comment(summary: RcaSummary) -> str:
    actions = "\n".join(f"• {escape(a)}" for a in summary.actions[:5]) or "• (none given)"
    return clip(f"*RCA for `{summary.session_id}`* — confidence *{escape(summary.confidence)}*"
                f" · {summary.turns} turns · {summary.duration()}\n"
                f"*Root cause:* {escape(summary.root_cause)}\n*Recommended actions:*\n{actions}",
                3900)


def _modal(callback_id: str, title: str, submit: str, metadata: str,
           blocks: Blocks) -> dict[str, Any]:
    return {"type": "modal", "callback_id": callback_id, "private_metadata": metadata,
            "title": {"type": "plain_text", "text": title},
            "submit": {"type": "plain_text", "text": submit},
            "close": {"type": "plain_text", "text": "Cancel"}, "blocks": blocks}


def _input(block_id: str, label: str, *, initial: str | None = None, optional: bool,
           multiline: bool, hint: str | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": "value",
                               "multiline": multiline}
    if initial:
        element["initial_value"] = initial[:3000]
    block: dict[str, Any] = {"type": "input", "block_id": block_id, "optional": optional,
                             "label": {"type": "plain_text", "text": label},
                             "element": element}
    if hint:
        block["hint"] = {"type": "plain_text", "text": hint}
    return block


def deny_modal(approval_id: str, command: str) -> dict[str, Any]:
    return _modal(DENY_VIEW, "Deny command", "Deny", approval_id, [
        section(code(command, 1500)),
        _input("reason", "Why? (optional — Ghost uses it to re-plan)", optional=True,
               multiline=True)])


def modify_modal(approval_id: str, command: str) -> dict[str, Any]:
    return _modal(MODIFY_VIEW, "Modify command", "Submit edit", approval_id, [
        _input("command", "Command", initial=command, optional=False, multiline=False,
               hint="Re-checked by the safety gate; a second engineer must approve the edit.")])


def continue_modal(value: str) -> dict[str, Any]:
    """``value``: the Continue button's (session id and prompt key), kept for the submit."""
    return _modal(CONTINUE_VIEW, "Continue investigation", "Continue", value, [
        _input("instruction", "Instruction for Ghost (optional)", optional=True,
               multiline=True)])


ORPHAN_ICON = {"cleaned": "✅", "waiting for approval": "⏳", "cleaning": "⏳",
               "not cleaned": "⚠️", "manual": "🛠️"}
CHOSEN = {"clean": "Clean up chosen", "skip": "Skipped — they will be offered again with the "
          "next investigation;", "review": "Review each chosen"}


def orphan_report(report: OrphanReport) -> tuple[Blocks, str]:
    """The report with Clean up / Skip / Review each; in review, a button per orphan."""
    count = len(report.rows)
    head = (f"🧹 *{count} orphaned resource(s) from earlier investigations.* Cleaning them up "
            "deletes cloud captures and files; risky deletions ask for approval below. Ghost "
            "carries on investigating meanwhile.")
    out: Blocks = [section(head)]
    rows = report.rows[:40]  # Slack's limit is 50 blocks a message
    if report.choice == "review":
        for i, row in enumerate(rows):
            line = f"{ORPHAN_ICON.get(row.status, '•')} {escape(row.kind)} `{escape(row.name)}`"
            block = section(line + (f" — {escape(row.status)}" if row.status else ""))
            if not row.status:
                block["accessory"] = button("Clean up", ORPHAN_CLEAN_ONE,
                                            f"{report.session_id}|{i}")
            out.append(block)
    else:
        out.append(section("\n".join(
            f"{ORPHAN_ICON.get(r.status, '•')} {escape(r.kind)} `{escape(r.name)}`"
            + (f" — {escape(r.status)}" if r.status else "") for r in rows)))
    if len(report.rows) > len(rows):
        out.append(context(f"…and {len(report.rows) - len(rows)} more."))
    if report.manual:
        out.append(section("🛠️ *Needs manual deletion* (partial cleanup, recorded as "
                           "`manual_cleanup_pending`): " + ", ".join(
                               f"`{escape(n)}`" for n in report.manual)))
    for note in report.notes[:5]:
        out.append(context(escape(note)))
    for warning in report.warnings:
        out.append(context(f"Scan incomplete: {escape(warning)}"))
    if report.choice is None:
        sid = report.session_id
        out.append({"type": "actions", "block_id": f"orphans:{sid}", "elements": [
            button("Clean up", ORPHANS_CLEAN, sid, "primary"),
            button("Skip", ORPHANS_SKIP, sid), button("Review each", ORPHANS_REVIEW, sid)]})
    else:
        out.append(context(f"{CHOSEN.get(report.choice, report.choice)} by "
                           f"{mention(report.actor)}."))
    return out, f"{count} orphaned resource(s) from earlier investigations"
