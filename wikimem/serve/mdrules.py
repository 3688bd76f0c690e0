"""Obsidian's Markdown beyond CommonMark, as markdown-it-py rules for the web page: callouts
(``> [!tip]- Title``), highlights (``==x==``), tasks (``- [ ]``/``- [x]``), footnotes (``[^1]``,
``[^1]: ...`` and inline ``^[...]``) and math (``$x$``, ``$$...$$``, kept as text: no script may
run on the page to typeset it, so it is shown verbatim in its own box rather than mangled as
emphasis).

Each rule makes tokens; the render rules here write them with every value escaped. Nothing reads
raw HTML: the renderer has ``html`` off, so a note's ``<script>`` stays text.
"""
from __future__ import annotations

import html
import re

from markdown_it.token import Token

CALLOUT = re.compile(r"^\[!([^\]\s]+)\]([+-]?)[ \t]*([^\n]*)(?:\n|$)")
TASK = re.compile(r"^\[(.)\](?=\s|$)\s?")
FOOTNOTE_DEF = re.compile(r"\[\^([^\]\s]+)\]:")
# callout type -> its family (the colour); Obsidian's own names and aliases
FAMILIES = {"note": "note", "info": "note", "todo": "note", "abstract": "abstract", "summary": "abstract",
            "tldr": "abstract", "tip": "tip", "hint": "tip", "important": "tip", "success": "success",
            "check": "success", "done": "success", "question": "question", "help": "question", "faq": "question",
            "warning": "warning", "caution": "warning", "attention": "warning", "failure": "danger",
            "fail": "danger", "missing": "danger", "danger": "danger", "error": "danger", "bug": "danger",
            "example": "example", "quote": "quote", "cite": "quote"}


def esc(value) -> str:
    return html.escape(str(value), quote=True)


# -- callouts ----------------------------------------------------------------------------------------
def callouts(state) -> None:
    """Core rule (after ``block``, before ``inline``): a blockquote whose first line is
    ``[!type]`` (``+``/``-`` fold, then a title) becomes a callout; its first line leaves the text."""
    tokens = state.tokens
    openers: list[Token | None] = []
    for i, tok in enumerate(tokens):
        if tok.type == "blockquote_open":
            found = None
            if i + 2 < len(tokens) and tokens[i + 1].type == "paragraph_open" and tokens[i + 2].type == "inline":
                found = CALLOUT.match(tokens[i + 2].content)
            if found is None:
                openers.append(None)
                continue
            kind = re.sub(r"[^a-z0-9-]+", "-", found.group(1).lower()).strip("-") or "note"
            tok.type, tok.tag = "callout_open", "div"
            tok.meta = {"kind": kind, "fold": found.group(2), "title": found.group(3).strip()}
            inline = tokens[i + 2]
            inline.content = inline.content[found.end():]
            if not inline.content.strip():  # only the title line: no empty paragraph
                tokens[i + 1].hidden = tokens[i + 3].hidden = True
            openers.append(tok)
        elif tok.type == "blockquote_close":
            opener = openers.pop() if openers else None
            if opener is not None:
                tok.type, tok.tag, tok.meta = "callout_close", "div", opener.meta


def render_callout_open(self, tokens, idx, options, env) -> str:
    meta = tokens[idx].meta
    kind = meta["kind"]
    family = FAMILIES.get(kind, "note")
    title = meta["title"]
    shown = self.md_inline(title, env) if title else esc(kind.replace("-", " ").capitalize())
    cls = f'callout callout-{esc(family)}" data-callout="{esc(kind)}'
    if meta["fold"]:
        opened = " open" if meta["fold"] == "+" else ""
        return f'<details class="{cls}"{opened}><summary class="callout-title">{shown}</summary><div class="callout-content">\n'
    return f'<div class="{cls}"><div class="callout-title">{shown}</div><div class="callout-content">\n'


def render_callout_close(self, tokens, idx, options, env) -> str:
    return "</div></details>\n" if tokens[idx].meta.get("fold") else "</div></div>\n"


# -- highlights and math (inline) ------------------------------------------------------------------------
def highlight(state, silent: bool) -> bool:
    """``==text==`` -> <mark>; the text inside is parsed as inline Markdown."""
    src, pos, end_max = state.src, state.pos, state.posMax
    if not src.startswith("==", pos) or pos + 2 >= end_max or src[pos + 2] in " \t\n=":
        return False
    end = src.find("==", pos + 3, end_max)
    if end < 0 or src[end - 1] in " \t\n":
        return False
    if not silent:
        state.push("mark_open", "mark", 1)
        old = state.posMax
        state.pos, state.posMax = pos + 2, end
        state.md.inline.tokenize(state)
        state.posMax = old
        state.push("mark_close", "mark", -1)
    state.pos = end + 2
    return True


