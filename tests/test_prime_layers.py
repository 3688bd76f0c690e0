"""Issue 28 item 13: `prime` as a layered wake-up within a token budget.

identity (persona) and instructions first, then decisions and recent facts by date, then the
pages relevant to the project and prompt; each fact once; the budget filled greedily (an item that
does not fit is skipped, smaller ones after it still go in); tool-result and boilerplate turns of an
imported session are never briefed; what was left out for the budget is said."""
from __future__ import annotations

import json

import pytest

from conftest import golden
from wikimem.agent.prime import count_tokens
from wikimem.api import open_vault

from test_prime import _prime


def _memory(kind: str, created: str, text: str, importance: str | None = None) -> str:
    extra = f"importance: {importance}\n" if importance else ""
    return f"---\ntitle: {text[:60]}\ntype: memory\nkind: {kind}\ncreated: '{created}'\n{extra}---\n{text}\n"


FILES = {
    "SCHEMA.md": "# Schema\n\n## Domain\nA home lab: servers, backups and the family calendar app.\n",
    # names sort so that path order is not the wanted order: the persona sorts last
    "memories/zz-who.md": _memory("persona", "2026-01-05T09:00:00",
                                  "The user is Ana, a backend developer who runs a small home lab."),
    "memories/always-british.md": _memory("instruction", "2026-02-01T10:00:00", "Always answer in British English."),
    "memories/ask-first.md": _memory("instruction", "2026-02-03T10:00:00",
                                     "Never run a destructive command on the NAS without asking first."),
    "memories/backblaze.md": _memory("decision", "2026-03-10T12:00:00",
                                     "We decided to back up the NAS to Backblaze every night at 02:00."),
    "memories/caddy.md": _memory("decision", "2026-05-02T12:00:00",
                                 "We chose Caddy over nginx as the reverse proxy for the calendar app."),
    "memories/sqlite.md": _memory("decision", "2026-04-01T12:00:00",
                                  "We decided to keep the calendar app's data in SQLite, backed up with the NAS."),
    "memories/tests-first.md": _memory("instruction", "2026-02-05T10:00:00",
                                       "Run the calendar app's test suite before proposing any change to it."),
    "memories/a-old-fact.md": _memory("episodic", "2026-01-20T08:00:00", "The NAS has four 8 TB disks in RAID 5."),
    "memories/b-fact.md": _memory("episodic", "2026-04-11T08:00:00",
                                  "The calendar app syncs with the family's shared Google calendar every 15 minutes, "
                                  "and a failed sync is retried three times with a growing pause before it is "
                                  "reported in the morning digest that Ana reads with her coffee; two failures in a row also send a "
                                  "push notification to her phone, and a week of failures opens an issue in the "
                                  "calendar app's tracker with the sync log attached.", "high"),
    "memories/c-fact.md": _memory("episodic", "2026-06-01T08:00:00", "Ana's router is a MikroTik hAP ax3."),
    "memories/d-fact.md": _memory("episodic", "2026-06-20T08:00:00", "The UPS gives the rack 25 minutes of power."),
    "memories/old-rule.md": "---\ntitle: old\ntype: memory\nkind: instruction\nstatus: superseded\n---\n"
                            "Answer in American English.\n",
    "concepts/Backups.md": "# Backups\n\nThe NAS backups run nightly with restic; a restore test of the calendar "
                           "app database happens on the first Sunday of each month.\n",
    "projects/calendar-app.md": "# calendar-app\n\nThe calendar-app is a small Flask service that shows the "
                                "family's events and sends reminders.\n",
    "concepts/Restore drill.md": "# Restore drill\n\nTo check the backups, restore last night's snapshot of the "
                                 "calendar database into a scratch folder, open it with sqlite3 and compare the row "
                                 "counts of the events and reminders tables with the live database; then delete the "
                                 "scratch copy and note the result in the log.\n",
    "concepts/Gardening.md": "# Gardening\n\nTomatoes need sun and regular watering.\n",
    "raw/transcripts/2026-06-02 backups.md": (
        "---\ntitle: Backup restore check\ntype: source\nkind: transcript\nparticipants:\n- User\n- Assistant\n"
        "- Tool\n---\n# Backup restore check\n\n"
        "**Tool** (2026-06-02 10:00:05): [tool result] The file has been updated. backups restore calendar "
        "database ^t1\n"),
}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(FILES), embedder="fake")
    v.index()
    yield v
    v.close()


def _kinds(b):
    return [i.kind for i in b.items]


