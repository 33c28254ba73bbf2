"""benchmarks/users.py on the tiny LoCoMo file: user scope recalls what session scope cannot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import users

DATA = Path(__file__).parent / "data" / "locomo_tiny.json"


@pytest.mark.parametrize("engine", ["hybrid", "higmem"])
def test_user_scope_recalls_evidence_of_earlier_conversations(engine):
    samples = json.loads(DATA.read_text())
    found = users.measure(samples, engine, None, (4, 8))
    fresh, user = found["session scope, fresh"], found["user scope, fresh"]
    assert fresh["recall@8"] == 0.0  # a new conversation alone knows nothing
    assert user["recall@8"] > 0.5
    assert user["recall@8"] >= found["session scope, latest"]["recall@8"]
    assert user["questions"] == fresh["questions"] > 0


def test_each_locomo_session_is_a_conversation_of_the_user():
    sample = json.loads(DATA.read_text())[0]
    conversations = users._conversations(sample)
    assert len(conversations) > 1
    assert all(sid.startswith(f"{sample['sample_id']}-s") for sid, _ in conversations)
    assert {t.extra["session"] for _, turns in conversations[:1] for t in turns} == {"1"}
