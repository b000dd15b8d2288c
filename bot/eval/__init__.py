"""``ghost eval``'s runner: each scenario played as a whole lab investigation through the real
engine, gate, orchestrator and forensics (assembled as ``ghost demo`` assembles one), then
scored by ``lab.eval``."""
