"""Speaking A2A to the Host: the streaming JSON-RPC client (`client`) and the wire shapes
of protocol 0.3 and 1.x (`wire`). Imports only `common`, `daemon.errors` and `store.ids`.
"""
