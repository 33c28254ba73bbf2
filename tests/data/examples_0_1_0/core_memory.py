"""The framework-free core: any function can be the summarizer (offline)."""

from langchain_recursive_memory.core import (
    FunctionTextModel,
    MemoryStore,
    RecursiveMemory,
    Turn,
)


def summarize(prompt: str) -> str:  # stand-in: call your LLM client here
    return "Ada is planning a trip to Kyoto in May 2027 with a budget of 3,000 euros."


memory = RecursiveMemory(
    "trip-planning",
    model=FunctionTextModel(summarize),
    store=MemoryStore.in_memory(),  # or MemoryStore.persistent("./memory")
    max_tokens=600,
    max_summary_tokens=120,
)
for i in range(40):
    memory.add(
        [
            Turn(role="user", text=f"Question {i} about the Kyoto trip in May 2027?"),
            Turn(role="assistant", text=f"Answer {i}: keep the 3,000 euro budget in mind."),
        ]
    )

context = memory.context()
print(context.tokens, "<= 600")
print(context.turns[0].text)  # the summary message comes first
print(len(context.window), "recent messages verbatim;", len(memory.turns()), "in the log")
