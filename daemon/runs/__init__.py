"""The run lifecycle: statuses, reasons and the reason → status table (`state`), what an
ending records (`ending`), the one function that decides a run's ending (`end_rules`), the
run object that owns its task and ends once (`active`), its record in history (`journal`),
the project-wide lock and runs as clients see them (`manager`), the background execution of
one run (`executor`) and the Host as it sees it (`run_host`), captured output (`output`),
hung-Host detection (`stall_watch`), what an outside edit does to an active run and a
client's Host start, stop and restart (`reload`), the Host's captures for the active run
(`capture`), and how a run's row and events are made to agree: closing phases and boot
recovery (`reconcile`).

Above `store` and `introspect`; never `http`.

May import: common, host_manager, daemon.errors, daemon.a2a, daemon.data, daemon.introspect,
    daemon.store
"""
