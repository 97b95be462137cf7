"""The echo agent's behaviours, as an a2a-sdk AgentExecutor.

The first word of the first text part picks the behaviour (case-insensitive):
``stream``, ``tokens``, ``markdown``, ``data``, ``replace``, ``ask``, ``slow``, ``fail``,
``refuse``, ``crash``; anything else is echoed back word by word. Each behaviour exists to
exercise one thing a client (the llamon Playground) has to handle: chunked and replaced
artifacts, formatted (Markdown) answers, non-text parts, input-required turns, cancellation,
agent errors and a dying Host; ``tokens N`` streams N chunks, a long run for measuring the
stream's cost per token.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

from a2a.helpers import new_data_part, new_raw_part, new_text_part, new_url_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Task, TaskState, TaskStatus
from google.protobuf.json_format import MessageToDict

from llamon_playground.host_manager.host_side.capture import PlaygroundCapture, open_envelope

DEFAULT_SENTENCE = (
    "The quick brown fox jumps over the lazy dog while echo_agent streams words."
)
SLOW_TICKS = 60
SLOW_INTERVAL_S = 0.5
HELLO_FILE = b"hello from echo_agent\n"
REPORT_URL = "https://example.invalid/report.pdf"
MAX_TOKENS = 1_000_000
# `markdown` with nothing after it: an answer with what a client has to format.
MARKDOWN_SAMPLE = """## Release checklist

Three steps, in order:

1. Run the **tests** with `scripts/test`
2. Update the *changelog*
3. Tag the release

| step | owner | minutes |
|:---|:---|---:|
| tests | CI | 12 |
| changelog | you | 5 |
| tag | you | 1 |

```python
def release(version: str) -> None:
    print(f"tagging {version}")
```

