"""The lab's Azure CLI: `az` commands answered from the scenario with az's syntax and output."""
