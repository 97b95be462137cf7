"""The validate phase: a broken save or graph fails the run project_validation, Host untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.api import Api
from tests.support.procs import REPO, stack_for


async def test_changed_file_that_does_not_compile(api: Api, daemon) -> None:  # type: ignore[no-untyped-def]
    (daemon.project / "app" / "broken.py").write_text("def f(:\n    pass\n")
    session = await api.session()
    run = await api.wait_status(await api.start_run(session, "stream x",
                                                    changed_files=["app/broken.py"]))
    assert run["status"] == "failed" and run["reason"] == "project_validation"
    assert run["error"]["file"] == "app/broken.py" and run["error"]["line"] == 1
    assert (await api.ok("GET", "host"))["state"] == "stopped", "nothing was started"


async def test_flow_graph_error_fails_validation(tmp_path: Path, runtime_base: Path) -> None:
    project = tmp_path / "flow"
    shutil.copytree(REPO / "examples" / "flow_project", project,
                    ignore=shutil.ignore_patterns(".llamon", "__pycache__"))
    graph = project / "app" / "graph.py"
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            graph.write_text(graph.read_text() + '\ngraph.add_edge("nowhere", "approve")\n')
            run = await api.wait_status(await api.start_run(session, "x"))
            assert run["status"] == "failed" and run["reason"] == "project_validation"
            assert run["error"]["file"] == "app/graph.py" and run["error"]["line"]
        finally:
            await api.close()
