"""A Host with a bug, for the hostile_inputs bench: what it does is the run's input text.

  big_event   one artifactUpdate of 64 MiB of text
  long_line   a `data: ` line of 400 MiB that never ends (written 1 MiB at a time)
  logs        600 log lines of 1 MB on stdout, then a short answer
  captures    2,000 capture events naming 64 KiB nodes, 15 to a request, then a short answer
  deltas N    N appended artifact deltas of 1 KiB each (270,000: a 270 MB answer)
  anything else: a short answer

Stdlib only (and the Playground's own Host-side capture helper), so it starts fast.
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from llamon_playground.host_manager.host_side.capture import PlaygroundCapture, open_envelope

MIB = 1024 * 1024


def frame(result: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps({"jsonrpc": "2.0", "id": "1", "result": result}).encode() \
        + b"\n\n"


def artifact(task: str, text: str) -> bytes:
    return frame({"artifactUpdate": {"taskId": task, "contextId": "c", "artifact": {
        "artifactId": "a", "parts": [{"text": text}]}}})


def status(task: str, state: str) -> bytes:
    return frame({"statusUpdate": {"taskId": task, "contextId": "c",
                                   "status": {"state": state}}})


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        card = json.dumps({"name": "hostile", "supportedInterfaces": [
            {"url": f"http://127.0.0.1:{port}/", "protocolBinding": "JSONRPC",
             "protocolVersion": "1.0"}]}).encode()
        self.send_response(200 if self.path.startswith("/.well-known/") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(card)))
        self.end_headers()
        self.wfile.write(card)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        params = body.get("params", {})
        parts = params.get("message", {}).get("parts", [])
        mode = parts[0].get("text", "") if parts else ""
        _, run_id = open_envelope(PlaygroundCapture.from_env(), params.get("metadata", {}))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        task = "t1"
        try:
            self.wfile.write(frame({"task": {"id": task, "contextId": "c",
                                             "status": {"state": "TASK_STATE_WORKING"}}}))
            if mode == "big_event":
                self.wfile.write(artifact(task, "x" * (64 * MIB)))
            elif mode == "long_line":
                self.wfile.write(b"data: ")
                chunk = b"y" * MIB
                for _ in range(400):
                    self.wfile.write(chunk)
            elif mode == "logs":
                line = "z" * 1_000_000
                for _ in range(600):
                    print(line, flush=True)
            elif mode.startswith("deltas "):
                delta = json.dumps({"jsonrpc": "2.0", "id": "1", "result": {"artifactUpdate": {
                    "taskId": task, "contextId": "c", "append": True, "artifact": {
                        "artifactId": "a", "parts": [{"text": "d" * 1023 + "\n"}]}}}})
                block = (b"data: " + delta.encode() + b"\n\n") * 64
                for _ in range(int(mode.split()[1]) // 64):
                    self.wfile.write(block)
            elif mode == "captures" and run_id is not None:
                capture = PlaygroundCapture.from_env()
                assert capture is not None
                node = "n" * (64 * 1024)
                for start in range(0, 2000, 15):
                    capture.emit(run_id, [{"type": "node.start", "node": node}
                                          for _ in range(min(15, 2000 - start))])
            self.wfile.write(artifact(task, "done"))
            self.wfile.write(status(task, "TASK_STATE_COMPLETED"))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon stopped reading: what a Host over its limit gets


def main() -> None:
    port = int(os.environ["LLAMON_HOST_PORT"])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"hostile host on {port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
