"""Engine: a check from files to located findings (discovery, target inference, selection, the runner and
checker, the incremental session)."""
