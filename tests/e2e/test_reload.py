"""Restart on save and on outside edits, with the real watcher and the example Host."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.api import Api
from tests.support.procs import Stack, stack_for
from tests.support.waiting import host_status, watcher_settled

WATCH_ENV = {"LLAMON_PLAYGROUND_WATCH_QUIET": "0.15"}


@pytest.fixture
def watched(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base, extra_env=WATCH_ENV) as s:
        s.start_daemon()
        yield s


async def host(api: Api) -> dict:  # type: ignore[type-arg]
    return await api.ok("GET", "host")  # type: ignore[no-any-return]


async def settle(api: Api, stack: Stack) -> dict:  # type: ignore[type-arg]
    return await watcher_settled(api, stack.project / "app" / "__init__.py")


async def ready_generation(api: Api, session: str) -> int:
    run = await api.wait_status(await api.start_run(session, "stream warm up"))
    assert run["status"] == "completed"
    return int(run["generation"])


def edit(path: Path, note: str) -> None:
    path.write_text(path.read_text() + f"\n# {note}\n")


async def test_save_then_run_restarts_once_and_completes(watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        gen = await ready_generation(api, session)
        edit(watched.project / "app" / "agent.py", "saved by Studio")
        run_id = await api.start_run(session, "stream after save",
                                     changed_files=["app/agent.py"], revision="r1")
        run = await api.wait_status(run_id)
        assert run["status"] == "completed" and run["generation"] == gen + 1
        events = await api.events(run_id)
        restart = [e.data["state"] for e in events
                   if e.event == "run.phase" and e.data["phase"] == "restart"]
        assert restart == ["started", "completed"]
        status = await settle(api, watched)
        assert status["generation"] == gen + 1 and status["watch"]["restarts"] == 0
        # The same save again (content unchanged since this generation) restarts nothing.
        again = await api.wait_status(await api.start_run(
            session, "stream again", changed_files=["app/agent.py"]))
        assert again["status"] == "completed" and again["generation"] == gen + 1
    finally:
        await api.close()


async def test_outside_edit_mid_run_fails_it_runtime_restarted(watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        gen = await ready_generation(api, session)
        run_id = await api.start_run(session, "slow")
        await api.first_output(run_id)
        edit(watched.project / "app" / "agent.py", "edited in another editor")
        run = await api.wait_status(run_id)
        assert run["status"] == "failed" and run["reason"] == "runtime_restarted"
        status = await settle(api, watched)
        assert status["generation"] == gen + 1 and status["watch"]["restarts"] == 1
        nxt = await api.wait_status(await api.start_run(session, "stream clean"))
        assert nxt["status"] == "completed" and nxt["generation"] == gen + 1
    finally:
        await api.close()


async def test_a_run_sent_while_an_outside_edit_is_pending_goes_to_the_new_generation(
        project: Path, runtime_base: Path) -> None:
    # A quiet period long enough that the run is surely posted inside it.
    with stack_for(project, runtime_base,
                   extra_env={"LLAMON_PLAYGROUND_WATCH_QUIET": "1.0"}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            gen = await ready_generation(api, session)
            edit(stack.project / "app" / "agent.py", "edited in another editor")
            await host_status(api, lambda s: s["watch"]["pending"] == ["app/agent.py"],
                              "the watcher to hold the edit")
            run_id = await api.start_run(session, "stream right after the edit")
            run = await api.wait_status(run_id)
            # Not sent to the generation the edit replaces (and failed runtime_restarted):
            # it waited for the restart and ran on the new one.
            assert run["status"] == "completed" and run["generation"] == gen + 1
            restart = [e.data for e in await api.events(run_id)
                       if e.event == "run.phase" and e.data["phase"] == "restart"]
            assert [p["state"] for p in restart] == ["started", "completed"]
            assert restart[0]["outside_edit"] == ["app/agent.py"]
            assert restart[1]["generation"] == gen + 1
            status = await api.ok("GET", "host")
            assert status["watch"]["restarts"] == 1 and status["watch"]["pending"] == []
        finally:
            await api.close()


async def test_identical_save_and_venv_churn_restart_nothing(watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        gen = await ready_generation(api, session)
        agent = watched.project / "app" / "agent.py"
        agent.write_bytes(agent.read_bytes())
        venv = watched.project / ".venv" / "lib" / "site-packages"
        venv.mkdir(parents=True)
        for i in range(50):
            (venv / f"mod{i}.py").write_text(f"x = {i}\n")
        (watched.project / "notes.txt").write_text("not watched\n")
        status = await settle(api, watched)
        assert status["generation"] == gen and status["watch"]["restarts"] == 0
        assert status["state"] == "ready"
    finally:
        await api.close()


async def test_burst_of_edits_restarts_once(watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        gen = await ready_generation(api, session)
        agent = watched.project / "app" / "agent.py"
        for i in range(20):
            edit(agent, f"burst {i}")
        await host_status(api, lambda s: s["watch"]["restarts"] >= 1, "the burst's restart")
        status = await settle(api, watched)
        assert status["watch"]["restarts"] == 1 and status["generation"] == gen + 1
    finally:
        await api.close()


async def test_a_saved_env_file_restarts_the_host_but_its_hash_is_never_recorded(
        watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        gen = await ready_generation(api, session)
        env = watched.project / ".env"
        env.write_text(env.read_text() + "API_KEY=short\n")
        digest = hashlib.sha256(env.read_bytes()).hexdigest()
        run = await api.wait_status(await api.start_run(
            session, "stream env saved", changed_files=[".env", "app/agent.py"]))
        assert run["status"] == "completed" and run["generation"] == gen + 1
        save = next(e.data for e in await api.events(run["id"])
                    if e.event == "run.phase" and e.data["phase"] == "save")
        assert ".env" not in save["files"] and "app/agent.py" in save["files"]
        bundle = await api.ok("POST", "bundles/export", {"run_ids": [run["id"]]})
        assert digest not in orjson.dumps(bundle).decode()
    finally:
        await api.close()


async def test_renaming_the_env_file_watches_the_new_one(watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        gen = await ready_generation(api, session)
        pyproject = watched.project / "pyproject.toml"
        pyproject.write_text(pyproject.read_text().replace('env_file = ".env"',
                                                           'env_file = "config.env"'))
        await host_status(api, lambda s: s["watch"]["restarts"] >= 1, "pyproject's restart")
        await settle(api, watched)
        (watched.project / "config.env").write_text("GREETING=hi\n")
        status = await host_status(api, lambda s: s["watch"]["restarts"] >= 2,
                                   "the renamed env file's restart")
        assert status["generation"] == gen + 2
        (watched.project / ".env").write_text("OLD=not watched any more\n")
        status = await settle(api, watched)
        assert status["watch"]["restarts"] == 2 and status["generation"] == gen + 2
    finally:
        await api.close()


async def test_a_saved_pyproject_keeps_the_default_host_command_warning(
        tmp_path: Path, runtime_base: Path) -> None:
    """Re-reading pyproject.toml on a save replaces the project's warnings with all of them,
    not only the backend's: the default command's note stays in GET /host."""
    project = tmp_path / "plain"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[project]\nname = "plain"\nversion = "0"\n')
    with stack_for(project, runtime_base, extra_env=WATCH_ENV) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            before = await host(api)
            assert [w["code"] for w in before["warnings"]] == ["default_host_command"]
            pyproject.write_text(pyproject.read_text() + "# saved again\n")
            after = await watcher_settled(api, pyproject)
            assert [w["code"] for w in after["warnings"]] == ["default_host_command"]
        finally:
            await api.close()


async def test_a_renamed_env_file_is_never_hashed_even_before_the_watcher_saw_it(
        project: Path, runtime_base: Path) -> None:
    """A save that renames the env file and writes it, then runs at once: the run's own
    validate phase follows pyproject.toml, so its save phase does not record the new env
    file's hash (the watcher is off here, as with LLAMON_PLAYGROUND_WATCH=0; with it on,
    the run would race its quiet period)."""
    with stack_for(project, runtime_base,
                   extra_env={"LLAMON_PLAYGROUND_WATCH": "0"}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            await ready_generation(api, session)
            pyproject = project / "pyproject.toml"
            pyproject.write_text(pyproject.read_text().replace('env_file = ".env"',
                                                               'env_file = "config.env"'))
            secret = project / "config.env"
            secret.write_text("API_KEY=short\n")
            run = await api.wait_status(await api.start_run(
                session, "stream renamed env", changed_files=["pyproject.toml", "config.env"]))
            assert run["status"] == "completed"
            save = next(e.data for e in await api.events(run["id"])
                        if e.event == "run.phase" and e.data["phase"] == "save")
            assert "pyproject.toml" in save["files"] and "config.env" not in save["files"]
            bundle = await api.ok("POST", "bundles/export", {"run_ids": [run["id"]]})
            digest = hashlib.sha256(secret.read_bytes()).hexdigest()
            assert digest not in orjson.dumps(bundle).decode()
        finally:
            await api.close()
