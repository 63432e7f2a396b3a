"""Running the planned runs: one run over its folds (siblings, out-of-fold predictions, calibrated
variants) and the backends that run many (the local process pool and its worker, dask)."""
