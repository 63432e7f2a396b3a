"""Benchmarks of ensel against baselines and peers (run as ``python -m benchmarks.bench_<name>``).

OpenMP threads sleep instead of spinning while they wait (``OMP_WAIT_POLICY=PASSIVE`` unless
set already): this package is imported before scikit-learn, LightGBM or XGBoost load their
OpenMP runtime, which reads the variable once. On a shared, oversubscribed machine spinning
threads slow each other down by up to 40x (a 200-round LightGBM fit on 372 rows with 2 threads:
24 s spinning, 0.65 s passive, 0.3 s with 1 thread, at a load average of 14 on 2 cores).
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
