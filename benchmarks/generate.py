"""Generate a synthetic but realistic vault for benchmarks (deterministic for a given seed).

Notes are ~2 KB of Markdown with frontmatter, 3-5 headings, lists, an occasional code fence and
table, ~8 wikilinks per note (some with headings/aliases), tags, and ~10% Chinese paragraphs.
Words follow Zipf's law over a 20,000-word vocabulary, as natural text does, so term statistics
(and so lexical search cost) look like a real vault's.

    python benchmarks/generate.py /tmp/vault10k --notes 10000
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

EN = ("system memory graph search index vector note link page model data query result build cache chunk "
      "retrieval ranking fusion embedding cluster community leiden lexical semantic token analyzer segment "
      "merge latency throughput recall precision agent session turn summary evidence question answer").split()
ZH = "向量 检索 索引 分词 图谱 笔记 链接 社区 记忆 查询 结果 模型 数据 排序 融合 召回 精度 会话".split()
FOLDERS = ("entities", "concepts", "comparisons", "queries", "notes")


def _vocabulary(size: int = 20_000, seed: int = 1) -> list[str]:
    """The domain words first (most frequent), then pronounceable synthetic words."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    words = list(dict.fromkeys(EN))
    seen = set(words)
    while len(words) < size:
        w = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


VOCAB = _vocabulary()
# Zipf's law (exponent ~1.07, as in natural text): word r is drawn with weight 1 / r^1.07
_CUM = list(__import__("itertools").accumulate(1.0 / (r ** 1.07) for r in range(1, len(VOCAB) + 1)))


def word(rng: random.Random) -> str:
    return rng.choices(VOCAB, cum_weights=_CUM, k=1)[0]


def query_words(rng: random.Random, n: int) -> str:
    """Benchmark queries: words from the 2,000 commonest, so frequent terms are well represented."""
    return " ".join(rng.choice(VOCAB[:2000]) for _ in range(n))


def sentence(rng: random.Random, n_notes: int, links: list[int]) -> str:
    words = [word(rng) for _ in range(rng.randint(8, 18))]
    if links and rng.random() < 0.5:
        target = links.pop()
        form = rng.random()
        link = f"[[Note {target}]]" if form < 0.6 else (
            f"[[Note {target}|see {rng.choice(EN)}]]" if form < 0.8 else f"[[Note {target}#Section 1]]")
        words.insert(rng.randrange(len(words)), link)
    if rng.random() < 0.1:
        words.append("#" + rng.choice(EN))
    return " ".join(words).capitalize() + "."


def note_text(i: int, rng: random.Random, n_notes: int) -> str:
    links = [rng.randrange(n_notes) for _ in range(8)]
    parts = [f"---\ntitle: Note {i}\ntags: [{rng.choice(EN)}, {rng.choice(EN)}]\ncreated: 2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}\n---",
             f"# Note {i}", " ".join(sentence(rng, n_notes, links) for _ in range(2))]
    for s in range(rng.randint(3, 5)):
        parts.append(f"## Section {s + 1}")
        if rng.random() < 0.1:
            parts.append("".join(rng.choice(ZH) for _ in range(40)) + "。" + "".join(rng.choice(ZH) for _ in range(30)) + "。")
        parts.append(" ".join(sentence(rng, n_notes, links) for _ in range(rng.randint(2, 4))))
        if rng.random() < 0.3:
            parts.append("\n".join(f"- {sentence(rng, n_notes, links)}" for _ in range(3)))
        if rng.random() < 0.1:
            parts.append("```python\nprint('[[not a link]]')\n```")
        if rng.random() < 0.05:
            parts.append("| a | b |\n|---|---|\n| x | [[Note 1\\|one]] |")
    return "\n\n".join(parts) + "\n"


def generate(root: Path, notes: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    for i in range(notes):
        folder = root / FOLDERS[i % len(FOLDERS)]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"Note {i}.md").write_text(note_text(i, rng, notes), encoding="utf-8")
    return root


def source_vault(root: Path, notes: int = 10_000) -> Path:
    """The generated vault the 10k benchmarks copy from: written on first use (a fresh machine has
    none), reused after."""
    root = Path(root)
    if not root.exists():
        generate(root.with_name(root.name + ".partial"), notes)
        root.with_name(root.name + ".partial").rename(root)  # a killed run leaves no half vault behind
    return root


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    generate(args.root, args.notes, args.seed)
    print(f"wrote {args.notes} notes to {args.root}")
