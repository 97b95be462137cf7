"""The parser of the commands that drive a running daemon (their code: control.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from llamon_playground.cli.bundled_example import PROJECT_HELP as PROJECT_HELP
from llamon_playground.cli.terminal import suite_commands as suites
from llamon_playground.cli.terminal.control import (
    EXIT_USAGE,
    Command,
    cancel,
    fail,
    history,
    history_trim,
    host_action,
    host_logs,
    label,
    list_runs,
    new_session,
    print_token,
    rerun,
    run_command,
    send,
    stop_daemon,
)
from llamon_playground.cli.terminal.suite_ci import run_ci

JSON_HELP = "print the API's JSON document (keys sorted) instead of text"


def project_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", nargs="?", help=PROJECT_HELP)


def json_arg(parser: argparse.ArgumentParser, text: str = JSON_HELP) -> None:
    parser.add_argument("--json", action="store_true", help=text)


def add_part_options(parser: argparse.ArgumentParser) -> None:
    """`--data`, `--file`, `--metadata`, `--changed-file` of `send` and `resume`."""
    parser.add_argument("--data", action="append", metavar="JSON",
                        help="a data part: a JSON object (repeatable; after the text)")
    parser.add_argument("--file", action="append", metavar="PATH",
                        help="an inline file part, sent as base64 (repeatable; after the data)")
    parser.add_argument("--metadata", metavar="JSON", help="the run's metadata: a JSON object")
    parser.add_argument("--changed-file", action="append", metavar="PATH",
                        help="a file the run says changed (repeatable; project-relative)")


def add_follow_options(parser: argparse.ArgumentParser) -> None:
    """`--follow` and `--json` of the commands that start a run."""
    parser.add_argument("--follow", action="store_true",
                        help="print the answer as it streams; exit 1 unless it completes")
    json_arg(parser, "print the accepted run (with --follow: each event) as JSON")


def daemon_command(project_of: Callable[[str | None], Any],
                   command: Command) -> Callable[[argparse.Namespace], int]:
    return lambda args: run_command(project_of(args.project), args, command)


def history_command(project_of: Callable[[str | None], Any], args: argparse.Namespace) -> int:
    """`history [project]` or `history trim [project]` (a project folder named `trim` is
    given as `./trim`)."""
    words = list(args.words)
    command = history
    if words and words[0] == "trim":
        words.pop(0)
        command = history_trim
    if len(words) > 1 or (command is history_trim and args.dry_run):
        fail("usage: history [--dry-run] [project] | history trim [project]")
        return EXIT_USAGE
    return run_command(project_of(words[0] if words else None), args, command)


def runs_command(project_of: Callable[[str | None], Any], args: argparse.Namespace) -> int:
    """`runs [project]` or `runs show RUN [project]` (a project folder named `show` is given
    as `./show`)."""
    from llamon_playground.cli.terminal.inspect_commands import show
    words = list(args.words)
    if words and words[0] == "show":
        if len(words) not in (2, 3) or args.session:
            fail("usage: runs show RUN [project] [--full] [--json]")
            return EXIT_USAGE
        args.run_id = words[1]
        return run_command(project_of(words[2] if len(words) == 3 else None), args, show)
    if len(words) > 1 or args.full:
        fail("usage: runs [project] [--session ID] [--json] | runs show RUN [project] [--full]")
        return EXIT_USAGE
    return run_command(project_of(words[0] if words else None), args, list_runs)


def add_control_commands(sub: Any, project_of: Callable[[str | None], Any]) -> None:
    """Add the control commands to `sub`; each sets `func(args) -> exit code`."""
    host = sub.add_parser("host", help="the project's Host: status, start, stop, restart, logs")
    host_sub = host.add_subparsers(dest="action", required=True)
    for action in ("status", "start", "stop", "restart"):
        p = host_sub.add_parser(action, help=f"{action} the Host" if action != "status"
                                else "the Host's state")
        project_arg(p)
        json_arg(p)
        p.set_defaults(func=daemon_command(project_of, host_action))
    logs = host_sub.add_parser("logs", help="the Host's output (-f: keep following)")
    project_arg(logs)
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("--raw", action="store_true",
                      help="print the Host's bytes as they came (control characters and "
                           "escapes included); by default they are shown visibly")
    json_arg(logs, "one JSON object per line")
    logs.set_defaults(func=daemon_command(project_of, host_logs))

    runs = sub.add_parser("runs", help="list runs (all sessions, or one); `runs show RUN`: "
                                       "one run's detail and lineage")
    runs.add_argument("words", nargs="*", metavar="[show RUN] [project]",
                      help="`show RUN` prints one run; then " + PROJECT_HELP)
    runs.add_argument("--session", help="only this session's runs")
    runs.add_argument("--full", action="store_true",
                      help="runs show: every part whole (else texts stop at 2,000 characters)")
    json_arg(runs)
    runs.set_defaults(func=lambda args: runs_command(project_of, args))

    cancel_p = sub.add_parser("cancel", help="cancel the active run")
    cancel_p.add_argument("run_id", help="the run to cancel (the active one)")
    project_arg(cancel_p)
    cancel_p.add_argument("--wait", action="store_true", help="wait until the run has ended")
    json_arg(cancel_p)
    cancel_p.set_defaults(func=daemon_command(project_of, cancel))

    session_p = sub.add_parser("new-session", help="create a session; print its id")
    project_arg(session_p)
    session_p.add_argument("--title", default="", help="the session's title")
    json_arg(session_p)
    session_p.set_defaults(func=daemon_command(project_of, new_session))

    send_p = sub.add_parser("send", help="start a run with a text input")
    send_p.add_argument("session_id", help="the session to run in (`new-session` prints one)")
    send_p.add_argument("text", help="the input's text part (\"\": none, with --data or "
                                     "--file)")
    project_arg(send_p)
    add_part_options(send_p)
    add_follow_options(send_p)
    send_p.set_defaults(func=daemon_command(project_of, send))

    rerun_p = sub.add_parser("rerun", help="run a stored input again (optionally edited)")
    rerun_p.add_argument("run_id", help="the run whose input to send again")
    project_arg(rerun_p)
    rerun_p.add_argument("--text", help="replace the input with this one text part")
    rerun_p.add_argument("--label", help="name the new run")
    add_follow_options(rerun_p)
    rerun_p.set_defaults(func=daemon_command(project_of, rerun))

    label_p = sub.add_parser("label", help="name a run (\"\" clears the name)")
    label_p.add_argument("run_id", help="the run to name")
    label_p.add_argument("text", help="its label (\"\" clears it)")
    project_arg(label_p)
    label_p.add_argument("--note", help="also set the run's note (\"\" clears it)")
    json_arg(label_p)
    label_p.set_defaults(func=daemon_command(project_of, label))

    history = sub.add_parser(
        "history", help="history's size and counts, what the retention policy would remove; "
                        "`history trim` applies it now")
    history.add_argument("words", nargs="*", metavar="[trim] [project]",
                         help="`trim` applies the policy now; then " + PROJECT_HELP)
    history.add_argument("--dry-run", action="store_true",
                         help="only say what the policy would remove (the default)")
    json_arg(history)
    history.set_defaults(func=lambda args: history_command(project_of, args))

    stop = sub.add_parser("stop", help="stop the project's daemon gracefully, and every "
                                       "front serving the project")
    project_arg(stop)
    stop.add_argument("--timeout", type=float, default=60.0,
                      help="seconds to wait for the daemon to stop (default 60)")
    stop.set_defaults(func=lambda args: stop_daemon(project_of(args.project), args))

    token = sub.add_parser("token", help="print the token of the project's front(s)")
    project_arg(token)
    token.add_argument("--rotate", action="store_true",
                       help="replace the token (running fronts adopt it; old ones get 401)")
    token.set_defaults(func=lambda args: print_token(project_of(args.project), args))


def add_suite_commands(sub: Any, project_of: Callable[[str | None], Any]) -> None:
    """`suite create|list|run|save|report|cancel|baseline|delete` (their code: suite_commands.py);
    `--project` names the project (the positional words are run ids and names here)."""
    suite = sub.add_parser("suite", help="suites: pinned inputs rerun against the code on disk")
    suite_sub = suite.add_subparsers(dest="action", required=True)

    def command(name: str, help_text: str, func: Command,
                json_file: bool = False) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = suite_sub.add_parser(name, help=help_text)
        p.add_argument("--project", help=PROJECT_HELP)
        if json_file:
            p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                           help="the report as one JSON document: on stdout, or into FILE")
        else:
            json_arg(p)
        p.set_defaults(func=lambda args: run_command(project_of(args.project), args, func))
        return p

    p = command("create", "a suite from stored runs and/or sessions", suites.create)
    p.add_argument("name", help="the suite's name (unique)")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids (a resume chain whole)")
    p.add_argument("--session", action="append", metavar="ID", help="a whole session")
    p.add_argument("--run-on-save", action="store_true",
                   help="run it once for each new revision the Host restarts on")
    command("list", "the suites", suites.list_suites)
    p = command("run", "run a suite's cases against the code on disk", suites.run,
                json_file=True)
    p.add_argument("name", help="the suite to run")
    p.add_argument("--follow", action="store_true",
                   help="a line per case, then the summary; exit 5 when a status moved, "
                        "6 when a case was flaky")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="run each case N times (default: the suite's own, 1 unless its "
                        "file says)")
    p.add_argument("--ci", action="store_true",
                   help="one command in CI: the running daemon, else a private one with a "
                        "temporary history (stopped at the end); follows; exit 5 when a "
                        "case changed, 6 when one was flaky")
    p.add_argument("--junit", metavar="FILE", help="also write the report as JUnit XML")
    p.set_defaults(func=lambda args: (run_ci if args.ci else run_command)(
        project_of(args.project), args, suites.run))
    p = command("save", "write a suite as a reviewable file in the project", suites.save)
    p.add_argument("name", help="the suite to save")
    p.add_argument("--to", metavar="PATH",
                   help="a .json path under playground/suites/ (default "
                        "playground/suites/NAME.json)")
    p = command("report", "a suite run's report (a suite's name: its latest)", suites.report)
    p.add_argument("suite_run_id", metavar="NAME_OR_ID",
                   help="a suite's name (its latest suite run) or a suite-run id "
                        "(`suite run` prints one)")
    p = command("cancel", "cancel a suite run (the rest is skipped)", suites.cancel)
    p.add_argument("suite_run_id", help="the suite run to cancel")
    p = command("baseline", "make a suite run's results the cases' baselines",
                suites.baseline)
    p.add_argument("name", help="the suite whose baselines to replace")
    p.add_argument("suite_run_id", help="the suite run whose results become the baselines")
    p = command("delete", "delete a suite and its reports", suites.delete)
    p.add_argument("name", help="the suite to delete")
