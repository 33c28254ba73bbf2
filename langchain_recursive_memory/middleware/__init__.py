"""``RecursiveMemoryMiddleware``: recursive summary memory for LangChain v1 agents.

An ``AgentMiddleware`` for ``langchain.agents.create_agent``. Every message of the agent's
state is stored durably in the memory's log, and before each model call the model is sent,
instead of the whole history: the agent's system prompt (first, once), the running summary
(with the facts and turns recalled for the latest human message when recall is on), then
the most recent messages, all within ``max_tokens``. Tool calls are never split from their
results, no system message ever lands in the middle, and a failed summary is never shown
(the last good one is, with the newest messages that fit). The thread's state keeps only
the memory's window: what the memory folded leaves it at the end of each run, so a long
thread costs each call what a short one does (``trim_state=False`` keeps everything).

It needs the ``langchain`` package: ``pip install "langchain-recursive-memory[agents]"``.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware
    >>> memory = RecursiveMemoryMiddleware(
    ...     "user-42", store=MemoryStore.in_memory(), max_tokens=500, max_summary_tokens=100
    ... )
    >>> chat = GenericFakeChatModel(messages=iter([AIMessage("Hi Ada!"), AIMessage("Ada.")]))
    >>> agent = create_agent(chat, system_prompt="Be brief.", middleware=[memory])
    >>> _ = agent.invoke({"messages": [("user", "Hi, I'm Ada.")]})
    >>> agent.invoke({"messages": [("user", "Who am I?")]})["messages"][-1].content
    'Ada.'
    >>> [t.turn.text for t in memory.get_memory("user-42").turns()]  # no checkpointer needed
    ["Hi, I'm Ada.", 'Hi Ada!', 'Who am I?', 'Ada.']
"""

from ..core.errors import MissingDependencyError

try:
    from .agent import RecursiveMemoryMiddleware
    from .sessions import SessionResolver, UserResolver
except ImportError as exc:  # langchain (and langgraph) come with the [agents] extra
    raise MissingDependencyError.for_import(exc, "RecursiveMemoryMiddleware") from exc

__all__ = ["RecursiveMemoryMiddleware", "SessionResolver", "UserResolver"]
