"""Size of every request sent to Gemini over a 50-turn investigation with huge command outputs.

    .venv/bin/python benchmarks/gemini_request_size.py [--turns 50] [--output-mb 2]

Each turn runs a command that prints ``--output-mb`` MB (with secrets sprinkled in) through the
real Safe-Exec Shell; the real google-genai client talks to the local fake Gemini. Truncation
and redaction must keep every function response small, so a request grows by a bounded amount
per turn instead of by the size of the output.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.gemini_brain import GeminiBrain  # noqa: E402
from core.engine.loop import Engine  # noqa: E402
from core.safety.approval import Decision  # noqa: E402
from core.safety.shell import SafeExecShell  # noqa: E402
from storage.store import Store  # noqa: E402
from tests.fakes.gemini_server import FakeGemini, call, function_call_turn  # noqa: E402

#: The system prompt is sent with every request; it must stay bounded (issue 22).
PROMPT_TOKEN_LIMIT = 8_000


class ApproveAll:
    decides_immediately = True

    def request(self, request: object) -> Decision:
        return Decision.approve("bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--output-mb", type=float, default=2.0)
    args = parser.parse_args()
    size = int(args.output_mb * 1_000_000)
    # A file in Ghost's data directory that `cat` prints: SAFE, so it runs unattended (an
    # interpreter one-liner would be refused by the gate).
    data_dir = Path(tempfile.mkdtemp(prefix="ghost-bench-"))
    line = "Account" + "Key=" + "Zm9v" * 22 + "== " + "x" * 60 + "\n"
    big = data_dir / "big-output.txt"
    big.write_text(line * (size // len(line)))
    command = f"cat {shlex.quote(str(big))}"
    script = [function_call_turn(call("run_shell_cmd", {"command": command,
                                                        "reasoning": "big output"}))
              for _ in range(args.turns - 1)]
    script.append(function_call_turn(call("complete_investigation", {
        "confidence": "low", "root_cause_summary": "benchmark"})))
    with tempfile.TemporaryDirectory() as tmp, FakeGemini(script) as fake:
        store = Store.from_url(f"sqlite:///{tmp}/bench.db", auto_migrate=True)
        data = data_dir
        engine = Engine(
            store=store,
            brain=GeminiBrain("gemini-bench", "test-key", base_url=fake.base_url),
            shell_for=lambda sid: SafeExecShell(sid, audit=store, approvals=store,
                                                approver=ApproveAll(), data_dir=data),
            orchestrator_for=lambda sid, shell: None,  # type: ignore[arg-type,return-value]
            rca_writer=lambda name, text: str(data / name),
        )
        sid = store.create_investigation(symptom="bench", model="m", audit_dir=tmp).session_id
        engine.begin(sid, "benchmark: huge outputs")
        outcome = engine.advance(sid)
        sizes = [r.size for r in fake.requests]
        prompt = fake.requests[0].system_text
        secrets_sent = sum("Zm9vZm9v" in str(r.function_responses()) for r in fake.requests)
        statuses = {str(fr["response"].get("status")) for r in fake.requests
                    for fr in r.function_responses()}
    shutil.rmtree(data_dir, ignore_errors=True)
    growth = [b - a for a, b in zip(sizes, sizes[1:], strict=False)]
    print(f"turns: {len(sizes)}, each command printed {args.output_mb:.1f} MB "
          f"(outcome: {outcome.kind})")
    print(f"request bytes: first {sizes[0]:,}, median {int(statistics.median(sizes)):,}, "
          f"last {sizes[-1]:,}")
    print(f"growth per turn: median {int(statistics.median(growth)):,} B, "
          f"max {max(growth):,} B (bounded by truncation: 200 lines / ~4,000 tokens)")
    print(f"system prompt as sent: {len(prompt):,} chars, ~{len(prompt) // 4:,} tokens "
          f"(4 chars/token; fixed per request, limit {PROMPT_TOKEN_LIMIT:,})")
    print(f"requests carrying an unredacted storage key: {secrets_sent}; command statuses: "
          f"{sorted(statuses)}")
    ok = (max(growth) < 40_000 and secrets_sent == 0 and statuses == {"completed"}
          and len(prompt) // 4 <= PROMPT_TOKEN_LIMIT)
    print("OK" if ok else "FAIL: a request grew with the output, leaked a secret, or the "
          "prompt outgrew its bound")
    os._exit(0 if ok else 1)


if __name__ == "__main__":
    main()
