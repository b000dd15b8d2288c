"""`ghost classify` and `ghost redact`: the safety gate's verdicts and redaction, from a shell."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bot.settings import load_settings


def _verdict_json(command: str) -> dict[str, Any]:
    from core.safety.classify import classify

    v = classify(command, data_dir=load_settings().data_dir)
    return {"command": command, "classification": v.classification, "tier": v.tier,
            "rule": v.rule, "reason": v.reason}


def classify_command(args: argparse.Namespace) -> int:
    if args.cmdline == "-":
        return _classify_stream(as_json=args.json)
    from core.safety.classify import classify

    v = classify(args.cmdline, data_dir=load_settings().data_dir)
    if args.json:
        print(json.dumps(_verdict_json(args.cmdline), ensure_ascii=False))
        return 0
    print(f"{v.classification}  (tier {v.tier}, rule {v.rule})")
    print(f"  {v.reason}")
    what = {"SAFE": "Runs without asking.",
            "RISKY": "Runs only after an engineer approves it.",
            "FORBIDDEN": "Never runs, whoever approves."}[v.classification]
    print(f"  {what}  Classifier {v.classifier_version}.")
    return 0


def _classify_stream(*, as_json: bool) -> int:
    failures = 0
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        command: Any = None
        if as_json:
            try:
                command = json.loads(line).get("command")
            except (ValueError, AttributeError):
                command = None
            if not isinstance(command, str):
                failures += 1
                print(json.dumps({"command": None, "classification": None, "tier": None,
                                  "rule": None, "reason": None,
                                  "error": f"line {number}: expected {{\"command\": \"...\"}}"}))
                continue
        else:
            command = line.rstrip("\r\n")
        print(json.dumps(_verdict_json(command), ensure_ascii=False), flush=False)
    sys.stdout.flush()
    return 1 if failures else 0


def redact_command(args: argparse.Namespace) -> int:
    from core.safety.redact import redact

    if not args.jsonl:
        sys.stdout.write(redact(sys.stdin.read()))
        return 0
    failures = 0
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            text = json.loads(line).get("text")
        except (ValueError, AttributeError):
            text = None
        if not isinstance(text, str):
            failures += 1
            print(json.dumps({"text": None,
                              "error": f"line {number}: expected {{\"text\": \"...\"}}"}))
            continue
        print(json.dumps({"text": redact(text)}, ensure_ascii=False))
    return 1 if failures else 0
