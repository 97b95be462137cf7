"""Offers a connection (one end of a socket pair) on the hand-over socket argv[1]: prints the
reply byte, and whether the daemon closed the descriptor it was sent (the pair's other end
then reads EOF)."""

import socket
import sys

mine, offered = socket.socketpair()
mine.settimeout(10)
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
ctl.settimeout(10)
ctl.connect(sys.argv[1])
try:
    socket.send_fds(ctl, [b"GET /health HTTP/1.1\r\nHost: d\r\n\r\n"], [offered.fileno()])
    offered.close()
    reply = ctl.recv(1)
except (ConnectionResetError, BrokenPipeError):  # refused before (or after) the message
    offered.close()
    reply = b""
print(repr(reply), repr(mine.recv(1)))
