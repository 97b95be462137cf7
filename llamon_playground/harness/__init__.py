"""Starting the real daemon and fronts as owned processes, from outside the product.

The test suite and the benchmark both use it (and a project's own CI may): each process in
its own session, torn down by signalling its tree's groups with a deadline, never by name.
Nothing in the product imports this room.

May import: common, cli
"""