> Read [the release notes](https://example.com/notes) before tagging.
"""
DEFAULT_TOKENS = 100


def first_text(message: Message | None) -> str:
    """Text of the first text part; the behaviour keyword lives there."""
    if message is None:
        return ""
    for part in message.parts:
        if part.HasField("text"):
            return part.text
    return ""


def first_data(message: Message | None) -> Any | None:
    """The first data part as plain JSON, or None when the message has none."""
    if message is None:
        return None
    for part in message.parts:
        if part.HasField("data"):
            return MessageToDict(part.data)
    return None


def split_command(text: str) -> tuple[str, str]:
    """(lower-cased first word, the rest of the text with its spacing kept)."""
    match = re.match(r"\s*(\S+)\s*(.*)", text, re.DOTALL)
    if match is None:
        return "", ""
    return match.group(1).lower(), match.group(2)


def evaluations(text: str) -> list[dict[str, Any]]:
    """Two evaluators over the streamed text, so runs have scores to compare."""
    words = len(text.split())
    hello = "hello" in text.lower()
    return [
        {"type": "evaluation.result", "evaluator": "word_count", "score": words,
         "passStatus": "pass" if words <= 50 else "fail", "node": "echo", "scope": "node"},
        {"type": "evaluation.result", "evaluator": "mentions_hello",
         "score": 1.0 if hello else 0.0, "passStatus": "pass" if hello else "fail",
         "reason": "the answer says hello" if hello else "no hello in the answer"},
    ]


def token_count(rest: str) -> int:
    """`tokens N`: N (a whole number, at most MAX_TOKENS); DEFAULT_TOKENS without one."""
    word = rest.split()[0] if rest.split() else ""
    return min(int(word), MAX_TOKENS) if word.isdigit() else DEFAULT_TOKENS


def word_chunks(text: str) -> list[str]:
    """Split into one chunk per word, trailing whitespace attached, so that
    ``"".join(chunks) == text`` for text without leading whitespace."""
    return re.findall(r"\S+\s*", text)


class EchoAgentExecutor(AgentExecutor):
    """Runs one behaviour per request; see the module docstring."""

    def __init__(self, chunk_delay_s: float = 0.0,
                 capture: PlaygroundCapture | None = None,
                 slow_ticks: int = SLOW_TICKS) -> None:
        # The Playground's capture channel (None when not run by the Playground): node
        # traces and evaluator results go back to the daemon for the run that sent them.
        self._capture = capture if capture is not None else PlaygroundCapture.from_env()
        # Pause between streamed chunks; 0 still yields to the event loop so
        # every chunk goes out as its own SSE frame.
        self._chunk_delay_s = chunk_delay_s
        self._slow_ticks = max(1, slow_ticks)
        # task id -> event set by cancel(), so a running loop stops emitting
        # before the framework cancels execute() itself.
        self._cancelled: dict[str, asyncio.Event] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The reserved "llamon.playground" envelope is stripped here, before anything else
        # sees metadata; the rest is deliberately never echoed back.
        _, run_id = open_envelope(self._capture, context.metadata)
        task_id = context.task_id or ""
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        current = context.current_task

        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # Only `ask` parks a task, so any continuation is its answer. The
            # Task already exists: do not enqueue it again.
            await updater.start_work()
            answer = first_text(context.message).strip() or "stranger"
            await self._stream_text(updater, f"Hello, {answer}!")
            await updater.complete()
            return

        command, rest = split_command(first_text(context.message))
        cancelled = self._cancelled.setdefault(task_id, asyncio.Event())
        try:
            await event_queue.enqueue_event(self._new_task(context))
            await updater.start_work()
            if command == "stream":
                text = rest or DEFAULT_SENTENCE
                await self._report(run_id, [{"type": "node.start", "node": "echo"}])
                await self._stream_text(updater, text)
                await self._report(run_id, [{"type": "node.end", "node": "echo"},
                                            *evaluations(text)])
                await updater.complete()
            elif command == "tokens":
                count = token_count(rest)
                await self._stream_chunks(updater, (f"t{n} " for n in range(count)),
                                          count=count)
                await updater.complete()
            elif command == "markdown":
                # The text after the word as it is (its line breaks kept), else the sample.
                await self._stream_text(updater, rest or MARKDOWN_SAMPLE)
                await updater.complete()
            elif command == "data":
                await self._send_report(updater, first_data(context.message))
                await updater.complete()
            elif command == "replace":
                # One artifact id re-sent without ``append``: each chunk replaces the last.
                for n in range(5):
                    await updater.add_artifact([new_text_part(f"n{n} ")],
                                               artifact_id=f"{updater.task_id}-replace",
                                               name="replace")
                    await asyncio.sleep(self._chunk_delay_s)
                await updater.complete()
            elif command == "ask":
                question = updater.new_agent_message([new_text_part("What is your name?")])
                await updater.requires_input(question)
            elif command == "slow":
                if await self._tick(updater, cancelled):
                    await updater.complete()
            elif command == "fail":
                await self._stream_chunks(updater, ["about to fail "], last=False)
                # Unhandled on purpose: the SDK turns it into a JSON-RPC error
                # frame on the stream and marks the task FAILED.
                raise RuntimeError("echo_agent was asked to fail")
            elif command == "refuse":
                # A task the agent itself marks FAILED, saying why in its status message.
                reason = rest or "refused on purpose"
                await updater.failed(updater.new_agent_message([new_text_part(reason)]))
            elif command == "crash":
                await self._stream_chunks(updater, ["about to crash "], last=False)
                await self._die()
            else:
                await self._stream_text(updater, first_text(context.message).strip())
                await updater.complete()
        finally:
            self._cancelled.pop(task_id, None)

    async def _report(self, run_id: str | None, events: list[dict[str, Any]]) -> None:
        """Send traces for a verified Playground request; anything else reports nothing."""
        if self._capture is not None and run_id is not None:
            await self._capture.aemit(run_id, events)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The framework calls this before cancelling execute(): stop the loop
        # first so no chunk follows the CANCELED status, then record it.
        task_id = context.task_id or ""
        event = self._cancelled.get(task_id)
        if event is not None:
            event.set()
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        await updater.cancel()

    @staticmethod
    def _new_task(context: RequestContext) -> Task:
        """The snapshot that opens a new task's stream (history = the user turn)."""
        history = [context.message] if context.message is not None else []
        return Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=history,
        )

    async def _stream_text(self, updater: TaskUpdater, text: str) -> None:
        """Stream ``text`` one word per chunk (empty text: one empty chunk)."""
        await self._stream_chunks(updater, word_chunks(text) or [""])

    async def _stream_chunks(
        self, updater: TaskUpdater, chunks: Iterable[str], last: bool = True,
        count: int | None = None,
    ) -> None:
        """Send chunks of one artifact: the first without ``append``, later
        ones with it, the final one with ``lastChunk`` unless ``last`` is False
        (a run that is about to break never finishes its artifact). ``count``:
        how many ``chunks`` yields when it is not a list."""
        artifact_id = f"{updater.task_id}-echo"
        total = len(chunks) if isinstance(chunks, list) else count
        for index, chunk in enumerate(chunks):
            is_last = last and index == (total or 0) - 1
            await updater.add_artifact(
                [new_text_part(chunk)],
                artifact_id=artifact_id,
                name="echo",
                append=True if index > 0 else None,
                last_chunk=True if is_last else None,
            )
            await asyncio.sleep(self._chunk_delay_s)

    async def _send_report(self, updater: TaskUpdater, input_data: Any | None) -> None:
        """One artifact mixing the three non-text part kinds."""
        report: dict[str, Any] = {
            "kind_of": "report",
            "count": 3,
            "items": ["a", "b"],
            "nested": {"ok": True},
        }
        if input_data is not None:
            report["input"] = input_data
        parts: list[Part] = [
            new_data_part(report),
            new_raw_part(HELLO_FILE, media_type="text/plain", filename="hello.txt"),
            new_url_part(REPORT_URL, media_type="application/pdf", filename="report.pdf"),
        ]
        await updater.add_artifact(parts, name="report", last_chunk=True)

    async def _tick(self, updater: TaskUpdater, cancelled: asyncio.Event) -> bool:
        """Stream "tick N " every SLOW_INTERVAL_S; False if cancelled midway."""
        artifact_id = f"{updater.task_id}-ticks"
        ticks = self._slow_ticks
        for n in range(1, ticks + 1):
            await updater.add_artifact(
                [new_text_part(f"tick {n} ")],
                artifact_id=artifact_id,
                name="ticks",
                append=True if n > 1 else None,
                last_chunk=True if n == ticks else None,
            )
            if n == ticks:
                break
            # Waiting on the cancel event instead of sleeping makes CancelTask
            # take effect immediately rather than at the next tick.
            try:
                await asyncio.wait_for(cancelled.wait(), SLOW_INTERVAL_S)
                return False
            except TimeoutError:
                pass
        return True

    @staticmethod
    async def _die() -> None:
        """Exit the whole Host process mid-run, as a crashing agent would."""
        # The SDK has no "frame written" hook; a short pause lets the SSE
        # writer put the chunk on the wire so clients see output, then a break.
        await asyncio.sleep(0.2)
        # What a dying process says last: the run's diagnostics show it as its own line.
        print("echo_agent: crashing on purpose (exit 3)", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(3)
