"""The simulated Azure estate (the lab): scenarios, network model, lab runner, captures."""
