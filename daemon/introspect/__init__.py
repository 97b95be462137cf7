"""Project introspection: read the project's source as text and AST, never import it.

- `graph_ast`: a Flow's graph module → nodes, edges, input contracts, diagnostics.
- `composer`, `agent_card`: the input composer's tabs, from the graph or the live AgentCard.
- `source_targets`: where a node's function lives (file, line, column).
- `snippets`: Copy curl / Copy Python of a run's A2A request.
- `project_config`: the project's `[tool.llamon]` table.
- `service`: the rules the routes ask (which composer; a snippet's address and protocol
  version), over the live Host's URL and history's readers handed in by its builder.

Above `a2a` (the agent card, the snippets' requests) and `data` (redaction), beside `store`:
it reads the project's files, never history.

May import: common, daemon.errors, daemon.a2a, daemon.data
"""

from llamon_playground.daemon.introspect.model import Diagnostic
from llamon_playground.daemon.introspect.project_source import ProjectSource, validate_graph

__all__ = ["Diagnostic", "ProjectSource", "validate_graph"]
