"""A real install: build the wheel, install it (not editable) into a fresh venv, start it.

The fresh venv takes its third-party dependencies from the test venv (no network, no second
download of aiohttp and a2a-sdk) through a `.pth` line naming a folder of links to the test
venv's packages, one link each: removing a link is uninstalling that package for the fresh
venv alone. The package itself comes only from the wheel, which the test checks before
starting anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from tests.support.api import Api
from tests.support.procs import REPO, Proc, copy_example, kill_tree, process_tree, wait_for
from tests.support.waiting import eventually

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--wheel-dir", str(out), str(REPO)],
                          cwd=out, timeout=300, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (out / "build.log").write_text(done.stdout + done.stderr)
    (built,) = out.glob("llamon_playground-*.whl")
    return built


def test_the_build_declares_its_data_so_setuptools_warns_of_nothing(wheel: Path) -> None:
    log = (wheel.parent / "build.log").read_text()
    assert "would be ignored" not in log and "BuildBackendWarning" not in log, log


def make_venv(wheel: Path, venv: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    purelib = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    deps = venv / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("llamon_playground", "__editable__", "_llamon")):
            (deps / entry.name).symlink_to(entry)
    (purelib / "test-deps.pth").write_text(f"{deps}\n")
    return venv


def uninstall(venv: Path, module: str) -> None:
    """The fresh venv loses `module` (its links: the package and its dist-info)."""
    gone = [link for link in (venv / "deps").iterdir()
            if link.name == module or link.name.startswith(f"{module}-")]
    assert gone, f"{module} is not among the fresh venv's packages"
    for link in gone:
        link.unlink()


@pytest.fixture(scope="module")
def fresh_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(wheel, tmp_path_factory.mktemp("venv") / "v")


def test_the_wheel_has_one_import_root(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
        names = set(archive.namelist())
    assert {t for t in tops if not t.endswith(".dist-info")} == {"llamon_playground"}
    assert "llamon_playground/daemon/app.py" in names
    assert "llamon_playground/examples/echo_agent/pyproject.toml" in names
    assert "llamon_playground/examples/echo_agent/app/host.py" in names
    assert "llamon_playground/examples/flow_project/app/graph.py" in names
    assert {"llamon_playground/api/page/index.html", "llamon_playground/api/page/app.js",
            "llamon_playground/api/page/style.css",
            "llamon_playground/api/page/vendor/markdown-it.esm.min.mjs",
            "llamon_playground/api/page/vendor/LICENSE-markdown-it.txt"} <= names


def test_the_installed_package_is_the_wheel_not_the_checkout(fresh_venv: Path) -> None:
    probe = ("import llamon_playground.daemon.app as a, llamon_playground.api.app, sys; "
             "print(a.__file__); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('daemon', 'api', 'host_manager', 'cli', 'common')))")
    out = subprocess.check_output([str(fresh_venv / "bin" / "python"), "-c", probe],
                                  text=True, cwd="/", env=_clean_env({})).splitlines()
    assert out[0].startswith(str(fresh_venv)) and "site-packages" in out[0]
    assert out[1] == "[]"


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    runtime = Path(os.environ.get("TMPDIR", "/tmp")) / f"lpi{os.getpid()}"
    runtime.mkdir(exist_ok=True)
    yield tmp_path
    subprocess.run(["rm", "-rf", str(runtime)], check=False)


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return {**env, **extra}


@contextlib.asynccontextmanager
async def _up(venv: Path, args: list[str], env: dict[str, str], cwd: Path,
              log: Path, command: list[str] | None = None,
              start_timeout: float = 60) -> AsyncIterator[Api]:
    """`llamon-playground up ARGS` from the venv (or `command ARGS`); an Api on its front,
    with its token. The daemon `up` started is stopped with it, and killed if it does not
    stop."""
    argv = command or [str(venv / "bin" / "llamon-playground"), "up"]
    up = Proc([*argv, *args, "--port", "0"], env, log, cwd)
    daemon_pid = None
    try:
        link = wait_for(lambda: next((ln.split("open in a browser: ")[1].strip()
                                      for ln in up.output().splitlines()
                                      if "open in a browser: " in ln), None)
                        or (up.popen.poll() is not None and up.output()),
                        start_timeout, "the link from `up`")
        assert "?token=" in link, link
        url, token = link.split("/?token=")
        api = Api(aiohttp.ClientSession(base_url=url,
                                        headers={"Authorization": f"Bearer {token}"}))
        try:
            daemon_pid = (await api.ok("GET", "/health")).get("pid")
            yield api
        finally:
            await api.close()
    finally:
        up.stop()
        status = subprocess.run([str(venv / "bin" / "llamon-playground"), "status", *args,
                                 "--json"], env=env, cwd=cwd, capture_output=True, text=True,
                                timeout=60, check=False)
        if status.returncode == 0:
            daemon_pid = orjson.loads(status.stdout)["pid"]
        if daemon_pid is not None:
            kill_tree(process_tree(daemon_pid), grace=10)


async def _up_serves_a_run(venv: Path, args: list[str], env: dict[str, str], cwd: Path,
                           log: Path, command: list[str] | None = None,
                           start_timeout: float = 60) -> None:
    """`llamon-playground up ARGS` from the venv: a run streams its answer through the front."""
    async with _up(venv, args, env, cwd, log, command, start_timeout) as api:
        session = await api.session()
        run_id = await api.start_run(session, "stream hello from a wheel")
        deltas = [e.data["text"] for e in await api.events(run_id) if e.event == "output.delta"]
        run = await api.wait_status(run_id)
        assert run["status"] == "completed", run
        assert len(deltas) > 1 and "".join(deltas).strip() == "hello from a wheel", deltas


async def test_up_with_no_project_serves_a_copy_of_the_bundled_example(
        fresh_venv: Path, home: Path) -> None:
    runtime = Path(os.environ.get("TMPDIR", "/tmp")) / f"lpi{os.getpid()}"
    env = _clean_env({"HOME": str(home), "XDG_DATA_HOME": str(home / "data"),
                      "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime)})
    await _up_serves_a_run(fresh_venv, [], env, home, home / "up.log")
    example = home / "data" / "llamon-playground" / "examples" / "echo_agent"
    assert (example / "pyproject.toml").is_file()
    # History went to the copy, never into site-packages.
    assert (example / ".llamon" / "playground" / "playground.sqlite3").is_file()
    assert not list((fresh_venv / "lib").rglob(".llamon"))


async def test_up_with_a_project_serves_it(fresh_venv: Path, home: Path) -> None:
    runtime = Path(os.environ.get("TMPDIR", "/tmp")) / f"lpi{os.getpid()}"
    project = copy_example(home)
    env = _clean_env({"HOME": str(home), "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime)})
    await _up_serves_a_run(fresh_venv, [str(project)], env, home, home / "up.log")
    assert (project / ".llamon" / "playground" / "playground.sqlite3").is_file()


async def test_a_missing_module_is_named_with_its_install_command(
        wheel: Path, home: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The README's install brings what the example imports; without it, every place a
    failed start is read names the module and the command that installs it."""
    venv = make_venv(wheel, tmp_path_factory.mktemp("venv_missing") / "v")
    runtime = Path(os.environ.get("TMPDIR", "/tmp")) / f"lpi{os.getpid()}"
    env = _clean_env({"HOME": str(home), "XDG_DATA_HOME": str(home / "data"),
                      "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime)})
    empty = home / "empty"
    empty.mkdir()
    await _up_serves_a_run(venv, [], env, empty, home / "up.log")
    uninstall(venv, "uvicorn")
    command = f"{venv / 'bin' / 'python'} -m pip install 'uvicorn>=0.30'"
    lp = str(venv / "bin" / "llamon-playground")
    async with _up(venv, [], env, empty, home / "up2.log") as api:
        session = await api.session()
        run = await api.wait_status(await api.start_run(session, "hello"))
        assert run["status"] == "failed" and run["reason"] == "runtime_unavailable"
        assert "'uvicorn'" in run["error"]["message"] and command in run["error"]["message"]
        host = await api.ok("GET", "host")
        (missing,) = [w for w in host["warnings"] if w["code"] == "host_module_missing"]
        assert missing["module"] == "uvicorn" and missing["fix"] == command
        sent = subprocess.run([lp, "send", session, "hello", "--follow"], env=env, cwd=empty,
                              capture_output=True, text=True, timeout=60, check=False)
        assert sent.returncode == 1 and command in sent.stderr, sent.stderr
        status = subprocess.run([lp, "status"], env=env, cwd=empty, capture_output=True,
                                text=True, timeout=60, check=False)
        assert "'uvicorn'" in status.stdout and command in status.stdout, status.stdout


async def test_the_daemon_needs_no_zstandard_but_for_an_earlier_versions_blocks(
        wheel: Path, home: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """zstandard is no runtime dependency: the installed metadata does not ask for it and a
    run is served and compacted without it. A history whose blocks an earlier version wrote
    with zstandard is refused, untouched, naming the command that installs it."""
    venv = make_venv(wheel, tmp_path_factory.mktemp("venv_nozstd") / "v")
    uninstall(venv, "zstandard")
    python = str(venv / "bin" / "python")
    probe = ("import importlib.metadata as m, json; "
             "print(json.dumps(m.requires('llamon-playground')))")
    requires = orjson.loads(await asyncio.to_thread(
        subprocess.check_output, [python, "-c", probe], text=True, cwd="/", env=_clean_env({})))
    runtime_deps = [r for r in requires if "extra ==" not in r]
    assert runtime_deps and not [r for r in runtime_deps if "zstandard" in r], requires
    runtime = Path(os.environ.get("TMPDIR", "/tmp")) / f"lpi{os.getpid()}"
    env = _clean_env({"HOME": str(home), "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime)})
    project = copy_example(home)
    db = project / ".llamon" / "playground" / "playground.sqlite3"

    def blocks(path: Path) -> dict[str, int]:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return dict(conn.execute("SELECT codec, COUNT(*) FROM event_blocks GROUP BY codec"))
        finally:
            conn.close()

    async with _up(venv, [str(project)], env, home, home / "up.log") as api:
        session = await api.session()
        run = await api.wait_status(await api.start_run(session, "stream a b c d e f"))
        assert run["status"] == "completed", run
        await eventually(lambda: blocks(db), lambda c: set(c) == {"deflate"},
                         what="the finished run compacted into deflate blocks")
    earlier = copy_example(home / "earlier")
    state = earlier / ".llamon" / "playground"
    state.mkdir(parents=True, mode=0o700)
    fixtures = REPO / "tests" / "fixtures"
    shutil.copyfile(fixtures / "history_v8_zstd.sqlite3", state / "playground.sqlite3")
    shutil.copytree(fixtures / "history_v4_files", state / "files")
    refused = await asyncio.to_thread(
        subprocess.run, [str(venv / "bin" / "llamon-playground"), "daemon", str(earlier)],
        check=False, env=env, cwd=home, capture_output=True, text=True, timeout=60)
    command = f"{python} -m pip install 'zstandard>=0.22'"
    assert refused.returncode == 1, refused.stderr
    assert "zstandard is not installed" in refused.stderr, refused.stderr
    assert command in refused.stderr, refused.stderr
    assert blocks(state / "playground.sqlite3") == {"zstd": 12}


@pytest.mark.clone
@pytest.mark.timeout(900)
async def test_a_fresh_clone_runs_the_readmes_up(home: Path, tmp_path: Path) -> None:
    """The README's first command from a new clone, as a newcomer runs it: `scripts/up`
    sets the clone up (its own .venv, from the package index) and serves the bundled
    example, on which a run streams its answer through the front."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=120)
    runtime = Path(os.environ.get("TMPDIR", "/tmp")) / f"lpi{os.getpid()}"
    env = _clean_env({"LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime)})
    # The setup's pip reads the package index: minutes on a cold cache, seconds on a warm one.
    await _up_serves_a_run(clone / ".venv", [], env, clone, home / "up.log",
                           command=[str(clone / "scripts" / "up")], start_timeout=900)
    assert (clone / ".venv" / "bin" / "llamon-playground").exists()
    assert (clone / "examples" / "echo_agent" / ".llamon" / "playground"
            / "playground.sqlite3").is_file()


@pytest.mark.parametrize(("missing", "protocol"), [("opentelemetry", "http/protobuf"),
                                                     ("grpc", "grpc")])
async def test_an_otlp_endpoint_without_opentelemetry_is_said_once_and_costs_nothing(
        wheel: Path, home: Path, tmp_path_factory: pytest.TempPathFactory, missing: str,
        protocol: str) -> None:
    """With OTEL_EXPORTER_OTLP_ENDPOINT set on a Python without the otel extra (or, asked
    for gRPC, without grpcio): `up` says so once with the install line, /health says why
    nothing is exported, and runs go on."""
    venv = make_venv(wheel, tmp_path_factory.mktemp("venv_otel") / "v")
    uninstall(venv, missing)
    runtime = Path(os.environ.get("TMPDIR", "/tmp")) / f"lpi{os.getpid()}"
    project = copy_example(home)
    env = _clean_env({"HOME": str(home), "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime),
                      "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
                      "OTEL_EXPORTER_OTLP_PROTOCOL": protocol})
    log = home / "up.log"
    async with _up(venv, [str(project)], env, home, log) as api:
        session = await api.session()
        run = await api.wait_status(await api.start_run(session, "stream still runs"))
        assert run["status"] == "completed", run
        tracing = (await api.ok("GET", "/health"))["tracing"]
    assert tracing["enabled"] is False and tracing["protocol"] == protocol
    if missing == "opentelemetry":
        assert tracing["opentelemetry_loaded"] is False
    assert "pip install 'llamon-playground[otel]'" in tracing["problem"]
    assert missing in tracing["problem"]
    said = [line for line in log.read_text().splitlines()
            if "llamon-playground[otel]" in line]
    assert len(said) == 1, said
