"""Bringing sources into raw/: conversation transcripts today (Claude Code / ChatGPT exports later)."""
from .transcript import Session, Turn, import_sessions, session_note

__all__ = ["Session", "Turn", "import_sessions", "session_note"]
