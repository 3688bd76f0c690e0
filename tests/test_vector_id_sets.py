"""The sorted int64 id sets of stores/vectors.py and the manifest's wanted_ids over the whole int64 range:
empty sets, duplicates, the extremes, held ids (HELD_BIT), parsed exactly from SQLite."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem.stores.local.manifest import LocalManifest
from wikimem.stores.vectors import HELD_BIT, id_difference, sorted_ids

pytestmark = pytest.mark.adversarial


I64_MIN, I64_MAX = -2**63, 2**63 - 1


def test_sorted_ids_edges():
    assert sorted_ids([]).tolist() == [] and sorted_ids([]).dtype == np.int64
    assert sorted_ids(()).tolist() == []
    assert sorted_ids([5]).tolist() == [5]
    assert sorted_ids([3, -1, 3, -1, 0, I64_MIN, I64_MAX, I64_MAX]).tolist() == [I64_MIN, -1, 0, 3, I64_MAX]
    assert sorted_ids([2**62 - 1, HELD_BIT | 7, 7, HELD_BIT | 7]).tolist() == [7, HELD_BIT | 7, 2**62 - 1]
    assert sorted_ids(np.array([9, 9, 9], dtype=np.int32)).tolist() == [9]


def test_id_difference_edges():
    empty = sorted_ids([])
    a = sorted_ids([-5, 0, 7, I64_MAX])
    assert id_difference(empty, a).tolist() == []
    assert id_difference(a, empty).tolist() == a.tolist()
    assert id_difference(a, a).tolist() == []
    assert id_difference(a, sorted_ids([I64_MAX])).tolist() == [-5, 0, 7]
    assert id_difference(a, sorted_ids([I64_MIN, 8])).tolist() == a.tolist()
    assert id_difference(sorted_ids([I64_MIN, I64_MAX]), sorted_ids([0])).tolist() == [I64_MIN, I64_MAX]
    # every a id above every b id, and below: the clamp at the end of b must not match by accident
    assert id_difference(sorted_ids([10, 11]), sorted_ids([1, 2])).tolist() == [10, 11]
    assert id_difference(sorted_ids([1, 2]), sorted_ids([10, 11])).tolist() == [1, 2]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(I64_MIN, I64_MAX), max_size=30), st.lists(st.integers(I64_MIN, I64_MAX), max_size=30),
       st.lists(st.integers(-3, 3), max_size=10))
def test_id_sets_over_the_whole_int64_range(a, b, shared):
    a, b = a + shared + shared, b + shared
    sa, sb = sorted_ids(a), sorted_ids(b)
    assert sa.tolist() == sorted(set(a)) and sb.tolist() == sorted(set(b))
    assert id_difference(sa, sb).tolist() == sorted(set(a) - set(b))
    assert id_difference(sb, sa).tolist() == sorted(set(b) - set(a))


def test_wanted_ids_parses_held_ids_exactly():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks (vid INTEGER)")
    db.execute("CREATE TABLE passages (pid INTEGER)")
    assert LocalManifest(db).wanted_ids().tolist() == []
    vids = [1, 2**60 - 1, 123456789012345678]
    pids = [HELD_BIT | (2**60 - 1), HELD_BIT | 1, 2**62 - 1, 987654321098765432, 987654321098765432]
    db.executemany("INSERT INTO chunks VALUES (?)", [(v,) for v in vids])
    assert LocalManifest(db).wanted_ids().tolist() == sorted(vids)  # passages empty: its NULL group_concat is skipped
    db.executemany("INSERT INTO passages VALUES (?)", [(p,) for p in pids])
    assert LocalManifest(db).wanted_ids().tolist() == sorted(set(vids) | set(pids))
