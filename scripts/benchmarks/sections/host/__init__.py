"""Sections on the Host: the daemon at rest beside a Ready Host, cold and warm restarts."""
