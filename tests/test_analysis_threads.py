"""The analyzer is shared by every thread of a warm process (a server's requests, the watcher's
builds): stems must not depend on what other threads stem at the same time."""
from __future__ import annotations

import threading

from wikimem.stores import analysis


def test_stems_are_the_same_when_many_threads_stem_at_once(monkeypatch):
    words = [f"{stem}{suffix}" for stem in ("connect", "generalis", "relat", "condition", "hopeful", "rational",
                                           "electric", "adjust", "nation", "motor")
             for suffix in ("", "s", "ing", "ed", "ation", "ational", "ness", "fulness", "izer", "ically")]
    expected = {w: analysis._stem_word(w) for w in words}
    monkeypatch.setattr(analysis, "_STEMS", {})  # no memo: every call reaches a stemmer
    wrong: list[tuple[str, str]] = []
    failures: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(3000):
                w = words[(i * 7 + seed) % len(words)]
                got = analysis._stem_word(w)
                if got != expected[w]:
                    wrong.append((w, got))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            failures.append(exc)
    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [] and wrong == []