def math_inline(state, silent: bool) -> bool:
    """``$x$`` (not ``$ 5``, not ``$5 and $6``) and ``$$x$$`` on one line, kept verbatim."""
    src, pos, end_max = state.src, state.pos, state.posMax
    if src[pos] != "$":
        return False
    double = src.startswith("$$", pos)
    start = pos + (2 if double else 1)
    if start >= end_max or src[start] in " \t\n$":
        return False
    end = start
    while True:
        end = src.find("$$" if double else "$", end, end_max)
        if end < 0:
            return False
        if src[end - 1] == "\\":
            end += 1
            continue
        break
    if src[end - 1] in " \t\n" or (not double and end + 1 < len(src) and src[end + 1].isdigit()):
        return False
    if not silent:
        token = state.push("math_inline", "", 0)
        token.content = src[start:end]
        token.markup = "$$" if double else "$"
    state.pos = end + (2 if double else 1)
    return True


def math_block(state, start_line: int, end_line: int, silent: bool) -> bool:
    """``$$`` on its own line opens a display formula, up to the line ending with ``$$``."""
    begin = state.bMarks[start_line] + state.tShift[start_line]
    first = state.src[begin:state.eMarks[start_line]]
    if state.sCount[start_line] - state.blkIndent >= 4 or not first.startswith("$$"):
        return False
    body = first[2:]
    line = start_line
    if body.rstrip().endswith("$$") and body.strip():
        body = body.rstrip()[:-2]
    else:
        lines = [body]
        while True:
            line += 1
            if line >= end_line:
                return False  # never closed: a paragraph
            text = state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]]
            if text.rstrip().endswith("$$"):
                lines.append(text.rstrip()[:-2])
                break
            lines.append(text)
        body = "\n".join(lines)
    if silent:
        return True
    token = state.push("math_block", "div", 0)
    token.content, token.map, token.block = body.strip("\n"), [start_line, line + 1], True
    state.line = line + 1
    return True


def render_math_inline(self, tokens, idx, options, env) -> str:
    return f'<span class="math" title="TeX">{esc(tokens[idx].content)}</span>'


def render_math_block(self, tokens, idx, options, env) -> str:
    return f'<div class="math math-block" title="TeX">{esc(tokens[idx].content)}</div>\n'


# -- tasks --------------------------------------------------------------------------------------------------
def tasks(state) -> None:
    """Core rule (after ``inline``): a list item starting ``[ ]`` / ``[x]`` gets a checkbox."""
    tokens = state.tokens
    for i in range(2, len(tokens)):
        tok = tokens[i]
        if tok.type != "inline" or tokens[i - 1].type != "paragraph_open" or tokens[i - 2].type != "list_item_open":
            continue
        found = TASK.match(tok.content)
        if not found or not tok.children or tok.children[0].type != "text" \
                or not tok.children[0].content.startswith(found.group(0).rstrip()):
            continue
        first = tok.children[0]
        first.content = first.content[len(found.group(0)):] if first.content.startswith(found.group(0)) \
            else first.content[len(found.group(0).rstrip()):]
        box = Token("task_box", "input", 0)
        box.meta = {"checked": found.group(1) != " ", "mark": found.group(1)}
        tok.children.insert(0, box)
        tokens[i - 2].attrJoin("class", "task" + (" done" if box.meta["checked"] else ""))


def render_task_box(self, tokens, idx, options, env) -> str:
    checked = " checked" if tokens[idx].meta["checked"] else ""
    return f'<input type="checkbox" class="task-box" disabled{checked} data-task="{esc(tokens[idx].meta["mark"])}"> '


# -- footnotes -------------------------------------------------------------------------------------------------
def _notes(env) -> dict:
    return env.setdefault("footnotes", {"defs": {}, "order": [], "inline": []})


def footnote_def(state, start_line: int, end_line: int, silent: bool) -> bool:
    """``[^label]: text`` with its indented continuation lines (a block rule)."""
    start = state.bMarks[start_line] + state.tShift[start_line]
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    found = FOOTNOTE_DEF.match(state.src, start, state.eMarks[start_line])
    if not found:
        return False
    if silent:
        return True
    label = found.group(1)
    _notes(state.env)["defs"].setdefault(label, None)
    token = state.push("footnote_def_open", "", 1)
    token.meta = {"label": label}
    old = (state.bMarks[start_line], state.tShift[start_line], state.sCount[start_line], state.parentType)
    pos = after = found.end()
    offset = initial = state.sCount[start_line] + after - start
    while pos < state.eMarks[start_line] and state.src[pos] in " \t":
        offset += 4 - offset % 4 if state.src[pos] == "\t" else 1
        pos += 1
    state.tShift[start_line] = pos - after
    state.sCount[start_line] = offset - initial
    state.bMarks[start_line] = after
    state.blkIndent += 4
    state.parentType = "footnote"
    if state.sCount[start_line] < state.blkIndent:
        state.sCount[start_line] += state.blkIndent
    state.md.block.tokenize(state, start_line, end_line)
    state.blkIndent -= 4
    state.bMarks[start_line], state.tShift[start_line], state.sCount[start_line], state.parentType = old
    state.push("footnote_def_close", "", -1)
    return True


