"""axe-core in the browser tests: the serious and critical violations of the page as it is.

axe-core comes vendored in the pinned `axe-playwright-python` (never fetched by the page);
it is injected by script, so the context it runs in must bypass the page's CSP
(`bypass_csp=True`); the page itself never loads it.
"""

from __future__ import annotations

from typing import Any

BLOCKING = ("serious", "critical")


def blocking_violations(page: Any) -> list[str]:
    """Each serious or critical violation as `rule: target, ...` (empty when there is none)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    found = []
    for violation in results.response["violations"]:
        if violation.get("impact") in BLOCKING:
            targets = [",".join(node["target"]) for node in violation["nodes"]][:5]
            found.append(f"{violation['id']} ({violation['impact']}): {targets}")
    return found
