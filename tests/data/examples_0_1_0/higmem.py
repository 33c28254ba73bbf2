"""HiGMem over a conversation, in LlamaIndex and LangChain (offline, no LLM).

With no LLM configured, HiGMem builds its events from the conversation's sessions and
retrieves with the no-LLM multi-scale hybrid ranking (BM25 over turns and windows of
turns, plus speaker and date cues; add an embedder for the dense half). Give it an LLM
(``model=...``, e.g. ``LangChainTextModel(init_chat_model("openai:gpt-4o-mini"))`` or a
LlamaIndex LLM through ``llamaindex_higmem.LlamaIndexTextModel``) for the paper's
LLM-built events and LLM-guided retrieval. MockLLM below only echoes its prompt: it is an
offline stand-in that shows what the answering model would be given.
"""

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from langchain_recursive_memory import HiGMemRetriever as LangChainHiGMemRetriever
from langchain_recursive_memory.core import HiGMem, MemoryStore
from langchain_recursive_memory.core.ingest import ingest, locomo_turns
from llamaindex_higmem import HiGMemRetriever

conversation = {  # LoCoMo format: sessions of turns, each session with its date
    "sample_id": "demo",
    "conversation": {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group today."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "How was it? I painted all day."},
            {
                "speaker": "Caroline",
                "dia_id": "D1:3",
                "text": "Inspiring! I want to study counseling.",
            },
        ],
        "session_2_date_time": "7:00 pm on 20 June, 2023",
        "session_2": [
            {
                "speaker": "Melanie",
                "dia_id": "D2:1",
                "text": "We went camping at the lake last weekend.",
            },
            {
                "speaker": "Caroline",
                "dia_id": "D2:2",
                "text": "Fun! I signed up for a pottery class.",
            },
        ],
    },
}

memory = HiGMem("demo", store=MemoryStore.in_memory())  # or path=..., model=..., embedder=...
ingest(memory, locomo_turns(conversation), progress=False)  # resumable, with a progress bar
print([event.summary for event in memory.events()])

retriever = HiGMemRetriever(memory, k=2)  # LlamaIndex
engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
response = engine.query("What did Caroline want to study?")
print([n.node.metadata["turn_id"] for n in response.source_nodes])

docs = LangChainHiGMemRetriever(memory=memory, k=2).invoke("When did Melanie go camping?")
print([(d.metadata["id"], d.metadata["time"]) for d in docs])
