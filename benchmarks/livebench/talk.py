"""The conversation of the live benchmark: LoCoMo's dev conversations cycled with variations
(names and numbers change each cycle), one user + assistant exchange at a time, a new day
every ``TURNS_PER_DAY`` turns, and questions about what was said earlier."""

from __future__ import annotations

import random
import re
from datetime import datetime, timezone
from pathlib import Path

from _common import DEFAULT_LOCOMO, load_locomo, locomo_turns

from langchain_recursive_memory.core import Turn

TURNS_PER_DAY = 20
START = datetime(2023, 1, 2, 9, 0, tzinfo=timezone.utc).timestamp()


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NAMES = _words(
    "Ada Bruno Chloe Dmitri Elena Farid Grace Hiro Ines Jonas Kemal Lena Mateo Nadia Oskar "
    "Priya Quentin Rosa Samir Tove Umar Vera Wanda Xavier Yusuf Zoe Amara Bjorn Carmen Diego"
)
STOPWORDS = frozenset(
    _words(
        "about after again also because been before being between both came come could did "
        "does doing down each even ever from going good have having here into just know like "
        "made make many more most much must never only other over really said same should "
        "since some still such sure take than thank thanks that their them then there these "
        "they thing things think this those though time very want well were what when where "
        "which while will with would your yours you're that's it's i'm don't can't"
    )
)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z']{3,}")
_NUMBER_RE = re.compile(r"\d+")


def _locomo_lines(path: Path | None) -> list[tuple[str, str]]:
    """Every LoCoMo turn of the file as ``(speaker, text)``, conversations one after another."""
    if path is None or not Path(path).exists():
        return []
    return [
        (str(turn["speaker"]), str(turn["text"]))
        for sample in load_locomo(path)
        for turn in locomo_turns(sample)
        if turn["text"]
    ]


def _generated_lines(count: int) -> list[tuple[str, str]]:
    """Sentences with names, places, numbers and dates (when the LoCoMo file is missing)."""
    rng = random.Random(7)
    things = ("violin", "marathon", "recipe", "garden", "invoice", "concert", "ticket")
    places = ("Oslo", "Lisbon", "Nairobi", "Osaka", "Quito", "Tbilisi", "Perth", "Leeds")
    months = ("January", "March", "April", "May", "June", "July", "August", "October")
    lines = []
    for i in range(count):
        speaker = ("Caroline", "Melanie")[i % 2]
        lines.append(
            (
                speaker,
                f"I took the {rng.choice(things)} to {rng.choice(places)} on "
                f"{rng.randint(1, 28)} {rng.choice(months)}, it cost {rng.randint(5, 900)} "
                f"dollars and {rng.choice(NAMES)} came along with {rng.randint(2, 9)} friends.",
            )
        )
    return lines


_LINES: dict[str, list[tuple[str, str]]] = {}


class Talk:
    """One long conversation: LoCoMo turns cycled with variations, as exchanges.

    ``variant`` picks where in the corpus the conversation starts and how names and numbers
    are varied, so the sessions of a user differ. Turn ``i`` is the user's when ``i`` is
    even, the assistant's when odd; a new day starts every ``TURNS_PER_DAY`` turns.
    """

    def __init__(self, data: Path | str | None = DEFAULT_LOCOMO, variant: int = 0) -> None:
        key = str(data)
        if key not in _LINES:
            _LINES[key] = _locomo_lines(Path(data) if data else None) or _generated_lines(3000)
        self.lines = _LINES[key]
        self.variant = variant
        self.offset = (variant * 997) % len(self.lines)

    def _names(self, cycle: int) -> dict[str, str]:
        if cycle == 0:
            return {}
        speakers = sorted({s for s, _ in self.lines})
        return {
            s: NAMES[(i * 7 + cycle * 3 + self.variant) % len(NAMES)]
            for i, s in enumerate(speakers)
        }

    def text(self, i: int) -> tuple[str, str]:
        """Speaker and text of turn ``i``."""
        cycle, j = divmod(i + self.offset, len(self.lines))
        cycle += self.variant
        speaker, text = self.lines[j]
        if cycle:
            names = self._names(cycle)
            text = _NUMBER_RE.sub(lambda m: str(int(m.group()) + cycle), text)
            for old, new in names.items():
                text = re.sub(rf"\b{re.escape(old)}\b", new, text)
            speaker = names.get(speaker, speaker)
        return speaker, text

    @staticmethod
    def created(i: int) -> float:
        """When turn ``i`` was said: a new day every ``TURNS_PER_DAY`` turns."""
        day, minute = divmod(i, TURNS_PER_DAY)
        return START + day * 86400 + minute * 45

    def turn(self, i: int) -> Turn:
        speaker, text = self.text(i)
        role = "user" if i % 2 == 0 else "assistant"
        return Turn(role=role, text=text, name=speaker, created_at=self.created(i))

    def turns(self, start: int, count: int) -> list[Turn]:
        return [self.turn(i) for i in range(start, start + count)]

    def question(self, rng: random.Random, upto: int) -> str:
        """A question about something said in turns ``0 .. upto - 1``."""
        i = rng.randrange(max(upto, 1))
        speaker, text = self.text(i)
        words = [w for w in _WORD_RE.findall(text) if w.lower() not in STOPWORDS]
        picked = " ".join(rng.sample(words, min(3, len(words)))) or "that"
        roll = rng.random()
        if roll < 0.25:
            day = datetime.fromtimestamp(self.created(i), timezone.utc)
            return f"What did {speaker} tell me on {day.day} {day:%B %Y} about {picked}?"
        if roll < 0.6:
            return f"When did {speaker} mention {picked}?"
        return f"What did {speaker} say about {picked}?"
