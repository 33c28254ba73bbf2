"""The command line: ``langchain-recursive-memory`` or ``lrm`` (also ``python -m ...``).

Ingest transcripts (JSONL or LoCoMo) into a memory, look at what the memory hands to the
model (summary, window, facts, HiGMem events, token counts), recall memories for a
question, list, clear and expire sessions, list and forget users, rebuild derived state
from the turn log, and run an offline demo. Built on
:mod:`langchain_recursive_memory.core` only: it imports neither LangChain nor LlamaIndex
(``--model provider:model`` imports LangChain when, and only when, it is given).

Global options come before the command::

    lrm --path ./memory ingest chat.jsonl --session support-42
    lrm --path ./memory show support-42
    lrm --path ./memory recall support-42 "What is my order number?"
    lrm --path ./memory ingest week2.jsonl --session ada-2 --user ada
    lrm --path ./memory recall ada-2 "Where do I live?" --user ada
    lrm --path ./memory show --user ada
    lrm --path ./memory users
    lrm --path ./memory rebuild --user ada
    lrm --path ./memory forget-user ada --yes
    lrm --host 127.0.0.1 --port 8000 sessions
    lrm demo

Errors of the package (:class:`~.core.RecursiveMemoryError`) are printed as one line on
stderr with exit code 1; bad arguments exit with code 2.

Example:
    >>> from langchain_recursive_memory.cli import parse_duration
    >>> parse_duration("15m"), parse_duration("30d"), parse_duration("90")
    (900.0, 2592000.0, 90.0)
"""

from ._app import app, main, parse_duration

# Importing a command module registers its commands on ``app``; ``--help`` lists them in
# this order, hence no sorting here.
# isort: off
from . import ingest as ingest
from . import show as show
from . import sessions as sessions
from . import users as users
from . import demo as demo

# isort: on
from .demo import demo_turns as demo_turns

__all__ = ["app", "main", "parse_duration"]
