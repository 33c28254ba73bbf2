"""Offline stand-ins for the LLM in the benchmarks: they answer the real prompts in the
format the memories ask for, so the prompts (and their token counts) are exactly those a
real model would get. They are not models: quality is not measured with them.
"""

from __future__ import annotations

import json
import re

_LINE_RE = re.compile(r"^\[(\d+)\] (?:\[[^\]]*\] )?\w+(?: \(([^)]*)\))?: (.*)$")
_TURN_RE = re.compile(r"^\[(\d+)\] (?:\[[^\]]*\] )?([^:]+): (.*)$")
_EVENT_RE = re.compile(r"^(E\d+) \((\d+) turns\): (.*)$")


def summary_stand_in(prompt: str) -> str:
    """Answer like a compliant model: a summary near the cap, facts as JSON lines."""
    cap_match = re.search(r"at most (\d+) tokens", prompt)
    cap = int(cap_match.group(1)) if cap_match else 200
    block = prompt.split("<messages>\n")[-1].split("\n</messages>")[0]
    if prompt.startswith("Shorten"):
        return " ".join(prompt.split()[-int(cap * 0.7) :])
    facts = []
    for line in block.splitlines():
        match = _LINE_RE.match(line)
        if not match:
            continue
        number, speaker, text = match.groups()
        if re.search(r"\d|\b[A-Z][a-z]+\b", text[1:]):
            fact = " ".join(text.split()[:18])
            facts.append(
                json.dumps(
                    {
                        "key": f"{(speaker or 'user').lower()}/{abs(hash(fact)) % 10**8}",
                        "subject": speaker or "",
                        "fact": fact,
                        "time": "",
                        "sources": [int(number)],
                    }
                )
            )
    words = re.findall(r"[A-Za-z0-9']+", block)
    summary = " ".join(words[: int(cap * 0.6)]) + "."
    if "<facts></facts>" in prompt and prompt.startswith("You maintain"):
        return f"<summary>{summary}</summary>\n<facts>\n" + "\n".join(facts) + "\n</facts>"
    if prompt.startswith("Extract the atomic facts"):
        return "<facts>\n" + "\n".join(facts) + "\n</facts>"
    return summary


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def higmem_stand_in(prompt: str) -> str:
    """Answer HiGMem's analysis, turn-prediction and filter prompts."""
    if prompt.startswith("You index a conversation"):
        events = {}
        block = prompt.split("<events>\n")[1].split("\n</events>")[0]
        for line in block.splitlines():
            m = _EVENT_RE.match(line)
            if m:
                events[m.group(1)] = (int(m.group(2)), m.group(3))
        turns = prompt.split("<turns>\n")[1].split("\n</turns>")[0]
        out, touched = [], {}
        for line in turns.splitlines():
            m = _TURN_RE.match(line)
            if not m:
                continue
            n, speaker, text = int(m.group(1)), m.group(2), m.group(3)
            words = sorted(_words(text))
            target = next((e for e, (_, s) in events.items() if _words(s) & set(words)), None)
            target = target or f"NEW:{(words or ['chat'])[0]}"
            out.append(
                json.dumps(
                    {
                        "turn": n,
                        "keywords": words[:5],
                        "tags": ["chat"],
                        "context": f"{speaker} talks about {' '.join(words[:3])}.",
                        "entities": [speaker],
                        "events": [target],
                    }
                )
            )
            touched.setdefault(target, []).append((n, text))
        for target, items in touched.items():
            if target in events and events[target][0] >= 10:
                continue
            summary = " ".join(t for _, t in items)[:240]
            out.append(
                json.dumps(
                    {
                        "event": target,
                        "summary": summary,
                        "keywords": sorted(_words(summary))[:6],
                        "tags": ["chat"],
                        "entities": [],
                        "facts": [{"fact": t[:80], "time": "", "turn": n} for n, t in items[:2]],
                    }
                )
            )
        return "<index>\n" + "\n".join(out) + "\n</index>"
    if prompt.startswith(("An event from a conversation", "A question and candidate turns")):
        question = re.search(r"Question: (.*)", prompt)
        q = _words(question.group(1)) if question else set()
        block = prompt.split("<turns>\n")[1].split("\n</turns>")[0]
        keep = []
        for line in block.splitlines():
            m = _TURN_RE.match(line)
            if m and _words(m.group(3)) & q:
                keep.append(int(m.group(1)))
        return json.dumps(keep)
    return summary_stand_in(prompt)
