"""Parsing: frontmatter, Markdown structure, links, tags, block ids, chunks and SCHEMA.md."""
from .chunk import chunk_page, chunk_transcript, is_transcript
from .page import page_to_dict, parse_page
from .resolve import Resolver
from .schema import VaultSchema, parse_schema

# How a note is read into a page, cut into chunks and given to the embedder (Chunk.index_text). The
# cache records it (index/build.py): a cache written under another version re-parses every note once,
# as if each had changed, so an upgrade's parser or chunker fix reaches the notes nobody edited (their
# vectors are kept where the embedded text is the same). Bump it when what parse_page, chunk_page or
# Chunk.index_text give for the same bytes changes.
# 1: Markdown links split at '#' before decoding ([x](C%23.md) is the page "C#").
# 2: a chunk gives the embedder its first model.EMBED_MAX_CHARS characters.
PARSE_VERSION = 2

__all__ = ["PARSE_VERSION", "chunk_page", "chunk_transcript", "is_transcript", "page_to_dict", "parse_page", "Resolver",
           "VaultSchema", "parse_schema"]
