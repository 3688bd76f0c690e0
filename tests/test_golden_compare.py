"""The golden-file comparison holds across CPUs and BLAS builds but still catches a real change."""
from conftest import golden_difference


def test_scores_that_differ_in_the_eighth_digit_match():
    assert golden_difference({"fused": 1.0590921}, {"fused": 1.05909212}) is None
    assert golden_difference([{"score": 0.5}], [{"score": 0.50000031}]) is None


def test_a_score_that_really_moved_is_a_difference():
    assert golden_difference({"fused": 1.0590921}, {"fused": 1.0600921}) == "$.fused: 1.0590921 != 1.0600921"


def test_ranks_compare_exactly():
    expected = [{"path": "a.md", "score": 0.9}, {"path": "b.md", "score": 0.8}]
    swapped = [{"path": "b.md", "score": 0.8}, {"path": "a.md", "score": 0.9}]
    assert golden_difference(expected, swapped) == "$[0].path: 'a.md' != 'b.md'"


def test_types_keys_and_lengths_compare_exactly():
    assert golden_difference({"n": 1}, {"n": 2}) is not None
    assert golden_difference({"n": 1}, {"n": True}) is not None
    assert golden_difference({"a": 1}, {"b": 1}) is not None
    assert golden_difference([1, 2], [1]) is not None
    assert golden_difference("x", "y") is not None
    assert golden_difference(None, 0.0) is not None
