"""Ghost in Microsoft Teams (botbuilder; every botbuilder import of the project is in here)."""
