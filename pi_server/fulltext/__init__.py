"""The full-text index of every entry of every session (SQLite FTS5, trigram)."""
