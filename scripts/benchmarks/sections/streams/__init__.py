"""Sections on the write, replay and live paths: store appends, front vs direct, delta
latency, run creation, request relay, one long live stream, fan-out and a slow client."""
