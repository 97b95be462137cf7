"""History kept small over a year of use: finished runs compacted into deflate blocks
(`compaction`, which first converts an earlier version's zstandard blocks: `recoding`; the
block format is the store's, `daemon/store/frames.py`) and the retention
policy (`retention`, `trimmer`). Each runs in the background in small write transactions
(docs/storage.md, "On disk" and "Retention"). Nothing else in the store imports this room.

May import: common, daemon.errors, daemon.store
"""
