"""Persistence: session files, their per-file indexes, and session discovery."""
