"""HiGMem (arXiv 2604.18349): turn nodes and event nodes, LLM-guided retrieval.

* :mod:`.memory` - the :class:`HiGMem` facade;
* :mod:`.indexer` - construction (:mod:`.affiliation`, :mod:`.merge` with an LLM,
  :mod:`.heuristic` without), over :mod:`.state`;
* :mod:`.retrieval` - the no-LLM ranking and guided retrieval;
* :mod:`.config` - :class:`HiGMemConfig` and :class:`RetrievedTurn`.

Example:
    >>> from langchain_recursive_memory.core.higmem import HiGMem, HiGMemConfig
    >>> HiGMemConfig().no_llm_k
    8
"""

from .config import HiGMemConfig, RetrievedTurn
from .memory import HiGMem

__all__ = ["HiGMem", "HiGMemConfig", "RetrievedTurn"]
