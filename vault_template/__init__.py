"""The files `wikimem init` copies into a new vault (SCHEMA.md, index.md, log.md); shipped as package data."""
