"""LlamaIndex adapters of langchain-recursive-memory (HiGMem retriever, memories).

The adapters arrive with the HiGMem issue; this package already ships in the wheel so that
``import llamaindex_higmem`` works and its public surface is pinned from the start.
"""

from __future__ import annotations

__all__: list[str] = []
