"""Owns the user's project process (the Host): spawn, readiness, stop, logs.

`supervisor` is the lifecycle (the states, their table and `Lifecycle` are in `state`:
the state kept, each move told to guarded listeners, actions run one at a time); `launch`
starts a generation (its config, port, token, readiness) and stops and reaps it; `spawn`
starts its process (cold, or forked from a warm parent); each helper has one job:
`environment` (what the child starts with), `process` (spawn and stop a process group),
`readiness`, `watch` (the watcher, file fingerprints and whether a change warrants a
restart), `crash_policy` (back-off and crashloop), `orphans` (the generation record,
reaping it and the whole Host tree by its environment marker), `lifeline` (the process
that ends that tree when the daemon dies, and the daemon's end of its lifeline pipe),
`logs`, `capture` (the daemon's end of the capture channel). `host_side` is what a Host
imports from us: the capture channel's other end and `StreamingTaskStore`.

May import: common, host_manager.spawn, host_manager.watch
"""
