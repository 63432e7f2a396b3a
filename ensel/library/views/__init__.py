"""Per-family preprocessing views (one-hot and standardised, native, target-encoded), fitted on a
training fold only."""
