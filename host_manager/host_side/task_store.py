"""A task store for Hosts that stream long outputs: the cost of an event stays flat.

a2a-sdk appends every streamed artifact chunk to the task it keeps as one more part, and
its event consumer deep-copies that task for each event it hands to subscribers
(`_enqueue_to_subscribers` in a2a-sdk 1.3; no setting turns it off). The copy costs by
part, so with one part per chunk a run of N chunks costs O(N) per event and O(N²) in all.

`StreamingTaskStore` is an ordinary `TaskStore` (the SDK saves the task after each event):
on each save it folds the chunk just appended into the text part before it while that part
is under `BLOCK` characters, so an artifact's text is kept in a few large parts (about one
per `BLOCK` characters) and a copy stays cheap; once the task reaches a final or
interrupted state each artifact's text is joined into one part, so `tasks/get` returns the
whole output once, as one text. Clients see nothing else change: every chunk is still
streamed as its own `artifactUpdate`, and a resubscriber's first task holds the text so far.

It keeps the very task the SDK holds (no copy per save, like
`InMemoryTaskStore(use_copying=False)`), so the folding is seen by the SDK's own snapshot
too; that is the point. A Host of your own uses it the way the bundled examples do:
`DefaultRequestHandler(task_store=StreamingTaskStore(), ...)` (docs/host.md, "Streaming long
outputs"). It needs a2a-sdk, which the Host has; the daemon never imports it.

A Host lives as long as the developer's session and serves thousands of runs: the store
keeps the `KEEP_FINISHED` most recently finished tasks (completed, failed, canceled,
rejected) and forgets older ones, so its memory stops growing with the number of runs (an
in-memory store keeps every task: about 5 KB a run of the bundled example). A task waiting
for input is never forgotten; the daemon keeps each run's history itself and never asks a
Host for a finished task.
"""

from __future__ import annotations

from collections import OrderedDict

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Part, Task, TaskState

# A text part grows by streamed chunks up to about this many characters; then a new one
# starts. Folding a chunk in rewrites the part (up to BLOCK characters); a copy of the task
# costs ~60 ns a part plus its bytes.
BLOCK = 8192
# States after which no chunk of this turn follows: each artifact's text becomes one part.
SETTLED_STATES = frozenset({
    TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED,
})
# States no message continues: such a task is only ever read again (tasks/get).
FINISHED_STATES = frozenset({
    TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED,
})
KEEP_FINISHED = 100  # finished tasks kept for tasks/get; older ones are forgotten


def _plain_text(part: Part) -> bool:
    """A text part with nothing beside its text that joining would lose."""
    return (part.WhichOneof("content") == "text" and not part.filename
            and not part.HasField("metadata"))


def _joinable(a: Part, b: Part) -> bool:
    return _plain_text(a) and _plain_text(b) and a.media_type == b.media_type


def fold_last_chunk(task: Task, block: int = BLOCK) -> None:
    """Fold each artifact's last part into the one before it while that one is short."""
    for artifact in task.artifacts:
        parts = artifact.parts
        if len(parts) < 2:
            continue
        before, last = parts[-2], parts[-1]
        if not _joinable(before, last):
            continue
        text = before.text
        if len(text) < block:
            before.text = text + last.text
            del parts[-1]


def join_text_parts(task: Task) -> None:
    """Each run of adjacent joinable text parts of each artifact becomes one part."""
    for artifact in task.artifacts:
        parts = artifact.parts
        i = 0
        while i < len(parts) - 1:
            j = i + 1
            while j < len(parts) and _joinable(parts[i], parts[j]):
                j += 1
            if j - i > 1:
                parts[i].text = "".join(parts[k].text for k in range(i, j))
                del parts[i + 1:j]
            i += 1


class StreamingTaskStore(TaskStore):
    """In memory, without copies; an artifact's streamed text is kept in a few parts."""

    def __init__(self, inner: TaskStore | None = None, block: int = BLOCK,
                 keep_finished: int = KEEP_FINISHED) -> None:
        self._inner = inner if inner is not None else InMemoryTaskStore(use_copying=False)
        self._block = block
        self._keep = keep_finished
        # The finished tasks kept, oldest first, with the context each was saved in (the
        # store keeps tasks per owner: one is forgotten as its owner).
        self._finished: OrderedDict[str, ServerCallContext] = OrderedDict()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        if task.status.state in SETTLED_STATES:
            join_text_parts(task)
        else:
            fold_last_chunk(task, self._block)
        await self._inner.save(task, context)
        if task.status.state in FINISHED_STATES:
            self._finished[task.id] = context
            self._finished.move_to_end(task.id)
        else:  # continued (an input-required task answered): not finished any more
            self._finished.pop(task.id, None)
        while len(self._finished) > self._keep:
            oldest, owner = self._finished.popitem(last=False)
            await self._inner.delete(oldest, owner)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        return await self._inner.get(task_id, context)

    async def list(self, params: ListTasksRequest,
                   context: ServerCallContext) -> ListTasksResponse:
        return await self._inner.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._finished.pop(task_id, None)
        await self._inner.delete(task_id, context)
