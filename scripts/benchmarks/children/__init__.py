"""Processes of their own that a section starts beside the stack: bare reference servers,
connection floods, a stream opener and a Host with a bug. Each runs as `python -m` or by path."""
