"""Memories proposed from an imported conversation (``remember --from``): extractively, a user's
sentences that state a preference, a decision, an instruction or a fact about a person or project
(the cues below), or by a language model citing the turns; each proposal goes through ``remember``.
Split from memory.py, which keeps the one-fact path.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from ..errors import UsageError
from ..parse import parse_page
from . import secrets
from .memory import RememberResult, remember

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Proposal:
    fact: str
    kind: str
    speaker: str
    turn: str | None  # block id of the turn
    cite: str  # [[file#^turn-id]]


_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")
# (kind, pattern) in priority order; patterns look at one sentence of a user's turn.
CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "always" / "never" tell the agent something only as a command ("Always run ...", "you should never ..."):
    # "I'll never forget that trip" and "she always makes me laugh" are chat, not instructions (LoCoMo's
    # conversations made dozens of such "instruction" memories, which prime then briefs every session with)
    ("instruction", re.compile(r"\b(?:from now on|in future|going forward|please (?:always|never|don't|do not)|"
                               r"don't ever|do not ever)\b|"
                               r"(?<!\bi\s)(?<!\bi'll\s)(?<!\bwe'll\s)(?<!\bwill\s)\b(?:make sure to|remember to)\b|"
                               r"^\W*(?:(?:ok|okay|so|and|also|but|please)\W+)*(?:always|never)\b"
                               r"(?!\s+(?:mind|been|had|seen|heard|thought|felt|knew|saw|did|was|were|ever|here|there|up|"
                               r"good|great|happy|glad|nice|fun|a|an|the|so|such|\w+ing)\b)|"
                               r"\b(?:you|we)\s+(?:should|must|need to|have to|ought to)\s+(?:always|never)\b|"
                               r"(?<![我他她])(?:以后|今后)[^，。！？,.!?]{0,6}?(?:所有|都|请|要|别|不要|一律|统一|每次|记得)|^(?:请)?(?:总是|始终|记得)|"
                               r"请(?:总是|始终|记得)|(?:你|你们|我们)(?:要|应该|必须)(?:总是|始终)|永远不要|不要再|务必",
                               re.I)),
    ("decision", re.compile(r"\b(?:we(?:'ve| have)? decided|i(?:'ve| have)? decided|let's go with|we'll go with|"
                            r"we will use|we'll use|we chose|i chose|the decision is|decided to|settled on)\b|"
                            r"决定|就用|定了|选定|敲定", re.I)),
    ("persona", re.compile(r"\b(?:i (?:really )?(?:prefer|like|love|hate|dislike|enjoy|can't stand)|i don't like|"
                           r"my favou?rite|i(?:'m| am) (?:a|an|allergic|vegetarian|vegan|based)|my name is|"
                           r"i live in|i work (?:at|for|on|as)|my (?:wife|husband|partner|son|daughter|kids?|"
                           r"dog|cat|team|manager|boss)|i usually|i always use)\b|"
                           r"我(?:更|比较|很|不)?喜欢|我讨厌|我叫|我住在|我在.{1,12}工作|我是|我的(?:妻子|丈夫|儿子|女儿|"
                           r"孩子|狗|猫|团队|老板)|我对.{1,8}过敏|我(?:通常|一般|习惯)", re.I)),
)
_QUESTION = re.compile(r"[?？]\s*$|^(?:what|how|why|when|where|who|which|can|could|would|should|do|does|is|are)\b",
                       re.I)
ASSISTANT_NAMES = {"assistant", "ai", "bot", "claude", "chatgpt", "gpt", "model", "system", "tool"}


def classify_sentence(sentence: str) -> str | None:
    """The memory kind a user's sentence states, or None (questions never are)."""
    s = sentence.strip()
    if len(s) < 6 or _QUESTION.search(s):
        return None
    for kind, pattern in CUES:
        if pattern.search(s):
            return kind
    return None


def _third_person(sentence: str, speaker: str) -> str:
    """Extractive, lightly rewritten so the memory reads on its own: "I prefer vim" said by
    Alice -> "Alice: I prefer vim" (no paraphrase that could change the meaning)."""
    return f"{speaker}: {sentence.strip()}"


