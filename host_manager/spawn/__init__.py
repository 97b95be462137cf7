"""How a Host generation's process comes to exist: the supervisor's one seam for it.

`spawner` (the `Spawner` seam, the cold spawn, which commands are Python entry points),
`warm` (generations forked from the project's warm parent, falling back to cold), `parent`
(the warm parent, daemon side) and `preloader` (the warm parent itself: a stdlib-only script
the project's interpreter runs by path).

May import: common.platform, host_manager.capture, host_manager.environment,
host_manager.process
"""
