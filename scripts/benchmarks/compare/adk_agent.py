"""The ADK agent the comparison runs: no model, `tokens N` streams N tokens.

It is written into a temp dir as an ADK agents folder (`<app>/__init__.py`, `<app>/agent.py`
with `root_agent`) and loaded by `adk api_server` from the ADK venv, never imported here.
It answers as an LLM agent in SSE streaming mode does: one partial event per token
("t0 ", "t1 ", ...: the bundled example's `tokens N`), then one final event with the whole
text (the one the session service stores). A save (`save_agent`) prefixes its tokens with a
mark, so the client can tell the first output of the saved code.
"""

from __future__ import annotations

from pathlib import Path

APP_NAME = "tokens_agent"

AGENT_SOURCE = '''\
"""A model-free agent for measuring the server: `tokens N` streams N tokens."""
import asyncio

from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.genai import types

MARK = ""  # a save changes it: its tokens then say which save they come from


def _count(ctx):
    content = ctx.user_content
    text = "".join(p.text or "" for p in (content.parts or [])) if content else ""
    words = text.split()
    return int(words[1]) if len(words) > 1 and words[1].isdigit() else 1


class TokensAgent(BaseAgent):
    async def _run_async_impl(self, ctx):
        chunks = []
        for n in range(_count(ctx)):
            chunk = f"{MARK}t{n} "
            chunks.append(chunk)
            yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
                        partial=True,
                        content=types.Content(role="model", parts=[types.Part(text=chunk)]))
            await asyncio.sleep(0)  # as the example Host: each token its own frame
        yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
                    content=types.Content(role="model",
                                          parts=[types.Part(text="".join(chunks))]))


root_agent = TokensAgent(name="APP", description="streams N tokens, no model")
'''.replace("APP", APP_NAME)


def write_agents_dir(parent: Path) -> Path:
    """An agents folder holding the one app; its path (what `adk api_server` is given)."""
    agents = parent / "agents"
    app = agents / APP_NAME
    app.mkdir(parents=True)
    (app / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (app / "agent.py").write_text(AGENT_SOURCE, encoding="utf-8")
    return agents


def save_agent(agents: Path, mark: str) -> None:
    """Save the agent as an editor would, its tokens now starting with `mark`."""
    source = AGENT_SOURCE.replace('MARK = ""', f"MARK = {mark!r}", 1)
    (agents / APP_NAME / "agent.py").write_text(source, encoding="utf-8")
