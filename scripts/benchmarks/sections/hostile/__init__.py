"""Sections on hostile inputs: the daemon and the front's door under bad Hosts, bodies
and local floods."""
