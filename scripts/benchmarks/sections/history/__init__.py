"""Sections on a stored history: big reads, a year's history (reads, search, writes),
search, compare, and /health during the largest import."""