def footnote_ref(state, silent: bool) -> bool:
    """``[^label]`` of a defined footnote, and an inline footnote ``^[text]``."""
    src, pos, end_max = state.src, state.pos, state.posMax
    notes = _notes(state.env)
    if src.startswith("^[", pos):
        end = state.md.helpers.parseLinkLabel(state, pos + 1)
        if end < 0:
            return False
        if not silent:
            notes["inline"].append(src[pos + 2:end])
            label = f"\x00inline{len(notes['inline'])}"
            notes["defs"][label] = None
            _ref(state, notes, label)
        state.pos = end + 1
        return True
    if not src.startswith("[^", pos):
        return False
    end = src.find("]", pos + 2, end_max)
    label = src[pos + 2:end] if end > 0 else ""
    if not label or " " in label or label not in notes["defs"]:
        return False
    if not silent:
        _ref(state, notes, label)
    state.pos = end + 1
    return True


def _ref(state, notes: dict, label: str) -> None:
    if label not in notes["order"]:
        notes["order"].append(label)
    token = state.push("footnote_ref", "sup", 0)
    token.meta = {"label": label, "n": notes["order"].index(label) + 1}


def footnote_tail(state) -> None:
    """Core rule (after ``inline``): definitions leave the text and gather in one list at the end."""
    notes = state.env.get("footnotes")
    if state.inlineMode or not notes or not notes["defs"]:
        return
    kept: list[Token] = []
    current: list[Token] | None = None
    label = None
    for tok in state.tokens:
        if tok.type == "footnote_def_open":
            current, label = [], tok.meta["label"]
            continue
        if tok.type == "footnote_def_close":
            if notes["defs"].get(label) is None:
                notes["defs"][label] = current
            current = None
            continue
        (current if current is not None else kept).append(tok)
    order = notes["order"] + [k for k in notes["defs"] if k not in notes["order"] and not k.startswith("\x00")]
    if order:
        tail = Token("footnote_block", "section", 0)
        tail.meta = {"order": order}
        kept.append(tail)
    state.tokens = kept


def render_footnote_ref(self, tokens, idx, options, env) -> str:
    n = tokens[idx].meta["n"]
    prefix = env.get("prefix", "")
    return f'<sup class="footnote-ref"><a href="#{prefix}fn{n}" id="{prefix}fnref{n}">[{n}]</a></sup>'


def render_footnote_block(self, tokens, idx, options, env) -> str:
    notes, prefix = env["footnotes"], env.get("prefix", "")
    items = []
    for n, label in enumerate(tokens[idx].meta["order"], 1):
        if label.startswith("\x00inline"):
            body = self.md_inline(notes["inline"][int(label[len("\x00inline"):]) - 1], env)
        else:
            body = self.render(notes["defs"].get(label) or [], options, env)
        back = f' <a href="#{prefix}fnref{n}" class="footnote-back" aria-label="back">↩</a>' \
            if label in notes["order"] else ""
        if back and body.endswith("</p>\n"):  # the way back ends the note's last line, not a line of its own
            body, back = body[:-len("</p>\n")] + back + "</p>\n", ""
        items.append(f'<li id="{prefix}fn{n}">{body}{back}</li>')
    return f'<section class="footnotes"><hr><ol>{"".join(items)}</ol></section>\n'


def install(md) -> None:
    """Add every rule above to ``md`` (a MarkdownIt with html off)."""
    md.renderer.md_inline = md.renderInline  # callout titles and inline footnotes are inline Markdown
    md.core.ruler.after("block", "wm_callouts", callouts)
    md.core.ruler.push("wm_tasks", tasks)
    md.core.ruler.push("wm_footnote_tail", footnote_tail)
    md.block.ruler.before("reference", "wm_footnote_def", footnote_def,
                          {"alt": ["paragraph", "reference"]})
    md.block.ruler.before("fence", "wm_math_block", math_block, {"alt": ["paragraph", "reference", "blockquote", "list"]})
    md.inline.ruler.before("emphasis", "wm_highlight", highlight)
    md.inline.ruler.before("escape", "wm_math", math_inline)
    md.inline.ruler.before("link", "wm_footnote_ref", footnote_ref)
    for name, fn in (("callout_open", render_callout_open), ("callout_close", render_callout_close),
                     ("math_inline", render_math_inline), ("math_block", render_math_block),
                     ("task_box", render_task_box), ("footnote_ref", render_footnote_ref),
                     ("footnote_block", render_footnote_block)):
        md.add_render_rule(name, fn)
