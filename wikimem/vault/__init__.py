"""Vault access: the only code that touches note files."""
from .files import FileInfo, NoteFile, ScanResult, VaultFiles, atomic_write_bytes, decode_note, is_raw_path

__all__ = ["FileInfo", "NoteFile", "ScanResult", "VaultFiles", "atomic_write_bytes", "decode_note", "is_raw_path"]
