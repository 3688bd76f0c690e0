"""Answering questions from the vault: retrieve, answer with citations (extractive by default,
an LLM when configured), and file the answer back as a query page (``queries/<question>.md``)."""
from .answer import Answer, Citation
from .query import ask

__all__ = ["Answer", "Citation", "ask"]
