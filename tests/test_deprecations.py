"""0.2.0's public API keeps working in 0.3.0; 0.1.0's names, deprecated by 0.2.0, are gone.

``tests/data/api_0_2_0.json`` is the public surface of 0.2.0 (commit ``74f87b1``, written
by ``tests/data/make_api_0_2_0.py``): every public module and its ``__all__``, the members
of the classes it lists and their parameters, the parameters of its functions, the
positional order of its dataclasses, the attributes set on instances and the memory
options, without the names 0.2.0 itself deprecated (its ``deprecated`` section). Each must
still resolve and be accepted, without a warning. A name this round renames keeps working
until 0.4.0 and warns naming its replacement (:data:`RENAMED`, :data:`RENAMED_MEMBERS`).
What this round changed on purpose is in :data:`KNOWN_BREAKS`, each with its reason; an
entry that no longer breaks anything fails, so the table stays exact.

The names 0.2.0 deprecated (0.1.0's modules, names, members and keyword, announced as
removed in 0.3.0) now fail: ``ImportError``, ``AttributeError``, ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from langchain_recursive_memory.core import (
    ConfigurationError,
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    TokenCounter,
    Turn,
)
from langchain_recursive_memory.core.options import OPTIONS

DATA = Path(__file__).resolve().parent / "data"
API = json.loads((DATA / "api_0_2_0.json").read_text())
PREFIX = "is deprecated since 0.3.0 and will be removed in 0.4.0; use "

LRM = "langchain_recursive_memory"
CORE = f"{LRM}.core"
STORAGE = f"{CORE}.storage"

#: 0.2.0 name this round renamed -> what its warning says to use instead (until 0.4.0)
RENAMED: dict[str, str] = {
    f"{STORAGE}.server.{name}": f"langchain_recursive_memory.servers.{name}"
    for name in ("HEARTBEAT_SECONDS", "LocalChromaServer", "free_port", "wait_for_heartbeat")
} | {
    f"{CORE}.options.{name}": f"{CORE}.config.{name}"
    for name in ("MIN_SUMMARY_TOKENS", "SUMMARY_ROLES", "check_int")
}

#: class name -> {0.2.0 member this round renamed: what its warning says to use instead}
RENAMED_MEMBERS: dict[str, dict[str, str]] = {
    "SessionNodes": {
        "put_events": "store.session(ns, sid).nodes.commit()",
        "put_turn_nodes": "store.session(ns, sid).nodes.commit()",
    },
}


def _breaks(reason: str, *paths: str) -> dict[str, str]:
    return dict.fromkeys(paths, reason)


_SESSION_STATE = (
    "SessionState reads the session's head from the database: SessionState.head (a "
    "SessionHead) replaces the Chroma stamp and summary versions (CHANGELOG 0.3.0, "
    "Changed); repair_ids keeps its place (always empty until 0.4.0)"
)
_CHROMA_LOG = (
    "the log moved from Chroma into a database (CHANGELOG 0.3.0, Changed): 0.2.0's "
    "storage internals for it (Chroma record ids and filters, the chains of stamps and "
    "index links, one repository per collection, open-turn flags) are gone; applications "
    "use MemoryStore and store.session(ns, sid)"
)
_SESSION_STORE = (
    "store.session(ns, sid) writes through the database: the stamp, hint, link and "
    "late-write settling of the Chroma protocol are gone (SessionNodes.commit writes turn "
    "and event nodes in one transaction; summaries.commit(new, also) marks the folded "
    "turns itself)"
)
_VIEWS = (
    "a process's views of a session (turn index, HiGMem state, archive, user pool) catch "
    "up with seq > last seen from the database's head instead of following Chroma's "
    "chains and stamps (CHANGELOG 0.3.0, Changed; internal)"
)
_PARTS = (
    "MemoryStore's parts (store.parts, StoreParts) are gone (CHANGELOG 0.3.0, "
    "Removed); what the store's parts share is internal (core.storage.parts)"
)

_OPTIONS_MODEL = (
    "one options model (CHANGELOG 0.3.0, Changed): MemoryOptions is a frozen pydantic "
    "model (keyword arguments only; RecursiveMemory(options=...) takes it whole, so "
    "engine_options is gone), and OPTIONS/Option/OptionTable are derived from its fields "
    "(Option(name, annotation, rule, description); the rule holds layer, choices, aliases "
    "and surfaces; minimums are the model's constraints)"
)

#: 0.2.0 path (a module, name, member, ``member(parameter)`` or ``Class(positional
#: order)``; an entry covers what is under it) -> why this round broke it on purpose
KNOWN_BREAKS: dict[str, str] = {
    **_breaks(
        _SESSION_STATE,
        *(
            f"{module}.SessionState.{name}"
            for module in (CORE, STORAGE, f"{STORAGE}.records")
            for name in ("stamp", "versions", "__init__(stamp)", "__init__(versions)")
        ),
        *(
            f"{module}.SessionState(positional order)"
            for module in (CORE, STORAGE, f"{STORAGE}.records")
        ),
    ),
    **_breaks(
        _CHROMA_LOG,
        *(
            f"{STORAGE}.{module}"
            for module in (
                "directory",
                "frontier",
                "heads",
                "markers",
                "repositories",
                "repository",
                "users",
            )
        ),
        *(
            f"{STORAGE}.keys.{name}"
            for name in (
                "FACT_KIND",
                "OPEN_FLAGS",
                "REBUILD_TASKS",
                "TURN_KIND",
                "event_record_id",
                "fold_lease_id",
                "index_link_id",
                "namespace_filter",
                "new_usage_id",
                "open_filter",
                "open_key",
                "rebuild_key",
                "session_record_id",
                "stamp_record_id",
                "summary_hint_id",
                "summary_version_id",
                "turn_node_id",
                "turn_record_id",
                "user_record_id",
                "user_stamp_id",
            )
        ),
        f"{STORAGE}.facts.FactTable",
        f"{STORAGE}.lifecycle.SessionLifecycle",
        f"{STORAGE}.migrations.migrate_collections",
        f"{STORAGE}.nodes.EventNodes",
        f"{STORAGE}.nodes.HEAD_KIND",
        f"{STORAGE}.nodes.TurnNodes",
        f"{STORAGE}.records.IndexLink",
        f"{STORAGE}.records.SessionStamp",
        f"{STORAGE}.sessions.SETTING",
        f"{STORAGE}.sessions.SessionList",
        f"{STORAGE}.summaries.SummaryLog",
        f"{STORAGE}.summaries.summary_from_record",
        f"{STORAGE}.summaries.summary_metadata",
        f"{STORAGE}.turns.OpenTurns",
        f"{STORAGE}.turns.SCAN_PAGE",
        f"{STORAGE}.turns.TurnLog",
        f"{STORAGE}.turns.TurnRow",
        f"{STORAGE}.turns.turn_from_record",
        f"{STORAGE}.turns.turn_metadata",
        f"{STORAGE}.usage.UsageLog",
        f"{STORAGE}.user_facts.UserFacts.stamp",
        f"{STORAGE}.user_facts.UserFacts.__init__",
    ),
    **_breaks(
        _SESSION_STORE,
        *(
            f"{module}.{name}"
            for module in (STORAGE, f"{STORAGE}.session_store")
            for name in (
                "SessionStore.__init__",  # built by store.session(ns, sid)
                "SessionStore.head(chain)",
                "SessionStore.head(start)",
                "SessionStore.join_user(memory)",
                "SessionStore.repos",
                "SessionStore.stamp",
            )
        ),
        f"{STORAGE}.session_store.SessionNodes.commit_link",
        f"{STORAGE}.session_store.SessionSummaries.hint",
        f"{STORAGE}.session_store.SessionTurns.settle",
    ),
    **_breaks(
        _VIEWS,
        f"{CORE}.higmem.state.SessionIndex",
        f"{CORE}.higmem.state.new_link",
        f"{CORE}.recursive.archive.ArchiveIndex.folded",
        f"{CORE}.retrieval.index.TurnIndex.seq_map",
        f"{CORE}.retrieval.pool.user_pool_steps(given)",
        f"{CORE}.retrieval.view",
    ),
    **_breaks(
        _OPTIONS_MODEL,
        f"{CORE}.builder.MemoryOptions.engine_options",
        f"{CORE}.builder.MemoryOptions(positional order)",
        f"{CORE}.options.Option",
        f"{CORE}.options.OptionTable.__init__",
        f"{CORE}.options.OptionTable.registered",
    ),
    **_breaks(
        _PARTS,
        f"{STORAGE}.session_store.StoreParts",
        f"{CORE}.MemoryStore.parts",
    ),
}

#: 0.2.0 calls this round rejects on purpose -> why (tested below, each as it fails)
KNOWN_CALL_BREAKS = {
    f"{CORE}.MemoryStore.http": (
        "MemoryStore.http(host, port) needs database=URL, the database its workers share: "
        "a Chroma server alone holds only the facts and vectors now (CHANGELOG 0.3.0, "
        "Changed)"
    ),
}


def _covered(path: str) -> bool:
    return any(path == key or path.startswith((f"{key}.", f"{key}(")) for key in KNOWN_BREAKS)


def _resolve(path: str) -> tuple[Any, list[str]]:
    """Import ``path`` as a user would (the longest importable module, then attributes).

    Returns the object and the messages of the deprecation warnings it gave.
    """
    parts = path.split(".")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cut in range(len(parts), 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                if cut == 1:
                    raise
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
    return obj, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def _ours(warned: list[str]) -> list[str]:
    """The deprecation warnings of this library (``warn_deprecated``'s), not a dependency's."""
    return [w for w in warned if " is deprecated since " in w]


def _expected(old: str, replacement: str | None) -> list[str]:
    return [] if replacement is None else [f"{old} {PREFIX}{replacement}"]


def _accepted(fn: Any, name: str) -> bool:
    """Whether ``fn`` takes the keyword ``name`` (by name, or as a memory option)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature to read: taken as it was
        return True
    if name in params:
        return True
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    aliases = {alias for option in OPTIONS.values() for alias in option.aliases.values()}
    return takes_kwargs and (name in OPTIONS or name in aliases)


def _new_required(fn: Any, old: list[str]) -> list[str]:
    """The parameters ``fn`` requires that 0.2.0's did not take at all."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in params
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in old
    ]


def _param_breaks(path: str, fn: Any, old: list[str]) -> list[str]:
    missing = [f"{path}({name})" for name in old if not _accepted(fn, name)]
    return missing + [f"{path}(+{name})" for name in _new_required(fn, old)]


def _fields(cls: type) -> set[str]:
    fields = set(getattr(cls, "model_fields", {}) or {})
    fields |= set(getattr(cls, "__dataclass_fields__", {}) or {})
    return fields | {
        name for klass in cls.__mro__ for name in getattr(klass, "__annotations__", {})
    }


def _class_breaks(path: str, cls: Any) -> list[str]:
    if not inspect.isclass(cls):
        return [f"{path}(not a class)"]
    found = []
    fields = _fields(cls)
    for member, info in API["classes"][path].items():
        if not (hasattr(cls, member) or member in fields):
            found.append(f"{path}.{member}")
        elif info["kind"] in ("method", "classmethod", "staticmethod"):
            fn = getattr(cls, member)
            if inspect.isfunction(inspect.getattr_static(cls, member)):
                fn = functools.partial(fn, None)  # a method read from its class: no self
            found += _param_breaks(f"{path}.{member}", fn, info["params"])
    old = API["dataclasses"].get(path)
    if old is not None:
        positional = (
            [f.name for f in dataclasses.fields(cls) if f.init and not f.kw_only]
            if dataclasses.is_dataclass(cls)
            else []
        )
        if positional[: len(old)] != old:
            found.append(f"{path}(positional order)")
    return found


@functools.cache
def module_breaks(module: str) -> tuple[str, ...]:
    """Every way ``module``'s 0.2.0 surface fails today (paths, see :data:`KNOWN_BREAKS`)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return (module,)
    found: list[str] = []
    for name in API["modules"][module]:
        path = f"{module}.{name}"
        try:
            obj, warned = _resolve(path)
        except (ImportError, AttributeError):
            found.append(path)
            continue
        if _ours(warned) != _expected(path, RENAMED.get(path)):
            found.append(f"{path}(warns: {_ours(warned)})")
        if path in API["classes"]:
            found += _class_breaks(path, obj)
        elif path in API["functions"]:
            found += _param_breaks(path, obj, API["functions"][path])
    return tuple(found)


@pytest.mark.parametrize("module", sorted(API["modules"]))
def test_every_0_2_0_module_name_member_and_parameter_still_works(module):
    assert [b for b in module_breaks(module) if not _covered(b)] == []


# -- instances, options and the keywords the adapters take ---------------------------------


def _recorder() -> Any:
    """``tests/data/make_api_0_2_0.py``, the script that recorded 0.2.0's surface."""
    spec = importlib.util.spec_from_file_location("make_api_0_2_0", DATA / "make_api_0_2_0.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def instances():
    """The instances 0.2.0's attributes were recorded on, made the same way today."""
    return _recorder().instances()


def instance_breaks(instances: dict[str, Any]) -> list[str]:
    found = []
    for path, names in API["instance_attributes"].items():
        obj = instances[path]
        renamed = RENAMED_MEMBERS.get(type(obj).__name__, {})
        for name in names:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                present = hasattr(obj, name)
            warned = _ours([str(w.message) for w in caught])
            if not present:
                found.append(f"{path}.{name}")
            elif warned != _expected(f"{type(obj).__name__}.{name}", renamed.get(name)):
                found.append(f"{path}.{name}(warns: {warned})")
    return found


def test_every_0_2_0_instance_attribute_is_still_there(instances):
    assert [b for b in instance_breaks(instances) if not _covered(b)] == []


def test_every_known_break_is_still_one(instances):
    """An entry of :data:`KNOWN_BREAKS` that breaks nothing any more is taken out."""
    found = [b for module in API["modules"] for b in module_breaks(module)]
    found += instance_breaks(instances)
    stale = [
        key
        for key in KNOWN_BREAKS
        if not any(b == key or b.startswith((f"{key}.", f"{key}(")) for b in found)
    ]
    assert stale == []


def test_renamed_names_warn_naming_their_replacement():
    for path, new in RENAMED.items():
        _, warned = _resolve(path)
        assert warned == [f"{path} {PREFIX}{new}"]
        replacement, again = _resolve(re.match(r"[\w.]+", new).group())
        assert again == [] and replacement is not None


@pytest.mark.parametrize("name", sorted(API["options"]))
def test_every_0_2_0_option_is_still_offered_where_it_was(name):
    old = API["options"][name]
    option = OPTIONS[name]
    assert set(old["surfaces"]) <= set(option.surfaces)
    assert {s: option.name_on(s) for s in old["surfaces"]} == {
        s: old["aliases"].get(s, name) for s in old["surfaces"]
    }


def _made(adapter: str, store: MemoryStore, keyword: str, value: Any) -> Any:
    cls, _ = _resolve(adapter)
    if adapter.startswith("llamaindex_higmem"):
        return cls.from_defaults(session_id="kw", store=store, **{keyword: value})
    if adapter.endswith("Middleware"):
        return cls(store=store, **{keyword: value})
    return cls("kw", store=store, **{keyword: value})


@pytest.mark.parametrize(
    ("adapter", "surface"),
    [
        (f"{LRM}.RecursiveSummaryChatMessageHistory", "python"),
        (f"{LRM}.RecursiveMemoryMiddleware", "python"),
        ("llamaindex_higmem.RecursiveSummaryMemory", "llamaindex"),
    ],
)
def test_every_0_2_0_adapter_option_is_still_taken(store, adapter, surface):
    """The options come through ``**kwargs``: each is made with it, at 0.2.0's default."""
    options = {n: o for n, o in API["options"].items() if surface in o["surfaces"]}
    assert {"max_tokens", "summary_role", "recall_scope"} <= set(options)
    for name, option in options.items():
        keyword = option["aliases"].get(surface, name)
        assert _made(adapter, store, keyword, option["default"]) is not None, keyword


def test_memory_store_http_needs_a_database_now():
    """The one known call break (:data:`KNOWN_CALL_BREAKS`): named, before any connection."""
    assert set(KNOWN_CALL_BREAKS) == {f"{CORE}.MemoryStore.http"}
    with pytest.raises(ConfigurationError, match="database"):
        MemoryStore.http("localhost", 8000)


# -- what 0.2.0 deprecated (0.1.0's names) is gone ------------------------------------------


REMOVED = API["deprecated"]


@pytest.mark.parametrize("module", REMOVED["modules"])
def test_the_0_1_0_modules_0_2_0_deprecated_are_gone(module):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


@pytest.mark.parametrize("path", REMOVED["names"])
def test_the_0_1_0_names_0_2_0_deprecated_are_gone(path):
    module, name = path.rsplit(".", 1)
    with pytest.raises(ImportError):
        exec(f"from {module} import {name}", {})


@pytest.mark.parametrize("path", sorted(REMOVED["members"]))
def test_the_0_1_0_members_0_2_0_deprecated_are_gone(path):
    cls, _ = _resolve(path)
    assert [m for m in REMOVED["members"][path] if hasattr(cls, m)] == []


def test_the_0_1_0_keyword_0_2_0_deprecated_is_gone(store):
    from langchain_recursive_memory.retrievers import hits_to_documents

    assert REMOVED["params"] == {f"{LRM}.retrievers.hits_to_documents": ["counter"]}
    memory = HybridMemory("old-docs", store=store)
    memory.add([Turn(role="user", text="The locker code is 4471.")])
    hits = memory.recall("locker code", k=2)
    with pytest.raises(TypeError, match="counter"):
        hits_to_documents(hits, memory, max_tokens=100, counter=TokenCounter())


OLD_IMPORTS = [
    f"from {CORE}.memory import RecursiveMemory",
    f"from {CORE}.store import MemoryStore",
    f"from {CORE}.window import plan_fold",
    f"from {CORE}.recall import rrf",
    f"from {CORE} import TurnNote",
    f"from {CORE}.ingest import ingest",
    f"from {CORE}.facts import parse_facts",
    f"from {CORE}.events import segment_events",
]


@pytest.mark.parametrize("statement", OLD_IMPORTS)
def test_a_0_1_0_import_fails_with_an_import_error_and_no_warning(statement):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ImportError):
            exec(statement, {})


def test_0_1_0_members_fail_with_an_attribute_error(store):
    memory = RecursiveMemory("old", store=store, fact_attempts=3)
    for old in ("summary", "asummary", "build_context", "fact_attempts", "shorten_attempts"):
        with pytest.raises(AttributeError):
            getattr(memory, old)  # get_summary(), aget_summary(), context(); what was passed
    with pytest.raises(AttributeError):
        HiGMem("old-graph", store=store).notes()  # turn_nodes()
    with pytest.raises(AttributeError):
        store.append  # noqa: B018 (store.session(ns, sid).turns.append)


def test_0_2_0_node_writes_still_work_and_name_commit(store):
    from langchain_recursive_memory.core import Turn
    from langchain_recursive_memory.core.events import Event, TurnNode

    session = store.session("default", "old-api")
    session.turns.append([Turn(role="user", text="Ada likes pears.", id="t1")], [6], "o200k_base")
    node = TurnNode(
        turn_id="t1", speaker="user", timestamp=1.7e9, segment="s0", keywords=("pears",)
    )
    event = Event(id="e1", summary="Ada and pears.", turn_ids=("t1",), created_at=1.7e9)
    replacement = "store.session(ns, sid).nodes.commit()"
    with pytest.warns(DeprecationWarning, match=re.escape(replacement)):
        session.nodes.put_turn_nodes([node])
    with pytest.warns(DeprecationWarning, match=re.escape(replacement)):
        session.nodes.put_events([event])
    assert [n.turn_id for n in session.nodes.turn_nodes()] == ["t1"]
    assert [e.summary for e in session.nodes.events()] == ["Ada and pears."]
    assert session.head().indexed == 2  # each an indexing of its own: readers see both
