"""The run lifecycle: statuses, reasons and the reason → status table (`state`), what an
ending records (`ending`), the one function that decides a run's ending (`end_rules`), the
run object that owns its task and ends once (`active`), its record in history (`journal`),
the project-wide lock (`manager`), the background execution of one run (`executor`) and
the Host as it sees it (`run_host`), captured output (`output`), hung-Host detection
(`stall_watch`) and what an outside edit does to an active run (`reload`).

May import `store`, `data`, `a2a`, `introspect` and `host_manager`; never `http`.
"""
