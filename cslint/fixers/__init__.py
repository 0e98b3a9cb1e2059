"""Fixes: the rewrites rules offer, and applying them to a file."""
