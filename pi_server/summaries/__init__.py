"""Summaries: pi's branch summaries and compaction, prompts, the extractive fallback."""

from pi_server.summaries import service
from pi_server.summaries.service import Summary, prepare, summarize, summary_model

__all__ = ["Summary", "prepare", "service", "summarize", "summary_model"]
