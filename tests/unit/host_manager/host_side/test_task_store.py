"""The Host helper's `StreamingTaskStore`: what its folding may join and what it keeps apart,
and how many finished tasks it keeps."""

from __future__ import annotations

from a2a.helpers import new_data_part
from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskState
from google.protobuf.json_format import MessageToDict

from llamon_playground.host_manager.host_side.task_store import (
    StreamingTaskStore,
    fold_last_chunk,
    join_text_parts,
)


def test_the_task_store_folds_only_plain_text_of_one_kind() -> None:
    task = Task(id="t1", context_id="c1")
    parts = task.artifacts.add(artifact_id="a1").parts
    parts.add(text="a ")
    parts.add(text="b ")
    fold_last_chunk(task, block=3)  # "a " is under 3 characters: folded
    parts.add(text="c ")
    fold_last_chunk(task, block=3)  # "a b " is not: kept apart
    parts.add(text="md", media_type="text/markdown")
    parts.append(new_data_part({"k": 1}))
    parts.add(text="x ")
    parts.add(text="y ").metadata.update({"m": 1})
    parts.add(text="z ")
    parts.add(text="!")
    join_text_parts(task)
    assert MessageToDict(task)["artifacts"][0]["parts"] == [
        {"text": "a b c "}, {"text": "md", "mediaType": "text/markdown"}, {"data": {"k": 1}},
        {"text": "x "}, {"text": "y ", "metadata": {"m": 1}}, {"text": "z !"}]


async def test_the_task_store_forgets_the_oldest_finished_tasks_beyond_its_keep() -> None:
    """Thousands of runs leave the Host no larger than its last few: the oldest finished
    tasks go; one waiting for input stays, however old."""
    store = StreamingTaskStore(keep_finished=3)
    context = ServerCallContext()
    waiting = Task(id="waiting", context_id="c")
    waiting.status.state = TaskState.TASK_STATE_INPUT_REQUIRED
    await store.save(waiting, context)
    for i in range(6):
        task = Task(id=f"t{i}", context_id="c")
        task.status.state = TaskState.TASK_STATE_WORKING
        await store.save(task, context)
        task.status.state = TaskState.TASK_STATE_COMPLETED
        await store.save(task, context)
    kept = [i for i in range(6) if await store.get(f"t{i}", context) is not None]
    assert kept == [3, 4, 5]
    assert await store.get("waiting", context) is not None
