"""Token counting: exact, offline, never waiting for a network."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from langchain_recursive_memory.core import (
    TokenCounter,
    TokenizerError,
    ToolCall,
    Turn,
    encoding_name_for_model,
    get_encoding,
)
from langchain_recursive_memory.core.tokenizer import DEFAULT_MEDIA_TOKENS

SAMPLES = [
    "hello world",
    "Ada Lovelace was born on 10 December 1815 in London.",
    "naïve café — 東京タワー 😀 <|endoftext|> 'll 've\r\n\t  x",
    "def f(x):\n    return x ** 2  # comment\n",
    "1234567890 3.14159 $19.99 50% https://example.com/a?b=c",
]


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("openai:gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("azure/gpt-4o", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("anthropic:claude-sonnet-4-5", "cl100k_base"),
        ("llama3", "cl100k_base"),
    ],
)
def test_encoding_is_chosen_from_the_model_name(model, encoding):
    assert encoding_name_for_model(model) == encoding
    assert TokenCounter(model).encoding_name == encoding


def test_encoding_override_and_unknown_encoding():
    assert TokenCounter("gpt-4o", encoding="cl100k_base").encoding_name == "cl100k_base"
    with pytest.raises(TokenizerError, match="p50k_base"):
        TokenCounter(encoding="p50k_base")


def _official_tokens(name: str) -> list[list[int]]:
    """Tokenize SAMPLES with tiktoken's own loader, from llama-index's bundled cache."""
    llama = pytest.importorskip("llama_index.core")
    cache = Path(llama.__file__).parent / "_static" / "tiktoken_cache"
    code = textwrap.dedent(
        f"""
        import json, socket, sys, tiktoken
        def refuse(*a, **k):
            raise OSError("network disabled in this check")
        socket.socket.connect = refuse
        enc = tiktoken.get_encoding({name!r})
        print(json.dumps([enc.encode(s, disallowed_special=()) for s in json.loads(sys.argv[1])]))
        """
    )
    import json

    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(SAMPLES)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_bundled_encodings_tokenize_exactly_like_tiktoken(name):
    ours = get_encoding(name)
    assert [ours.encode(s, disallowed_special=()) for s in SAMPLES] == _official_tokens(name)
    assert ours.n_vocab == {"cl100k_base": 100277, "o200k_base": 200019}[name]


def test_loading_needs_no_network():
    code = textwrap.dedent(
        """
        import socket
        def refuse(*a, **k):
            raise OSError("network disabled")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from langchain_recursive_memory.core import TokenCounter
        print(TokenCounter("gpt-4o").count_text("hello world"),
              TokenCounter("gpt-4").count_text("hello world"))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    env["TIKTOKEN_CACHE_DIR"] = "/nonexistent"  # tiktoken's own cache is not used
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "2"]


def test_counts_in_process_with_sockets_refused(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a network call was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    counter = TokenCounter("gpt-4o-mini")
    assert counter.count_text("The quick brown fox") == 4


def test_message_overhead_matches_openai_accounting():
    # OpenAI cookbook: 3 tokens per message, +1 for a name, +3 reply priming; each value
    # (role, content, name) tokenized. For gpt-4o-mini this example is 10 + 3 + 3.
    counter = TokenCounter("gpt-4o-mini")
    enc = counter.encoding
    turn = Turn(role="user", text="Hello there, how are you?")
    expected = 3 + len(enc.encode("user")) + len(enc.encode(turn.text))
    assert counter.count_turn(turn) == expected
    named = Turn(role="user", text="hi", name="ada")
    assert counter.count_turn(named) == 3 + 1 + 1 + 1 + len(enc.encode("ada"))
    assert counter.count_turns([turn, named]) == 3 + expected + counter.count_turn(named)


def test_tool_calls_and_media_are_not_free():
    counter = TokenCounter()
    plain = counter.count_turn(Turn(role="assistant", text=""))
    with_call = counter.count_turn(
        Turn(role="assistant", tool_calls=(ToolCall("search", {"query": "weather in Oslo"}, "c1"),))
    )
    assert with_call > plain + 5
    image = Turn(
        role="user",
        text="what is this?",
        blocks=(
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50000}},
        ),
    )
    text_only = counter.count_turn(Turn(role="user", text="what is this?"))
    assert counter.count_turn(image) == text_only + DEFAULT_MEDIA_TOKENS
    thinking = Turn(
        role="assistant",
        text="",
        blocks=({"type": "thinking", "thinking": "Let me reason step by step about it."},),
    )
    assert counter.count_turn(thinking) > plain + 5


def test_truncate_prefers_sentence_ends_and_respects_the_limit():
    counter = TokenCounter()
    text = "Ada lives in Oslo. She has three cats. Her brother Bob is a pilot in Rome. " * 5
    for limit in (5, 17, 40, 100):
        cut = counter.truncate(text, limit)
        assert counter.count_text(cut) <= limit
        assert text.startswith(cut)
    assert counter.truncate(text, 40).endswith(".")
    assert counter.truncate("short", 10) == "short"
    assert counter.truncate("anything", 0) == ""
    emoji = "😀" * 50
    assert counter.count_text(counter.truncate(emoji, 7)) <= 7
    assert "\ufffd" not in counter.truncate(emoji, 7)


def test_long_texts_are_cached():
    counter = TokenCounter()
    text = "a long message " * 200
    first = counter.count_text(text)
    info_before = counter._cached_count.cache_info()
    assert counter.count_text(text) == first
    assert counter._cached_count.cache_info().hits == info_before.hits + 1


def test_tool_call_blocks_are_not_counted_twice():
    counter = TokenCounter()
    call = ToolCall("search", {"query": "weather in Oslo"}, "c1")
    plain = Turn(role="assistant", tool_calls=(call,))
    with_block = Turn(
        role="assistant",
        tool_calls=(call,),
        blocks=(
            {
                "type": "tool_use",
                "id": "c1",
                "name": "search",
                "input": {"query": "weather in Oslo"},
            },
        ),
    )
    assert counter.count_turn(with_block) == counter.count_turn(plain)


def test_nested_media_counts_as_media_and_other_strings_as_text():
    counter = TokenCounter()
    payload = "iVBORw0KGgo" + "A" * 60_000
    nested = Turn(
        role="tool",
        tool_call_id="c1",
        text="",
        blocks=({"type": "tool_result", "content": [{"type": "image", "data": payload}]},),
    )
    loose = Turn(role="user", text="", blocks=({"type": "custom", "data": payload},))
    assert counter.count_turn(nested) < DEFAULT_MEDIA_TOKENS + 40
    # Only blocks of a media type are media: any other string is counted exactly, however
    # long or payload-like (a reasoning block, a long document).
    assert counter.count_turn(loose) >= counter.count_text(payload)
    llama = Turn(role="user", text="", blocks=({"block_type": "image", "image": payload},))
    assert counter.count_turn(llama) < DEFAULT_MEDIA_TOKENS + 10