def propose_from_transcript(ctx, rel: str) -> list[Proposal]:
    from ..parse.chunk import transcript_turns
    note = ctx.files.read_note(rel)
    page = parse_page(rel, note.text, note.sha256)
    stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    out: list[Proposal] = []
    seen: set[str] = set()
    turns = transcript_turns(page.body)
    if not turns:  # an article or a wiki page: "no memories found in that conversation" misled
        raise UsageError(f"{rel}: not a conversation (no '**Speaker**: text' turns); --from reads a transcript "
                         "that `wikimem ingest --kind transcript` imported into raw/transcripts/")
    for turn in turns:
        if turn.speaker.strip().casefold() in ASSISTANT_NAMES:
            continue
        said = re.sub(r"\s\^[A-Za-z0-9-]+\s*$", "", page.body[turn.said:turn.end]).strip()
        for m in _SENTENCE.finditer(said):
            sentence = " ".join(m.group(0).split())
            kind = classify_sentence(sentence)
            if kind is None or sentence.casefold() in seen:
                continue
            seen.add(sentence.casefold())
            cite = f"[[{stem}#^{turn.block}]]" if turn.block else f"[[{stem}]]"
            out.append(Proposal(_third_person(sentence, turn.speaker), kind, turn.speaker, turn.block, cite))
    return out


LLM_SYSTEM = ("You find what is worth remembering in a conversation: stated preferences, decisions, instructions, "
              "and facts about people and projects. Each turn starts with its id in square brackets. Reply with one "
              "line per memory, exactly in the form: [turn-id] kind: fact. The kind is one of persona, episodic, "
              "instruction, decision. The fact is one self-contained sentence that says only what the turn says, "
              "naming the speaker instead of I. If nothing is worth remembering, reply NONE.")
_LLM_LINE = re.compile(r"^\s*[-*]?\s*\[\^?([A-Za-z0-9-]+)\]\s*(persona|episodic|instruction|decision)\s*:\s*(.+?)\s*$",
                       re.I | re.M)


def propose_with_llm(ctx, rel: str, *, llm: str, model: str, url: str = "", api_key: str = "",
                     timeout: float = 60.0) -> list[Proposal]:
    """Proposals written by a language model from the turns (``wikimem.llm``). Lines naming a
    turn that does not exist are dropped: every memory must cite a real turn."""
    from ..parse.chunk import transcript_turns
    from ..llm import complete
    note = ctx.files.read_note(rel)
    page = parse_page(rel, note.text, note.sha256)
    stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    turns = {t.block: t for t in transcript_turns(page.body) if t.block}
    if not turns:
        raise UsageError(f"{rel}: not a conversation (no '**Speaker**: text' turns with ids); --from reads a "
                         "transcript that `wikimem ingest --kind transcript` imported into raw/transcripts/")
    lines = [f"[{b}] {t.speaker}: {' '.join(page.body[t.said:t.end].split())}" for b, t in turns.items()]
    messages = [{"role": "system", "content": LLM_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]
    reply = complete(llm, model, url, api_key, messages, timeout)
    out = []
    for block, kind, fact in _LLM_LINE.findall(reply):
        if block not in turns:
            log.info("llm proposal cites unknown turn %s; dropped", block)
            continue
        out.append(Proposal(fact, kind.lower(), turns[block].speaker, block, f"[[{stem}#^{block}]]"))
    return out


def remember_from_transcript(ctx, rel: str, *, dry_run: bool = False, llm: str | None = None, llm_model: str = "",
                             llm_url: str = "", llm_api_key: str = "", timeout: float = 60.0) -> list[RememberResult]:
    """Propose memories from ``rel`` (extractively, or with ``llm`` when given: a failing model
    falls back to the extractive proposals with a warning) and run each through ``remember``
    (dry run: nothing written)."""
    rel = rel.replace("\\", "/")
    notice = None
    if llm:
        from ..llm import LLMError
        try:
            proposals = propose_with_llm(ctx, rel, llm=llm, model=llm_model, url=llm_url, api_key=llm_api_key,
                                         timeout=timeout)
        except LLMError as exc:
            notice = f"{exc}; proposals made extractively instead"
            proposals = propose_from_transcript(ctx, rel)
    else:
        proposals = propose_from_transcript(ctx, rel)
    results = []
    for p in proposals:
        try:
            r = remember(ctx, p.fact, kind=p.kind, source=p.cite, dry_run=dry_run)
        except secrets.SecretError as exc:
            r = RememberResult("refused", "", "", p.kind, warnings=[str(exc)], source=p.cite)
        if notice:
            r.warnings.insert(0, notice)
        results.append(r)
    return results
