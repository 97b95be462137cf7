"""Owns the user's project process (the Host): spawn, readiness, stop, logs."""
