"""The front: a thin loopback HTTP server that relays the Playground API to the daemon.

May import: common
"""
