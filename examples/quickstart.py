"""A long conversation through RecursiveSummaryChatMessageHistory.

Run it offline, with no API key:

    python examples/quickstart.py

It plays a scripted 150-exchange conversation (a user planning a trip, stating names,
numbers and dates along the way) and prints, as it goes, the tokens of the full history
against the tokens of the context the memory hands to the model, then the final summary
and window.

Offline stand-ins, said plainly:

* the *assistant's replies* come from a scripted responder, not a model;
* the *summary* comes from the no-LLM extractive summarizer (a rolling extract of the
  latest folded messages), because no summarizer model is configured.

With a real model (a LangChain ``provider:model`` string, its integration package and its
API key), both are real:

    pip install langchain langchain-openai && export OPENAI_API_KEY=...
    python examples/quickstart.py --model openai:gpt-4o-mini
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from rich.console import Console
from rich.table import Table

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory, TokenCounter
from langchain_recursive_memory.messages import message_to_turn

FACTS = [
    "My name is Ada Quist and I am planning a trip to Japan with my brother Bob.",
    "We land in Tokyo on 14 March 2027 and fly home on 2 April 2027.",
    "Our budget is 4,800 euros for both of us, flights excluded.",
    "Bob is allergic to peanuts, so restaurants must be careful about that.",
    "I prefer trains over buses, and we both want one night in a ryokan.",
    "We decided to spend 5 nights in Kyoto and 3 nights in Osaka.",
]


def user_message(i: int) -> str:
    if i % 25 < len(FACTS) and i < 25:
        return FACTS[i % 25]
    topics = ["temples", "ramen", "museums", "day trips", "markets", "onsen", "gardens"]
    topic = topics[i % len(topics)]
    return f"Question {i}: what would you suggest about {topic} for day {i % 19 + 1}?"


def scripted_reply(question: str, i: int) -> str:
    return (
        f"(scripted reply {i}) Good point about '{question[:48]}'. "
        "I would plan it around the train schedule and keep an hour free."
    )


def load_chat_model(name: str | None) -> Any:
    if not name:
        return None
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        sys.exit("--model needs the langchain package: pip install langchain")
    return init_chat_model(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("LRM_MODEL"), help="provider:model")
    parser.add_argument("--exchanges", type=int, default=150)
    parser.add_argument("--max-tokens", type=int, default=1500)
    parser.add_argument("--path", help="the store's folder (default: a temporary one)")
    args = parser.parse_args(argv)

    console = Console(width=110)
    chat_model = load_chat_model(args.model)
    path = args.path or tempfile.mkdtemp(prefix="lrm-quickstart-")
    history = RecursiveSummaryChatMessageHistory(
        "quickstart",
        llm=chat_model,  # None: the documented no-LLM extractive summarizer
        path=path,
        max_tokens=args.max_tokens,
        max_summary_tokens=300,
        tokenizer_model=args.model or "gpt-4o-mini",
    )
    history.clear()
    counter = TokenCounter(args.model or "gpt-4o-mini")

    if chat_model is None:
        console.print(
            "[bold]Offline run.[/] Replies: scripted stand-in. Summary: the no-LLM "
            "extractive summarizer. Pass --model provider:model to use a real model."
        )
    else:
        console.print(f"[bold]Using {args.model}[/] for replies and for the summary.")
    console.print(f"Store: {path}\n")

    table = Table(title="Context handed to the model vs the full history")
    for col in (
        "exchange",
        "full history tokens",
        "context tokens",
        "summary tokens",
        "window messages",
        "stored messages",
    ):
        table.add_column(col, justify="right")

    system = SystemMessage("You are a concise travel assistant.")
    full: list[BaseMessage] = []
    for i in range(args.exchanges):
        question = HumanMessage(user_message(i))
        context = history.messages
        if chat_model is None:
            reply = AIMessage(scripted_reply(question.content, i))  # type: ignore[arg-type]
        else:
            reply = chat_model.invoke([system, *context, question])
        history.add_messages([question, reply])
        full += [question, reply]
        if (i + 1) % 25 == 0 or i + 1 == args.exchanges:
            ctx = history.context()
            summary_tokens = ctx.summary.tokens if ctx.summary else 0
            full_tokens = counter.count_turns([message_to_turn(m) for m in full])
            table.add_row(
                str(i + 1),
                f"{full_tokens:,}",
                f"{ctx.tokens:,} / {args.max_tokens:,}",
                str(summary_tokens),
                str(len(ctx.window)),
                str(len(history.all_messages())),
            )
    console.print(table)

    ctx = history.context()
    summary = history.get_summary()
    method = summary.method if summary else "none"
    console.print(
        f"\n[bold]Summary[/] (version {summary.version if summary else 0}, "
        f"{method}, covers {summary.covered if summary else 0} messages):"
    )
    console.print(summary.text if summary else "(no fold yet)", markup=False)
    console.print(f"\n[bold]Window[/] ({len(ctx.window)} recent messages, verbatim; last 6):")
    for turn in ctx.window[-6:]:
        console.print(f"  {turn.role}: {turn.text[:90]}", markup=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
