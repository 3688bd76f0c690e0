"""Parsing: frontmatter, Markdown structure, links, tags, block ids, chunks and SCHEMA.md."""
from .chunk import chunk_page, chunk_transcript, is_transcript
from .page import page_to_dict, parse_page
from .resolve import Resolver
from .schema import VaultSchema, parse_schema

__all__ = ["chunk_page", "chunk_transcript", "is_transcript", "page_to_dict", "parse_page", "Resolver",
           "VaultSchema", "parse_schema"]
