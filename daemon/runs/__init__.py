"""The run lifecycle: statuses and reasons (`state`), the project-wide lock and the run
records (`manager`), the background task that executes one run (`executor`, `active`),
captured output (`output`), hung-Host detection (`stall_watch`) and what an outside edit
does to an active run (`reload`).

May import `store`, `data`, `a2a`, `introspect` and `host_manager`; never `http`.
"""
