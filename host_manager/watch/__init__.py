"""Should the Host restart? The project's files as the supervisor sees them: `watcher` (the
watchfiles loop, batched and debounced), `fingerprint` (which files count and their digests,
`WatchRules`) and `change_policy` (whether a change warrants a restart, and which restart a
run's own save already made).

May import: common, host_manager.errors, host_manager.state
"""
