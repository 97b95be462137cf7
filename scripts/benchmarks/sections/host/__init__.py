"""Sections on the Host: the daemon at rest beside a Ready Host, cold and warm restarts, and
the memory of everything `up` leaves running (up_memory)."""
