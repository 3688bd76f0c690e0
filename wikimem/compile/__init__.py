"""Sources into entity and concept pages (design §10): extract, gate, write marked sections,
contradictions. ``run.compile_vault`` is the entry point ``Vault.compile`` calls."""
from .run import CompileReport, PageResult, compile_vault, contradictions  # noqa: F401
