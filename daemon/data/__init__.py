"""Pure data work on runs: parts validation, redaction, JSON depth and diff, run compare,
and reproduction bundles (export, validation, import). No HTTP here; `bundles` is the only
module that touches the store.
"""
