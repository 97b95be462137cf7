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
except BrokenPipeError:  # refused before the offer was read: nothing was handed over
    sent = False
else:
    sent = True
offered.close()
try:
    reply = ctl.recv(1) if sent else b""
except ConnectionResetError:  # closed with the message unread
    reply = b""
print(repr(reply), repr(mine.recv(1)))
