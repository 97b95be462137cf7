"""Pure data work on runs: parts validation, redaction, JSON depth and diff, run compare,
and bundle JSON (parsing and dumping a bundle's bytes, what a request selects, validation).
No I/O and no SQL here: the bundle import and export SQL is the store's. At the bottom of
the daemon, beside `a2a`.

May import: common, daemon.errors
"""
