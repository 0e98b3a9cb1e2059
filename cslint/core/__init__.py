"""Core: the data every layer shares (settings, targets, sources, findings' report types, rule codes, noqa)."""
