"""The simulated Azure estate (the lab): scenarios, the network model, the lab runner and captures."""
