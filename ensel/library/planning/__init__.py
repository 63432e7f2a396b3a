"""Planning a build before it runs: the one budget (deadline, reserve, per-run caps, memory
ceiling, pace), the anytime order, each run's estimated fit time, memory and predict cost, the
plan of which runs to train, and the growth of new runs where the ensemble gains."""
