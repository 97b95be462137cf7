"""Speaking A2A to the Host: the streaming JSON-RPC client (`client`) and the wire shapes
of protocol 0.3 and 1.x (`wire`). At the bottom of the daemon, beside `data`.

May import: common, daemon.errors
"""
