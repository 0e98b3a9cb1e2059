"""Runtime logs turned into events at the project's lines (`cslint check --runtime-log FILE...`).

Kept free of torch: a log is text, read on any machine. One module per format; `read.py` picks the format of
each file; `match.py` puts each event next to the static findings at its line.
"""
