"""`ghost demo [SCENARIO] [--model M] [--yes]`: a whole investigation against the lab.

The estate is simulated (``lab/``); everything else is Ghost as in production: the gate
classifies every command, RISKY ones ask for approval (as in ``ghost investigate``), the audit
and the RCA are real and stored in the same database, marked as a lab session. Without a
GEMINI_API_KEY the scenario's replay (a scripted reference investigation) plays the model; with
one, Gemini investigates the simulated estate. ``--yes`` approves as a second engineer would.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from bot.settings import Settings, load_settings
from bot.terminal import RULE, Prompter, banner
from bot.terminal.approver import local_user, print_alert
from bot.terminal.style import MAX_WIDTH, say, say_command, terminal_width, wrapped
from core.safety.approval import ApprovalRequest, Decision

DEFAULT_SCENARIO = "nsg-deny-redis"
SECOND_ENGINEER = "second-engineer (ghost demo --yes)"
#: how many times --yes answers Continue to a text-only model turn before it says Done
MAX_AUTO_CONTINUES = 2


class SecondEngineer:
    """``--yes``: every RISKY command is shown, then approved by a second engineer."""

    decides_immediately = True

    def __init__(self, out: TextIO, user: str | None = None) -> None:
        self.out = out
        self.user = user or local_user()  # the requester at the keyboard
        self.stdin = sys.stdin

    def request(self, request: ApprovalRequest) -> Decision:
        print_alert(request, self.out)
        say(self.out, f"Your choice: a   ← approved by {SECOND_ENGINEER}")
        return Decision.approve(SECOND_ENGINEER)


class AutoPrompter(Prompter):
    """``--yes``: answers Ghost's questions without reading stdin, and shows the answers."""

    def __init__(self, stdout: TextIO) -> None:
        super().__init__(sys.stdin, stdout)
        self.continues = 0

    def _say(self, prompt: str, answer: str) -> None:
        self.stdout.write(f"{prompt}{answer}   (--yes)\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str | None:
        self._say(prompt, "Continue.")
        return "Continue."

    def choose(self, prompt: str, choices: dict[str, str]) -> str | None:
        values = list(choices.values())
        if "continue" in values and self.continues < MAX_AUTO_CONTINUES:
            self.continues += 1
            pick = "continue"
        else:
            pick = next((v for v in ("done", "generate", "skip") if v in values), values[0])
        key = next(k for k, v in choices.items() if v == pick)
        self._say(prompt, key)
        return pick


def lab_banner(out: TextIO, session_id: str, lab: Any, model: str, *, yes: bool,
               replay: bool) -> None:
    scenario = lab.scenario
    source = (f"the shipped scenario {scenario.name}" if lab.key == scenario.name
              else str(scenario.path))
    who = ("a scripted reference investigation (the scenario's replay); set GEMINI_API_KEY "
           "to let Gemini investigate instead" if replay else "Gemini, investigating the "
           "simulated estate")
    approvals = ("RISKY commands are shown, then approved by a second engineer (--yes)"
                 if yes else "you decide every RISKY command, as in `ghost investigate`")
    banner(session_id, out)
    rows = [
        ("LAB RUN", "nothing here touches Azure or the network"),
        ("Scenario", f"{scenario.name} — {scenario.title}"),
        ("Symptom", scenario.symptom),
        ("Simulated", f"the Azure estate (az reads, Network Watcher, packet captures) and "
                      f"every probe (ping, dig, curl, nc, run-command), answered from {source}"),
        ("Real", "the safety gate, approvals, audit log, pcap forensics and the RCA"),
        ("Model", f"{model} — {who}"),
        ("Approvals", approvals),
    ]
    width = terminal_width(out)  # a pipe: one line per row, as the transcript convention
    for label, text in rows:  # wrapped at spaces under the text, never inside a word
        for line in wrapped(f"  {label + ':':<11}  {text}", out, indent=" " * 13,
                            width=min(width, MAX_WIDTH) if width else None):
            out.write(line + "\n")
    out.write(f"{RULE}\n")
    out.flush()


def demo(args: argparse.Namespace) -> int:
    settings = load_settings()
    if args.model:
        settings.model = args.model
        if not settings.gemini_api_key:
            sys.stderr.write(f"ghost: --model {args.model} is used only with GEMINI_API_KEY; "
                             "without it the scenario's replay plays the model.\n")
    return run(settings, scenario=args.scenario or DEFAULT_SCENARIO, yes=bool(args.yes))


def run(settings: Settings, *, scenario: str, yes: bool, stdin: TextIO | None = None,
        stdout: TextIO | None = None) -> int:
    from bot.bootstrap import build_engine, build_store
    from bot.commands.investigate import _begin, _drive, _hold, prompter_user
    from bot.lab_wiring import lab_brain, open_lab
    from core.engine.loop import BrainUnavailable

    out = stdout or sys.stdout
    lab = open_lab(scenario, settings)
    settings.lab = lab.key
    brain = lab_brain(lab, settings)
    replay = not settings.gemini_api_key
    prompter: Prompter = AutoPrompter(out) if yes else Prompter(stdin, out)
    approver = SecondEngineer(out) if yes else None
    store = build_store(settings)
    engine, _ = build_engine(settings, store, prompter=prompter, out=out, brain=brain,
                             approver=approver, lab_notice=False)
    inv = store.create_investigation(
        symptom=lab.scenario.symptom, model=str(brain.model),
        audit_dir=str(settings.audit_dir), requested_by=prompter_user(), platform="terminal",
        status="queued", lab=lab.key)
    session_id = inv.session_id
    lease = _hold(store, session_id, settings)
    try:
        lab_banner(out, session_id, lab, str(brain.model), yes=yes, replay=replay)
        _begin(engine, store, session_id, lab.scenario.symptom, prompter, out)
        code = _drive(engine, store, session_id, prompter, out)
    except KeyboardInterrupt:
        say(out, f"\nInterrupted. Lab session {session_id} is saved as it stood; run "
            "`ghost demo` again for a fresh run.")
        return 130
    except BrainUnavailable as exc:
        say(out, f"\n[ERROR] {exc.message}")
        return 1
    finally:
        lease.release()
    say(out, f"  Lab session {session_id} (scenario {lab.scenario.name}) is saved with its "
        "audit log, marked as a lab run.", indent="    ")
    say_command(out, "Verify the audit chain:", f"ghost audit verify {session_id}")
    say_command(out, "Every command and decision:", f"ghost audit export {session_id} --dir .")
    return code
