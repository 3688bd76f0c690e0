"""What ``review`` and ``review --refresh`` need of the compiler, handed to ``qa.review`` by the facade
(compile sits above qa: qa never imports it): compiling a stale compiled page again."""
from __future__ import annotations

from ..errors import WikimemError
from ..parse import frontmatter as fm
from ..parse import generated
from ..qa.review import Refreshed
from .run import is_compiled


def recompile(ctx, path: str) -> Refreshed | None:
    """None when ``path`` has no compiled section (not compile's to refresh); else its compiled
    section written again from the sources as they are, and which sentences went and came."""
    try:
        if not is_compiled(ctx.files.read_note(path).text):
            return None
    except (WikimemError, OSError):
        return None
    from . import compile_vault
    before = _compiled_sentences(ctx, path)
    try:
        result = compile_vault(ctx, only_pages=[path])
    except WikimemError as exc:
        return Refreshed(path, None, "failed", str(exc))
    done = next((p for p in result.pages if p.path == path), None)
    if done is None or done.status == "failed":
        return Refreshed(path, None, "failed", done.notice if done else "no source speaks of it; nothing compiled")
    after = _compiled_sentences(ctx, path)
    removed = tuple(s for s in before if s not in after)
    added = tuple(s for s in after if s not in before)
    status = "refreshed" if done.status == "updated" else "unchanged"
    detail = (f"recompiled: {len(removed)} sentence{'s' if len(removed) != 1 else ''} went, {len(added)} came"
              if status == "refreshed" else "the compiled section reads as before")
    return Refreshed(path, path, status, detail, removed, added)


def _compiled_sentences(ctx, path: str) -> list[str]:
    try:
        text = ctx.files.read_note(path).text.replace("\r\n", "\n")
    except (WikimemError, OSError):
        return []
    _, body = fm.parse(text)
    found = generated.find(body, "compiled")
    return [line[2:] for line in (found.content.split("\n") if found else []) if line.startswith("- ")]
