"""A misbehaving Host, chosen by argv[1]; stdlib only so it starts fast.

  card        serves the agent card and ends on SIGTERM: a Host whose manners are not the test's
              subject (its stop takes no grace period)
  stubborn    serves the agent card, ignores SIGTERM; /sse holds a connection open
  grandchild  starts a grandchild that inherits stdout, serves the card; GET /exit exits
  crash       prints a line and exits 1 at once
  never       prints a line and never serves anything
  elsewhere   serves a card that advertises another address (a Host behind a wrong `url`)
  leaky       prints its capture token (as a Host printing its environment would), keeps a
              copy in ./tokens.txt for the test, and exits 1
  split       like leaky, but writes its token in two writes with a flush between, then a 3 MiB
              line and 300 lines of 100 bytes (more than a small host.log holds), then exits 1
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CARD = json.dumps({"name": "tiny", "supportedInterfaces": []}).encode()
# Port 1 on loopback: nothing listens there, so a client that trusts the card cannot connect.
ELSEWHERE_CARD = json.dumps({"name": "tiny", "supportedInterfaces": [
    {"url": "http://127.0.0.1:1/", "protocolBinding": "JSONRPC",
     "protocolVersion": "1.0"}]}).encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/.well-known/agent-card.json":
            card = ELSEWHERE_CARD if sys.argv[1] == "elsewhere" else CARD
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(card)))
            self.end_headers()
            self.wfile.write(card)
        elif self.path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            while True:  # a client that never lets go, like a Studio tab
                self.wfile.write(b": ping\n\n")
                self.wfile.flush()
                time.sleep(0.2)
        elif self.path == "/exit":
            self.send_response(200)
            self.end_headers()
            self.wfile.flush()
            os._exit(0)
        else:
            self.send_response(404)
            self.end_headers()


def serve() -> None:
    port = int(os.environ["LLAMON_HOST_PORT"])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"tiny host {sys.argv[1]} on {port}", flush=True)
    server.serve_forever()


def main() -> None:
    mode = sys.argv[1]
    if mode == "crash":
        print("tiny host: crashing on purpose", flush=True)
        sys.exit(1)
    if mode == "leaky":
        token = os.environ["LLAMON_CAPTURE_TOKEN"]
        with open("tokens.txt", "a") as fh:
            fh.write(token + "\n")
        print(f"env: LLAMON_CAPTURE_TOKEN={token} HOME={os.environ.get('HOME')}", flush=True)
        print(f"again {token}", file=sys.stderr, flush=True)
        sys.exit(1)
    if mode == "split":
        token = os.environ["LLAMON_CAPTURE_TOKEN"]
        with open("tokens.txt", "a") as fh:
            fh.write(token + "\n")
        half = len(token) // 2
        os.write(1, f"env: LLAMON_CAPTURE_TOKEN={token[:half]}".encode())
        time.sleep(0.2)  # two reads on the daemon's side, not one
        os.write(1, f"{token[half:]} HOME=x\n".encode())
        os.write(1, b"z" * (3 << 20) + b"\n")  # a 3 MiB line: cut at 1 MiB
        for n in range(300):
            os.write(2, f"{n:04d} ".encode() + b"y" * 95 + b"\n")
        os.write(2, f"bye {token[:5]}".encode())
        time.sleep(0.2)
        os.write(2, f"{token[5:]}\n".encode())
        sys.exit(1)
    if mode == "never":
        print("tiny host: never going to be ready", flush=True)
        while True:
            time.sleep(3600)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "grandchild":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        print(f"grandchild pid {child.pid}", flush=True)
    serve()


if __name__ == "__main__":
    main()
