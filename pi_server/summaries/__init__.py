"""Summaries: pi's branch summaries (and, later, compaction), prompts, the extractive fallback."""
