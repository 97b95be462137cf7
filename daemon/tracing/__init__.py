"""Runs as OpenTelemetry traces, off unless an OTLP endpoint is configured.

- `ids`: a run's trace and span ids, derived from its ids (known at its start, so the
  A2A request's `traceparent` names the span its trace will have), and that header.
- `spans`: a stored run's row and events → span descriptions (pure; the tree, the GenAI
  attributes, evaluations as events, links, content only when asked).
- `settings`: whether export is on, where to and how, from the standard `OTEL_*` switches.
- `recorder`: the few events a trace needs, kept per live run from what history commits.
- `sdk`: the only module that imports OpenTelemetry: a provider with a batch processor
  and an OTLP exporter, fed the descriptions with their own times and ids.
- `service`: export on each run's end, bounded and counted; never in a run's way.
- `backfill`: stored runs read from the database, for `export-traces`.
- `agent`: the agent's name on the spans (its AgentCard's).

Beside `runs` (which never imports it: `daemon.app` wires it); above `store`, `a2a` and `data`.

May import: common, daemon.errors, daemon.a2a, daemon.data, daemon.store
"""
