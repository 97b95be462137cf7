"""The leaves both processes (daemon and front) and the CLI share.

Settings and environment names, logging, request ids, the stop signal, the private runtime
directory, the JSON error shape, the API's fixed words and the SSE parser. Modules here
import nothing from the rest of the package, so any room may import them.

May import: nothing
"""
