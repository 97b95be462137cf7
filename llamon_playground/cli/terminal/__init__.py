"""The command's verbs as a terminal meets them: the argument definitions (`commands`), the
control commands on a running daemon (`control`, `more`, `search`, `suite_commands`), what they print
(`show`), and `up` with what it watches (`up`, `daemon_watch`).

May import: common, host_manager, daemon, api, cli.api_requests, cli.api_suites,
    cli.api_types, cli.bundled_example, cli.client, cli.connect, cli.daemon_fork, cli.discovery,
    cli.errors, cli.events, cli.front_record, cli.suites_client
"""
