"""Write ``tests/data/api_0_2_0.json``: the public surface of the 0.2.0 release.

Run it with the 0.2.0 release's code (commit ``74f87b1``), not today's::

    git -C /work/main worktree add --detach /tmp/api020 74f87b1
    python3 -m venv /tmp/api020/.venv
    /tmp/api020/.venv/bin/pip install -e "/tmp/api020[all]"
    /tmp/api020/.venv/bin/python tests/data/make_api_0_2_0.py /tmp/api020

It imports every public module of the two packages (no part of its dotted path starts
with ``_``, ``__init__``/``__main__`` aside) and writes, for ``tests/test_deprecations.py``:

``modules``
    module -> its ``__all__`` (``[]`` for a module without one).
``classes``
    ``module.Name`` -> member -> ``{"kind", "params"}`` for each class a module lists: the
    members its own classes define (this library's classes in the MRO; another library's
    base contributes only its pydantic fields), ``kind`` one of ``method``,
    ``classmethod``, ``staticmethod``, ``property``, ``field`` (a pydantic field or an
    annotation without a value) or ``attr:<type>``; ``params`` the names a method takes
    (``self``/``cls``, ``*args`` and ``**kwargs`` left out).
``functions``
    ``module.name`` -> the names its parameters take, for each function a module lists.
``dataclasses``
    ``module.Name`` -> the fields its constructor takes positionally, in order.
``instance_attributes``
    class -> the public attributes an instance of it has (made as an application would).
``options``
    Every memory option (``core.options.OPTIONS``, the keywords the adapters and engines
    take through ``**kwargs``): its default, the surfaces that offer it and its names there.
``deprecated``
    What 0.2.0 itself marked deprecated (0.1.0's names, warning until 0.3.0), left out of
    everything above: whole modules, module names, class members, parameters. 0.3.0
    removes them; the test checks they are gone.

The names 0.2.0 deprecated are found in 0.2.0's own records: the table of moved names
(``core.deprecations.MOVED``; a module all of whose names it lists is a thin module), the
modules whose docstring says they go in 0.3.0, the members whose docstring begins
``Deprecated since 0.2.0``, and the one deprecated keyword (``hits_to_documents``'s
``counter``, asserted below from its docstring).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
import pkgutil
import sys
import warnings
from pathlib import Path
from typing import Any

PACKAGES = ("langchain_recursive_memory", "llamaindex_higmem")
COMMIT = "74f87b1"
OUT = Path(__file__).resolve().parent / "api_0_2_0.json"
CORE = "langchain_recursive_memory.core"

#: 0.2.0 modules that held only deprecated names or their machinery (their docstrings
#: say they go in 0.3.0; checked below): whole modules, left out
DEPRECATED_MODULES = (f"{CORE}.legacy", f"{CORE}.recursive.deprecated", f"{CORE}.store_compat")
#: 0.2.0's deprecation machinery for 0.1.0's names (the table and the thin modules' hook)
DEPRECATION_MACHINERY = {f"{CORE}.deprecations": ("MOVED", "moved_attribute")}
#: 0.2.0's deprecated keyword arguments (function -> names)
DEPRECATED_PARAMS = {"langchain_recursive_memory.retrievers.hits_to_documents": ("counter",)}
DEPRECATED_DOC = "Deprecated since 0.2.0"


def _is_ours(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "")).startswith(PACKAGES)


def public_modules(root: Path) -> list[str]:
    """Every public module of the packages under ``root``, by its files."""
    found = []
    for package in PACKAGES:
        for info in pkgutil.walk_packages([str(root / package)], prefix=f"{package}."):
            parts = info.name.split(".")
            if any(p.startswith("_") and p != "__main__" for p in parts):
                continue
            found.append(info.name)
        found.append(package)
    return sorted(found)


def _params(fn: Any, *, bound: bool) -> list[str]:
    """The names ``fn`` takes (``self``/``cls`` left out when ``bound``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    if bound and params:
        params = params[1:]
    return [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _deprecated_member(value: Any) -> bool:
    fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
    doc = inspect.getdoc(fn) or ""
    module = str(getattr(fn, "__module__", ""))
    return doc.startswith(DEPRECATED_DOC) or module in DEPRECATED_MODULES


def _member(value: Any) -> dict[str, Any]:
    if isinstance(value, staticmethod):
        return {"kind": "staticmethod", "params": _params(value.__func__, bound=False)}
    if isinstance(value, classmethod):
        return {"kind": "classmethod", "params": _params(value.__func__, bound=True)}
    if isinstance(value, property):
        return {"kind": "property", "params": []}
    if inspect.isfunction(value):
        return {"kind": "method", "params": _params(value, bound=True)}
    return {"kind": f"attr:{type(value).__name__}", "params": []}


def class_members(cls: type, deprecated: dict[str, list[str]], path: str) -> dict[str, Any]:
    """The public members of ``cls`` (see the module doc); deprecated ones go to the side."""
    members: dict[str, Any] = {}
    for name in getattr(cls, "model_fields", None) or {}:
        members[name] = {"kind": "field", "params": []}
    for klass in reversed(cls.__mro__):
        if not _is_ours(klass):
            continue
        for name in getattr(klass, "__annotations__", {}):
            if not name.startswith("_") and not hasattr(klass, name):
                members.setdefault(name, {"kind": "field", "params": []})
        for name, value in vars(klass).items():
            if name.startswith("_") and name != "__init__":
                continue
            if name == "__init__" and not inspect.isfunction(value):
                continue
            if _deprecated_member(value):
                deprecated.setdefault(path, []).append(name)
                members.pop(name, None)
                continue
            members[name] = _member(value)
    return dict(sorted(members.items()))


def positional_fields(cls: type) -> list[str]:
    """The fields a dataclass's constructor takes positionally, in order."""
    return [f.name for f in dataclasses.fields(cls) if f.init and not f.kw_only]


def deprecated_names() -> dict[str, list[str]]:
    """Module -> the names 0.2.0 deprecated there (moved names and the machinery)."""
    moved = importlib.import_module(f"{CORE}.deprecations").MOVED
    names = {module: sorted(table) for module, table in moved.items()}
    for module, machinery in DEPRECATION_MACHINERY.items():
        names.setdefault(module, []).extend(machinery)
    return names


def _thin(module: Any, moved: list[str]) -> bool:
    """A module whose every ``__all__`` name is a moved one (0.1.0's module, kept thin)."""
    return set(getattr(module, "__all__", ())) <= set(moved) and hasattr(module, "__getattr__")


def _check_deprecated_modules() -> None:
    for name in DEPRECATED_MODULES:
        doc = importlib.import_module(name).__doc__ or ""
        assert "0.3.0" in doc.split("\n\n", 1)[0], name
    fn = importlib.import_module("langchain_recursive_memory.retrievers").hits_to_documents
    assert "``counter`` is deprecated since 0.2.0" in (fn.__doc__ or "")


def instances() -> dict[str, Any]:
    """One instance of each class an application makes, as it would (0.1.0's list)."""
    from langchain_core.language_models import FakeListChatModel
    from llama_index.core.llms import MockLLM

    from langchain_recursive_memory import (
        HiGMemRetriever,
        LangChainTextModel,
        RecursiveMemoryMiddleware,
        RecursiveSummaryChatMessageHistory,
    )
    from langchain_recursive_memory.core import (
        CountingTextModel,
        ExtractiveSummarizer,
        FunctionTextModel,
        HiGMem,
        HybridMemory,
        MemoryStore,
        RecursiveMemory,
        TokenCounter,
    )
    from llamaindex_higmem import HiGMemMemoryBlock, LlamaIndexTextModel, RecursiveSummaryMemory
    from llamaindex_higmem import HiGMemRetriever as LlamaIndexHiGMemRetriever

    store = MemoryStore.in_memory()
    history = RecursiveSummaryChatMessageHistory("i-history", store=store)
    graph = HiGMem("i-higmem", store=store)
    return {
        f"{CORE}.MemoryStore": store,
        f"{CORE}.RecursiveMemory": RecursiveMemory("i-r", store=store),
        f"{CORE}.HybridMemory": HybridMemory("i-h", store=store),
        f"{CORE}.HiGMem": graph,
        f"{CORE}.TokenCounter": TokenCounter("gpt-4o"),
        f"{CORE}.CountingTextModel": CountingTextModel(FunctionTextModel(lambda p: "x")),
        f"{CORE}.ExtractiveSummarizer": ExtractiveSummarizer(TokenCounter("gpt-4o")),
        "langchain_recursive_memory.RecursiveSummaryChatMessageHistory": history,
        "llamaindex_higmem.RecursiveSummaryMemory": RecursiveSummaryMemory.from_defaults(
            session_id="i-li", store=store
        ),
        "langchain_recursive_memory.RecursiveMemoryMiddleware": RecursiveMemoryMiddleware(
            store=store
        ),
        "langchain_recursive_memory.LangChainTextModel": LangChainTextModel(
            FakeListChatModel(responses=["x"])
        ),
        "llamaindex_higmem.LlamaIndexTextModel": LlamaIndexTextModel(MockLLM()),
        "langchain_recursive_memory.RecursiveMemoryRetriever": history.as_retriever(),
        "langchain_recursive_memory.HiGMemRetriever": HiGMemRetriever(memory=graph),
        "llamaindex_higmem.HiGMemRetriever": LlamaIndexHiGMemRetriever(graph),
        "llamaindex_higmem.HiGMemMemoryBlock": HiGMemMemoryBlock(store=store),
    }


def instance_attributes(made: dict[str, Any], deprecated: set[str]) -> dict[str, list[str]]:
    out = {}
    for path, obj in made.items():
        names = [
            n
            for n in vars(obj)
            if not n.startswith("_") and f"{type(obj).__name__}.{n}" not in deprecated
        ]
        out[path] = sorted(names)
    return out


def options() -> dict[str, Any]:
    """Each memory option's default, surfaces and other names (see the module doc)."""
    from langchain_recursive_memory.core.options import OPTIONS

    return {
        name: {
            "default": option.default,
            "surfaces": sorted(option.surfaces),
            "aliases": dict(option.aliases),
        }
        for name, option in OPTIONS.items()
    }


def surface(root: Path) -> dict[str, Any]:
    """The public surface of the release checked out at ``root`` (see the module doc)."""
    import langchain_recursive_memory

    where = Path(langchain_recursive_memory.__file__).resolve()
    assert where.is_relative_to(root.resolve()), f"imported {where}, not the tree at {root}"
    assert langchain_recursive_memory.__version__ == "0.2.0", langchain_recursive_memory.__version__
    _check_deprecated_modules()
    moved = deprecated_names()
    removed_modules = list(DEPRECATED_MODULES)
    removed_names: list[str] = []
    removed_members: dict[str, list[str]] = {}
    modules: dict[str, list[str]] = {}
    classes: dict[str, Any] = {}
    functions: dict[str, list[str]] = {}
    dataclass_order: dict[str, list[str]] = {}
    for name in public_modules(root):
        if name in DEPRECATED_MODULES:
            continue
        module = importlib.import_module(name)
        if name in moved and _thin(module, moved[name]):
            removed_modules.append(name)
            continue
        listed = list(getattr(module, "__all__", []))
        gone = [n for n in listed if n in moved.get(name, ())]
        gone += [n for n in moved.get(name, ()) if n not in listed and n not in gone]
        removed_names += [f"{name}.{n}" for n in gone]
        modules[name] = [n for n in listed if n not in gone]
        for attr in modules[name]:
            obj = getattr(module, attr)
            path = f"{name}.{attr}"
            if inspect.isclass(obj):
                classes[path] = class_members(obj, removed_members, path)
                if dataclasses.is_dataclass(obj):
                    dataclass_order[path] = positional_fields(obj)
            elif inspect.isfunction(obj):
                params = _params(obj, bound=False)
                dropped = DEPRECATED_PARAMS.get(path, ())
                functions[path] = [p for p in params if p not in dropped]
    by_class = {
        f"{path.rsplit('.', 1)[1]}.{m}" for path, names in removed_members.items() for m in names
    }
    attrs = instance_attributes(instances(), by_class)
    return {
        "_about": (
            f"The public surface of langchain-recursive-memory 0.2.0 (commit {COMMIT}), "
            "without the names 0.2.0 deprecated (listed under 'deprecated': 0.3.0 removes "
            "them). Made by tests/data/make_api_0_2_0.py; tests/test_deprecations.py checks "
            "each name still resolves."
        ),
        "modules": modules,
        "classes": classes,
        "functions": functions,
        "dataclasses": dataclass_order,
        "instance_attributes": attrs,
        "options": options(),
        "deprecated": {
            "modules": sorted(removed_modules),
            "names": sorted(removed_names),
            "members": {k: sorted(set(v)) for k, v in sorted(removed_members.items())},
            "params": {k: list(v) for k, v in DEPRECATED_PARAMS.items()},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("root", type=Path, help="a checkout of the 0.2.0 release")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    sys.path.insert(0, str(args.root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        data = surface(args.root)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(data['modules'])} modules, {len(data['classes'])} classes")


if __name__ == "__main__":
    main()
