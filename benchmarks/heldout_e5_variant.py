"""Run a retrieval benchmark with the e5 embedder on a chosen ONNX variant (issue 25: precision is
chosen by retrieval figures, not by agreement alone).

    python benchmarks/heldout_e5_variant.py int8                                  # heldout.py e5
    python benchmarks/heldout_e5_variant.py mixed locomo --embedder e5 --limit 3  # locomo.py
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

from wikimem.embed import onnx_e5

if __name__ == "__main__":
    variant, script = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "heldout")
    onnx_e5.DEFAULT_VARIANT = variant
    rest = sys.argv[3:] if len(sys.argv) > 2 else ["e5"]
    path = Path(__file__).with_name(f"{script}.py")
    sys.argv = [str(path), *rest]
    runpy.run_path(str(path), run_name="__main__")
