"""Asks GET /health on the Unix socket named by argv[1] and prints the raw answer."""

import socket
import sys

sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
sock.sendall(b"GET /health HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
data = b""
while chunk := sock.recv(65536):
    data += chunk
print(data.decode(errors="replace"))
