"""Extractive answers quote numbered steps whole and drop icons and HTML (issue 36 part 2)."""
from __future__ import annotations

from wikimem.api import open_vault

NOTE = ("# Restoring notes\n\n## Restore a deleted note\n\nTo restore a deleted note, follow these steps.\n\n"
        "1. Open the command palette with ![[lucide-terminal.svg#icon]] <kbd>Ctrl</kbd>+<kbd>P</kbd>.\n"
        "2. Search for File recovery.\n"
        "3. Pick the snapshot you want.\n"
        "4. Click Restore to bring the deleted note back.\n\n"
        "The note is then searchable again.\n")


def test_a_step_of_a_numbered_list_is_quoted_with_the_whole_list(make_vault):
    # Was: step 4 alone, without steps 1-3, with the icon's file name in the text
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "concepts/Restoring notes.md": NOTE}), embedder="fake")
    v.index()
    answer = v.query("How do I restore a deleted note?", write=False)
    assert answer.answered
    text = answer.text
    assert "1. Open the command palette" in text and "4. Click Restore" in text
    assert text.index("1. Open") < text.index("2. Search") < text.index("3. Pick") < text.index("4. Click")
    assert "lucide-terminal.svg" not in text and "<kbd>" not in text and "Ctrl+P" in text
