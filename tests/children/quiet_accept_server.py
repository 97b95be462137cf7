"""Serves connections it never closes with 24 open files at most, until asyncio has
retried a failed accept (EMFILE) three times; prints its port, then "retried"."""

import asyncio
import logging
import resource
import sys

from llamon_playground.api.connections import QuietAccept

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
resource.setrlimit(resource.RLIMIT_NOFILE, (24, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


async def main() -> None:
    loop = asyncio.get_running_loop()
    quiet = QuietAccept(loop)
    loop.set_exception_handler(quiet)
    held = []
    server = await asyncio.start_server(lambda r, w: held.append(w), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    # The count is kept by the loop's exception handler: no event to wait on.
    while quiet.suppressed < 3:  # noqa: ASYNC110 (asyncio retries a failed accept each second)
        await asyncio.sleep(0.05)
    print("retried", flush=True)


asyncio.run(main())
