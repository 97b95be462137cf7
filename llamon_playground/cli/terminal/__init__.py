"""The command's verbs as a terminal meets them: the argument definitions (`commands`), the
control commands on a running daemon (`control`, `more`, `search`), what they print
(`show`), and `up` with what it watches (`up`, `daemon_watch`).

May import: common, host_manager, daemon, api, cli.api_requests, cli.api_types,
    cli.bundled_example, cli.client, cli.discovery, cli.errors, cli.events,
    cli.front_record
"""
