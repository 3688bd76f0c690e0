"""wikimem: an Obsidian vault compiled into a searchable knowledge base and long-term memory."""
__version__ = "0.1.0"
