"""The agent harness: turns the server runs itself (pi/prompt), with pi's message shapes and events."""