def test_layers_come_in_order_identity_first(vault):
    b = vault.prime_context(cwd="/home/ana/calendar-app", prompt="check the backups restore", budget_tokens=1500)
    kinds = _kinds(b)
    assert kinds[0] == "persona"  # was 4th: items came in path order
    order = ["persona", "instruction", "decision", "fact", "page"]
    assert kinds == sorted(kinds, key=order.index)
    assert set(kinds) == set(order)
    decisions = [i.path for i in b.items if i.kind == "decision"]
    assert decisions == ["memories/caddy.md", "memories/sqlite.md", "memories/backblaze.md"]  # newest first
    facts = [i.path for i in b.items if i.kind == "fact"]
    assert facts[0] == "memories/b-fact.md"  # importance: high outranks a newer fact
    assert facts[1:] == ["memories/d-fact.md", "memories/c-fact.md", "memories/a-old-fact.md"]
    assert "memories/old-rule.md" not in [i.path for i in b.items]
    assert "did not fit" not in b.to_text()


def test_each_fact_is_printed_once(vault):
    text = vault.prime_context(cwd="/home/ana/calendar-app", budget_tokens=1500).to_text()
    for fact in ("Always answer in British English", "The UPS gives the rack 25 minutes of power"):
        assert text.count(fact) == 1, text
    assert "always-british" not in text and "d-fact" not in text  # no slug repeating the fact


def test_a_small_budget_keeps_the_standing_orders_and_fills_up(vault):
    b = vault.prime_context(cwd="/home/ana/calendar-app", prompt="check the backups restore", budget_tokens=300)
    text = b.to_text()
    kinds = _kinds(b)
    assert kinds.count("persona") == 1 and kinds.count("instruction") == 3  # never dropped first
    assert b.tokens <= 300
    full = vault.prime_context(cwd="/home/ana/calendar-app", prompt="check the backups restore", budget_tokens=1500)
    left_out = [i for i in full.items if i.path not in {k.path for k in b.items}]
    assert left_out, "the 300-token budget should leave something out"
    assert "did not fit in 300 tokens" in text
    assert "No vault page clears the relevance bar" not in text  # pages did clear it; the budget left them out
    omitted = dict(b.omitted)
    said = " and ".join(f"{n} more {'fact' if k == 'fact' else 'page'}{'s' if n > 1 else ''}"
                        for k, n in omitted.items())
    assert f"({said} did not fit in 300 tokens" in text
    assert sum(omitted.values()) == len(left_out)
    # filled: no left-out item would have fitted in what is unused
    unused = 300 - b.tokens
    assert all(count_tokens(f"- {i.text}") > unused for i in left_out), (unused, left_out)


def test_an_item_that_does_not_fit_is_skipped_and_smaller_ones_still_go_in(vault):
    # Was: the first item that did not fit ended the briefing (two relevant facts out, 730 tokens unused)
    b = vault.prime_context(cwd="/home/ana/calendar-app", prompt="check the backups restore", budget_tokens=250)
    facts = [i.path for i in b.items if i.kind == "fact"]
    assert "memories/b-fact.md" not in facts  # the long, important one does not fit
    assert facts == ["memories/d-fact.md", "memories/c-fact.md", "memories/a-old-fact.md"]
    assert "1 more fact and 3 more pages did not fit in 250 tokens" in b.to_text()


def test_tool_results_are_never_briefed(vault):
    b = vault.prime_context(cwd="/home/ana/calendar-app", prompt="backups restore calendar database",
                            budget_tokens=1500)
    text = b.to_text()
    assert "[tool result]" not in text and "The file has been updated" not in text
    assert "raw/transcripts/2026-06-02 backups.md" not in [i.path for i in b.items]


@pytest.mark.parametrize("budget", [300, 1500])
def test_prime_golden(vault, budget):
    b = vault.prime_context(cwd="/home/ana/calendar-app", prompt="check the backups restore", budget_tokens=budget)
    golden(f"prime_layers_{budget}", {"items": [[i.kind, i.path] for i in b.items], "tokens": b.tokens,
                                      "text": b.to_text()})


def test_hook_for_a_missing_vault_exits_0_and_says_why(tmp_path):
    hook = _prime("--vault", str(tmp_path / "nope"), "--cwd", "/x/y", "--format", "claude-hook")
    assert hook.returncode == 0, hook.stderr
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "not found" in context and str(tmp_path / "nope") in context
    assert "relevance bar" not in context  # nothing was searched: it must not claim no page is relevant
