"""Run inside an example project: prints "kept" when its task store hands back the very
task it was given (no copy per streamed event), "copied" otherwise."""

import asyncio
import os
import sys

# Run as a file, the script's own folder heads sys.path; the project is the working folder.
sys.path.insert(0, os.getcwd())

from a2a.server.context import ServerCallContext
from a2a.types import Task
from app.host import new_task_store


async def main() -> None:
    store, task, ctx = new_task_store(), Task(id="t1", context_id="c1"), ServerCallContext()
    await store.save(task, ctx)
    print("kept" if (await store.get("t1", ctx)) is task else "copied")


asyncio.run(main())
