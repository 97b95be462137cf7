"""History kept small over a year of use: finished runs compacted into zstandard blocks
(`blocks`, `compaction`) and the retention policy (`retention`, `trimmer`). Each runs in
the background in small write transactions (docs/storage.md, "On disk" and "Retention").
"""
