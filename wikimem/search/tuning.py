"""Every measured ranking constant of search, with where it was measured.

The figures are in benchmarks/README.md (the section named beside each constant); the commands
that produce them are ``python benchmarks/heldout.py`` (the bundled examples/ vault, 50 held-aside
queries, MRR@10), ``python benchmarks/locomo.py`` (LoCoMo transcripts) and
``python benchmarks/tldr.py`` (tldr pages in English and Chinese). A constant a user may want to
set per vault is a setting instead (config.Settings: ``fusion``, ``rrf_k``, ``weight_lexical``,
``weight_vector``, ``candidates``, ``graph_weight``, ``graph_fanout``, ``speaker_boost``,
``speaker_strip``, ``neighbour_weight``, ``neighbour_span``; measured in the README's LoCoMo
table).

The modules that use a constant import it by name (``from .tuning import X``), so a test or a
benchmark's ``--set module.NAME=value`` patches the module that reads it (``evidence.CROSS_LEXICAL``,
``language.WEIGHT``, ``rankers.PASSAGE_SHARE``). Steps that were measured and did not help have been
removed, not left at 0: the page-support and title bonus (issue 17: +0.011 MRR@10 on tldr but
examples/ held-aside 0.895 -> 0.885; the title bonus 0.682 -> 0.683 on tldr) are in git history
(commit c0ff1bc, search/evidence.py ``page_evidence``) should a new data set call for them. So is
issue 52's page-centroid re-rank (each page's mean chunk vector against the query, for the best 10
pages of several chunks when the candidates are in one script): documentation set, tune half
MRR@10 0.715 -> 0.785, held-out half 0.835 -> 0.830 (Chinese hit@5 0.89 -> 0.86, English hit@1
unchanged at 0.81): it did not move rank 1 on the held-out half, so it is not kept (commit 9253b14,
search/rerank.py; README "Cross-script questions and a reranker").
"""
from __future__ import annotations

# -- vector side (rankers.py) ----------------------------------------------------------------------
# a chunk with passages scores (1 - share) x its whole-chunk cosine + share x its best passage's.
# The mean: measured on LoCoMo for turns (vector alone dR@10 0.712 -> 0.765, README "LoCoMo"),
# kept for notes (README "Session 5", held-aside and tldr).
PASSAGE_SHARE = 0.5

# -- fusion (fusion.candidates; issue 52, README "Hybrid below vector-only") -------------------------
# every candidate scored by both sides (convex hybrid): a vector candidate BM25 ranks below its top n
# gets its own BM25 score (BM25's list is read LEXICAL_DEPTH times deeper; the ORDER BY scores every
# match anyway), and a note chunk only BM25 found gets its vector score (its stored vectors) on the
# vector list's min-max scale, negative below its last (fusion.placed). False: a side gives 0 to what
# it did not list. Documentation set, tuning half, English hybrid MRR@10 0.761 -> 0.779 (vector
# alone 0.777); tldr, examples/ and LoCoMo unchanged (README "Hybrid below vector-only").
SCORE_BOTH_SIDES = True
LEXICAL_DEPTH = 10

# -- priors (priors.py; issue 52, README "Documentation vault") ---------------------------------------
# a note's chunk with fewer letters of its own text than this (headings left out) keeps that share
# of its vector score (chars / SHORT_CHARS); 0: off. Read for the SHORT_TOP best candidates.
SHORT_CHARS = 40
SHORT_TOP = 40
# a note's passage with fewer letters than this (its page title left out) is not the chunk's best
# passage: the best of its PASSAGE_LOOK nearest that has them is (rankers._with_content); 0: off.
SHORT_PASSAGE = 20
PASSAGE_LOOK = 3
CHECK_TOP = 2  # only the best CHECK_TOP x n chunks (n: the candidates asked for) are checked: a cost bound

# -- the language axis (language.py; README "tldr pages", language axis) ----------------------------
AXIS_WEIGHT = 1.0  # the whole component along the axis (0.5 / 0.7 kept less of the cross-lingual gain)
AXIS_SAMPLE = 3000  # chunks read (by vector id order) to estimate the two means
AXIS_MIN_GROUP = 5  # chunks of each script the sample must hold (an axis from 5 chunks kept most of the gain)
# a vault in one script searched in the other: the embedder's measured axis is applied to that
# search (language.axis_for; issue 52, README "Documentation vault"). False: only two-script vaults.
AXIS_CROSS_QUERY = True
LETTERS_PER_HAN = 5  # a Han character carries about as much meaning as a five-letter run of Latin

# the lexical side's share in hybrid fusion is scaled by how much of the query it can match at all
# (rankers.lexical_reach: the share of the query's letters in a script of which the index holds
# some of its terms), never below REACH_MIN; 1: off. Documentation set, Chinese questions about
# English pages: held-out hit@1 0.68 -> 0.71, MRR@10 0.749 -> 0.769; tldr, examples/, LoCoMo the
# same. Issue 52, README "Cross-script questions and a reranker".
REACH_MIN = 0.0

# -- language steps (steps.ImputeLexical, steps.TranslationsBelowOriginals; README "tldr pages") ----
# BM25's missing share for a candidate in another script is CROSS_LEXICAL x its vector share;
# on with the language axis and translations ranked below their originals.
CROSS_LEXICAL = 0.8
# Two candidates are one text in two languages when each is the other's nearest candidate across
# the scripts and their cosine (across the language axis) is at least this. Measured on
# multilingual-e5-small over tldr's 1,162 page pairs: 99 % of translations are at >= 0.937, and 95 %
# of the nearest non-translations below 0.938 (README "Session 7"). Above 1: off.
TWIN_SIMILARITY = 0.94

# -- graph step (steps.GraphPullIn; design.md section 5, README "LoCoMo" / held-aside) -------------
GRAPH_TOP_PAGES = 5  # the pages whose links are followed
STRONG_LINK = 0.5  # summed link share from the top pages needed to pull a page in

# -- one hit per page, repeats (fusion.select) -----------------------------------------------------
REPEAT_SPARE = 5  # candidates read beyond the limit so that dropping a repeated text still fills it
REPEAT_MIN_CHARS = 40  # a paragraph shorter than this (a heading, a one-word item) is alike by chance
REPEAT_MIN_TOTAL = 60  # and what repeats must add up to at least this much

# -- search operators (query_syntax.py wiring, __init__.py) -----------------------------------------
# candidates fetched from each ranker, times this, when text conditions (phrases, excludes, line:,
# section:) drop hits after ranking: so that ``limit`` is still met when possible. Not a ranking
# constant (a query without text conditions never uses it).
POST_FILTER_FETCH = 4
# a page condition (tag:, path:, file:, [property]) becomes an SQL list of the matching pages when
# it (or its complement) holds at most this many; beyond that, candidates are filtered after
# ranking (SQLite's default limit is 32,766 bound values).
MAX_SQL_PATHS = 20_000
