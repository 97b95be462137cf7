"""What a Host imports from us (the daemon never does): `capture` (the capture channel, the
request envelope and `LoopbackGuard`, standard library only) and `task_store`
(`StreamingTaskStore`, for a2a-sdk Hosts that stream long outputs), and `otel` (a Host's own
OpenTelemetry spans joining the run's trace, when asked and installed).

May import: nothing
"""
