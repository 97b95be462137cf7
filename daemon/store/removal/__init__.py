"""Deleting history at a year's size: "delete all" a step at a time, each step one short
write transaction (`deletion`), and the pages a deletion freed given back to the
filesystem by incremental vacuum (`space`, which the retention policy uses too)
(docs/storage.md, "Deletion" and "Retention").

May import: common, daemon.errors, daemon.store.database, daemon.store.history
"""
