"""The investigation engine: the Gemini tool-use loop as a resumable state machine."""
