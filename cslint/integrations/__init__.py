"""Doors into cslint from other tools: the flake8 plugin and the project cache it shares across files."""
