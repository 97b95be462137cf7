"""The approval Flow's graph: two start nodes, both taking a contract named "request".

The Playground reads this module as source (never imports it) to build its input composer
and to find each node's function; the Host (app/host.py) imports it to run the Flow.
"""

from app import nodes
from app.flowkit import END, START, DataContract, Graph

APPROVAL_REQUEST = DataContract(
    name="request",
    schema="approval.v1",
    fields={
        "requestId": {"type": "string", "required": True},
        "amount": {"type": "number", "required": True},
        "quantity": {"type": "integer"},
        "urgent": {"type": "boolean"},
        "requester": {"type": "object", "required": True,
                      "description": "who asks: {name, email}"},
        "tags": "array",
    },
)

graph = Graph("approval_flow")
graph.add_node("approve", nodes.approve, input_contracts=[APPROVAL_REQUEST])
graph.add_node(
    "escalate",
    nodes.escalate,
    input_contracts=[
        DataContract(
            name="request",
            schema="escalation.v1",
            fields={
                "requestId": {"type": "string", "required": True},
                "level": {"type": "integer", "required": True},
                "reason": "string",
            },
        ),
    ],
)
graph.add_node("notify", nodes.notify)

graph.add_edge(START, "approve")
graph.add_edge(START, "escalate")
graph.add_edge("approve", "notify")
graph.add_edge("escalate", "notify")
graph.add_edge("notify", END)
