"""Users and namespaces stay apart, whatever their ids and content look like (issue 16, item 3).

Property-based: two users whose ids, namespaces, session ids and statements are drawn to
look alike (the same session ids, ids that differ by case, a space, a zero-width space, or
that look like record keys or Chroma operators; the same attributes with near-identical
values). Nothing one user said ever reaches the other, by any read of any scope, and
forgetting one leaves the other whole; checked through the API and read back from Chroma.
"""

from __future__ import annotations

import json

from conftest import FAST
from fakes import FactModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_users import chat

from langchain_recursive_memory.core import HiGMem, HybridMemory, MemoryStore, Turn

SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

LOOK_ALIKE_IDS = [
    "ada",
    "Ada",
    "ada ",
    " ada",
    "ada\u200b",
    "ada:uf:user/locker",
    "default:ada",
    '{"$ne": ""}',
    "$or",
    "chat-1",
    "\u0430da",  # a Cyrillic a
]
ids = st.one_of(
    st.sampled_from(LOOK_ALIKE_IDS),
    st.just("a" * 1000),
    st.text(min_size=1, max_size=12).filter(lambda s: s.strip() and "\x00" not in s),
)
namespaces = st.sampled_from(["default", "Default", "default ", "tenant"])
attributes = st.sampled_from(["locker code", "home city", "diet", "pet name"])


def memory(store: MemoryStore, ns: str, user: str, sid: str) -> HybridMemory:
    return HybridMemory(
        sid,
        store=store,
        namespace=ns,
        user_id=user,
        model=FactModel(),
        retry=FAST,
        max_tokens=500,
        max_summary_tokens=80,
    )


def _all_documents(store: MemoryStore) -> str:
    """Every document and metadata of every collection of the store, read from Chroma."""
    rows = []
    for col in store.client.list_collections():
        if not col.name.startswith(store.prefix + "_"):
            continue  # in-memory stores share one client: other tests' collections
        got = store.client.get_collection(col.name).get(include=["documents", "metadatas"])
        rows.append([got["ids"], got["documents"], got["metadatas"]])
    return json.dumps(rows, ensure_ascii=False, default=str)


@SETTINGS
@given(
    victim=st.tuples(namespaces, ids),
    attacker=st.tuples(namespaces, ids),
    session=ids,
    attribute=attributes,
    secrets=st.lists(st.integers(100, 999), min_size=2, max_size=2, unique=True),
)
def test_no_read_of_one_user_returns_another_users_content(
    victim, attacker, session, attribute, secrets
):
    if victim == attacker:
        return
    store = MemoryStore.in_memory()
    mine, theirs = f"Zq{secrets[0]}", f"Zq{secrets[1]}"
    (vns, vuser), (ans, auser) = victim, attacker
    # The same session id in two namespaces (a look-alike one in one namespace: a session
    # has one user), the same attribute, values alike in form.
    other = session if vns != ans else session + "\u200b"
    chat(memory(store, vns, vuser, session), f"My {attribute} is {mine}.", filler=12)
    chat(memory(store, ans, auser, other), f"My {attribute} is {theirs}.", filler=12)
    HiGMem(session + "-h", store=store, namespace=vns, user_id=vuser).add(
        Turn(role="user", name="V", text=f"My {attribute} is {mine}.")
    )

    fresh = memory(store, ans, auser, other + "-new")
    question = f"What is my {attribute}? {mine}"
    seen = [h.text for scope in ("session", "user") for h in fresh.recall(question, 8, scope=scope)]
    seen += [f.text for f in fresh.facts()]
    seen += [t.text for t in fresh.context(question).turns]
    higmem = HiGMem(other + "-hq", store=store, namespace=ans, user_id=auser)
    seen += [r.turn.text for r in higmem.retrieve(question, 8, scope="user")]
    assert not any(mine in text for text in seen), seen
    assert any(theirs in text for text in seen)  # the attacker's own memory is there

    # Forgetting the attacker leaves the victim whole; forgetting the victim leaves nothing.
    before = store.user_facts(vns, vuser)
    store.forget_user(ans, auser)
    assert store.user_facts(vns, vuser) == before and before
    assert mine in _all_documents(store)
    assert theirs not in _all_documents(store)
    store.forget_user(vns, vuser)
    assert mine not in _all_documents(store)
