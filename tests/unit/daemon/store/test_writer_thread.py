"""The history writer's thread: calls in order, results and errors back on the loop, the
commit's waiters told in the same loop callback that settles the call."""

from __future__ import annotations

import asyncio
import threading

import pytest

from llamon_playground.daemon.store.wal import WriterThread


async def test_calls_run_in_order_on_one_thread_that_is_not_the_loops() -> None:
    writer = WriterThread("test-writer")
    seen: list[tuple[int, str]] = []
    try:
        futures = [writer.call(lambda i=i: seen.append((i, threading.current_thread().name)))
                   for i in range(50)]
        await asyncio.gather(*futures)
    finally:
        await writer.close()
    assert [i for i, _ in seen] == list(range(50))
    assert {name for _, name in seen} == {"test-writer"}
    assert threading.current_thread().name != "test-writer"


async def test_a_result_and_an_exception_come_back_to_the_caller() -> None:
    writer = WriterThread("test-writer")
    try:
        assert await writer.call(pow, 2, 10) == 1024
        with pytest.raises(ZeroDivisionError):
            await writer.call(lambda: 1 / 0)
        assert await writer.call(str, 7) == "7"  # the thread goes on after a failure
    finally:
        await writer.close()


async def test_then_runs_on_the_loop_before_the_caller_resumes() -> None:
    writer = WriterThread("test-writer")
    loop_thread = threading.current_thread()
    told: list[tuple[int, threading.Thread]] = []
    try:
        result = await writer.call(lambda: 41 + 1,
                                   then=lambda r: told.append((r, threading.current_thread())))
        # Settled in the same callback: whatever `then` did is done when the await returns.
        assert told == [(42, loop_thread)]
        assert result == 42
    finally:
        await writer.close()


async def test_a_failing_then_still_settles_the_call() -> None:
    writer = WriterThread("test-writer")

    def then(_: int) -> None:
        raise RuntimeError("a subscriber broke")
    try:
        assert await asyncio.wait_for(writer.call(int, "5", then=then), 5) == 5
    finally:
        await writer.close()


async def test_close_waits_for_what_was_queued_and_refuses_more() -> None:
    writer = WriterThread("test-writer")
    started, release = threading.Event(), threading.Event()
    done: list[int] = []

    def slow() -> None:
        started.set()
        release.wait(5)
        done.append(1)
    first = writer.call(slow)
    second = writer.call(done.append, 2)
    await asyncio.to_thread(started.wait, 5)
    closing = asyncio.ensure_future(writer.close())
    release.set()
    await closing
    await asyncio.gather(first, second)
    assert done == [1, 2]
    with pytest.raises(RuntimeError, match="closed"):
        writer.call(int)
