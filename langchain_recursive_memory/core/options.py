"""The one table of memory options: each one's type, default, check and doc, once.

Every surface that takes memory options reads :data:`OPTIONS`: the core's
:class:`~.builder.MemoryOptions` and ``MemoryKwargs`` (the LangChain chat history and agent
middleware take those), :class:`~.config.MemoryConfig` (the checks of its budget fields),
:func:`~.builder.build_memory` (which option goes to the budget, which to the engine), the
LlamaIndex memory (its settings, their names and field descriptions) and the command line
(``--option NAME=VALUE``). The statically typed declarations Python needs (a dataclass, a
``TypedDict`` for ``Unpack``, pydantic fields) are checked against this table by the tests,
so an option is added here first and nowhere can drift from it.

An option belongs to one *layer*: :data:`BUDGET` (a field of ``MemoryConfig``),
:data:`ENGINE` (a keyword of the engine, ``RecursiveMemory``) or :data:`WHOLE` (``config``:
a whole ``MemoryConfig`` instead of the budget options). It is offered on some *surfaces*:
:data:`PYTHON` (``MemoryOptions``: the core and the LangChain adapters), :data:`LLAMAINDEX`
(``RecursiveSummaryMemory.from_defaults``' settings, under its own names: ``token_limit``
is ``max_tokens``) and :data:`CLI`.

Example:
    >>> from langchain_recursive_memory.core import ConfigurationError
    >>> from langchain_recursive_memory.core.options import LLAMAINDEX, OPTIONS
    >>> OPTIONS["keep_messages"].default, OPTIONS["keep_messages"].layer
    (None, 'budget')
    >>> OPTIONS.to_core({"token_limit": 800}, LLAMAINDEX)
    {'max_tokens': 800}
    >>> try:
    ...     OPTIONS.check("max_messages", 1)
    ... except ConfigurationError as exc:
    ...     print(exc)
    max_messages=1: must be an integer >= 2
"""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import ConfigurationError
from .turn import ROLE_ALIASES

__all__ = [
    "BUDGET",
    "CLI",
    "DEFAULT_MAX_TOKENS",
    "ENGINE",
    "LLAMAINDEX",
    "MIN_SUMMARY_TOKENS",
    "OPTIONS",
    "OPTION_DOCS",
    "PYTHON",
    "SUMMARY_ROLES",
    "SURFACES",
    "WHOLE",
    "Option",
    "OptionTable",
    "check_int",
]

BUDGET = "budget"
"""The layer of an option that is a field of :class:`~.config.MemoryConfig`."""
ENGINE = "engine"
"""The layer of an option that is a keyword of the engine (``RecursiveMemory``)."""
WHOLE = "config"
"""The layer of ``config``: a whole ``MemoryConfig`` instead of the budget options."""
PYTHON = "python"
"""The surface of :class:`~.builder.MemoryOptions` (core, LangChain history, middleware)."""
LLAMAINDEX = "llamaindex"
"""The surface of the LlamaIndex memory's settings (``from_defaults(**settings)``)."""
CLI = "cli"
"""The surface of the command line's ``--option NAME=VALUE``."""
SURFACES = frozenset({PYTHON, LLAMAINDEX, CLI})

DEFAULT_MAX_TOKENS = 2000
"""The default budget of a context (every memory and adapter)."""
MIN_SUMMARY_TOKENS = 16
"""Smallest summary cap (and longest-message cap of a prompt): a sentence or two."""
MIN_MAX_MESSAGES = 2
"""Fewest unfolded messages ``max_messages`` may allow (one is always kept)."""
SUMMARY_ROLES = ("user", "assistant", "system")
"""The roles a summary message may have (the adapters also take their aliases)."""
RECALL_SCOPES = ("session", "user")
"""Where recall may take archived turns from (``retrieval.pool.SCOPES``)."""


def check_int(name: str, value: object, minimum: int = 1) -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``: the rule of every budget.

    Raises:
        ConfigurationError: Naming the bad value.

    Example:
        >>> check_int("k", 3)
        3
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigurationError.for_value(name, value, f"must be an integer >= {minimum}")
    return value


OPTION_DOCS = "{OPTIONS}"
"""The line of a docstring that :meth:`OptionTable.document` replaces by the options' docs."""
_DOC_WIDTH = 92
_DOC_HANG = 4  # the indent of an entry's further lines
T = TypeVar("T")

_TEXT_TYPES: dict[str, type] = {"int": int, "str": str, "bool": bool}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Option:
    """One memory option.

    Attributes:
        name: Its name in the core (``MemoryOptions``' field, the engine's keyword).
        annotation: Its type, as written in the typed declarations (``"int | None"``).
        default: Its default (None often means "the rule": see the doc).
        doc: One line; ``{max_tokens}`` and other option names in braces are written in
            each surface's own spelling (:meth:`doc_for`).
        layer: :data:`BUDGET`, :data:`ENGINE` or :data:`WHOLE`.
        minimum: An int option's least value (:func:`check_int`), or None.
        choices: The values a str option may take (empty: any; the engine checks it).
        aliases: Its name on a surface that spells it otherwise (``{"llamaindex":
            "token_limit"}``).
        surfaces: Where it is offered (default: everywhere).
        value_aliases: Other spellings of its choices (``{"human": "user"}``), accepted
            wherever the option is checked.
    """

    name: str
    annotation: str
    default: Any
    doc: str
    layer: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    surfaces: frozenset[str] = SURFACES
    value_aliases: Mapping[str, str] = field(default_factory=dict)

    @property
    def nullable(self) -> bool:
        """Whether None is a value of the option (it then means the default rule)."""
        return "None" in (p.strip() for p in self.annotation.split("|"))

    def check(self, value: Any, *, resolved: bool = False) -> Any:
        """``value`` if the option accepts it; ``resolved``: None is not (a rule applied).

        Raises:
            ConfigurationError: Naming the option and the bad value.
        """
        if value is None and self.nullable and not resolved:
            return value
        if self.minimum is not None:
            check_int(self.name, value, self.minimum)
        if self.choices and self.value_aliases.get(value, value) not in self.choices:
            raise ConfigurationError.for_value(self.name, value, f"must be one of {self.choices}")
        return value

    def name_on(self, surface: str) -> str:
        """Its name on ``surface``."""
        return self.aliases.get(surface, self.name)

    @property
    def text_type(self) -> type | None:
        """The type a text value is parsed into (``int`` for ``"int | None"``), or None."""
        parts = [p.strip() for p in self.annotation.split("|")]
        return _TEXT_TYPES.get(parts[0]) if set(parts[1:]) <= {"None"} else None

    def parse(self, text: str) -> Any:
        """The value of ``text`` (``"none"``: None where None is allowed).

        Raises:
            ConfigurationError: When ``text`` is not a value of the option.
        """
        kind = self.text_type
        if kind is None:
            raise ConfigurationError.for_value(self.name, text, "cannot be given as text")
        if text.strip().lower() == "none" and self.nullable:
            return None
        if kind is bool and text.strip().lower() in _TRUE + _FALSE:
            return text.strip().lower() in _TRUE
        if kind is int:
            try:
                return int(text)
            except ValueError:
                pass
        if kind is str:
            return text
        raise ConfigurationError.for_value(self.name, text, f"is not a {self.annotation}")


class OptionTable(Mapping[str, Option]):
    """The options, by core name, with what every surface asks of them.

    Args:
        options: The options (names unique).
    """

    def __init__(self, options: Iterable[Option]) -> None:
        self._options = {o.name: o for o in options}

    def __getitem__(self, name: str) -> Option:
        return self._options[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)

    def on(self, surface: str) -> dict[str, Option]:
        """The options offered on ``surface``, by their names there (table order)."""
        return {o.name_on(surface): o for o in self.values() if surface in o.surfaces}

    def layer(self, layer: str) -> tuple[Option, ...]:
        """The options of ``layer`` (table order)."""
        return tuple(o for o in self.values() if o.layer == layer)

    def check(self, name: str, value: Any, *, resolved: bool = False) -> Any:
        """``value`` if the option ``name`` accepts it (see :meth:`Option.check`)."""
        return self[name].check(value, resolved=resolved)

    def check_known(self, given: Mapping[str, Any], surface: str = PYTHON) -> None:
        """Refuse a name that is not an option of ``surface``.

        Raises:
            ConfigurationError: Naming the first unknown one, with the surface's options.
        """
        known = sorted(self.on(surface))
        for name in sorted(set(given) - set(known)):
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigurationError.for_value(
                name, given[name], f"is not an option; the options are {known}{hint}"
            )

    def to_core(self, given: Mapping[str, Any], surface: str) -> dict[str, Any]:
        """``given`` (names of ``surface``) checked and renamed to the core's names."""
        self.check_known(given, surface)
        offered = self.on(surface)
        return {offered[name].name: value for name, value in given.items()}

    def doc_for(self, name: str, surface: str) -> str:
        """The doc of option ``name`` with every option written as ``surface`` names it."""
        return self[name].doc.format_map({o.name: o.name_on(surface) for o in self.values()})

    def parse(self, text: str, surface: str = CLI) -> tuple[str, Any]:
        """The core name and value of a ``NAME=VALUE`` text (the command line's form).

        Raises:
            ConfigurationError: For an unknown name, or a value that does not parse or
                that the option's check refuses.
        """
        name, sep, value = text.partition("=")
        name = name.strip().replace("-", "_")
        if not sep:
            raise ConfigurationError.for_value("option", text, "must be NAME=VALUE")
        self.check_known({name: value}, surface)
        option = self.on(surface)[name]
        return option.name, option.check(option.parse(value.strip()))

    def docs(self, surface: str, indent: int = 8) -> str:
        """Google-style ``Args`` entries of the options of ``surface``, in its names.

        Example:
            >>> OPTIONS.docs(LLAMAINDEX, indent=0).splitlines()[0][:48]
            'token_limit: Budget of the whole context the mem'
        """
        lines: list[str] = []
        for name, option in self.on(surface).items():
            text = f"{name}: {self.doc_for(option.name, surface)} Default: {option.default!r}."
            lines += textwrap.wrap(
                text,
                _DOC_WIDTH,
                initial_indent=" " * indent,
                subsequent_indent=" " * (indent + _DOC_HANG),
            )
        return "\n".join(lines)

    def document(self, surface: str) -> Callable[[T], T]:
        """A decorator: the ``{OPTIONS}`` line of a docstring becomes :meth:`docs`.

        The adapters document their options so, each option once, in the table's words.
        """

        def decorate(obj: T) -> T:
            doc = obj.__doc__ or ""
            for line in doc.splitlines():
                if line.strip() == OPTION_DOCS:
                    indent = len(line) - len(line.lstrip())
                    obj.__doc__ = doc.replace(line, self.docs(surface, indent))
            return obj

        return decorate

    @contextmanager
    def registered(self, *options: Option) -> Iterator[OptionTable]:
        """Add ``options`` for the duration of the block (tests and experiments).

        Every surface that reads the table sees them; the typed declarations do not
        (the tests that compare them with the table then name each one to follow).
        """
        before = dict(self._options)
        self._options.update((o.name, o) for o in options)
        try:
            yield self
        finally:
            self._options = before


_NOT_CLI = frozenset({PYTHON, LLAMAINDEX})

OPTIONS = OptionTable(
    [
        Option(
            "max_tokens", "int", DEFAULT_MAX_TOKENS,
            "Budget of the whole context the memory returns (summary, recalled memories, "
            "recent messages), in tokens.",
            BUDGET, minimum=1, aliases={LLAMAINDEX: "token_limit"}, surfaces=_NOT_CLI,
        ),
        Option(
            "max_summary_tokens", "int | None", None,
            "Enforced cap of the summary text, in tokens (None: 300, or a quarter of a "
            "{max_tokens} under 1,200).",
            BUDGET, minimum=MIN_SUMMARY_TOKENS, surfaces=_NOT_CLI,
        ),
        Option(
            "max_messages", "int | None", None,
            "Also fold when more messages than this are unfolded (None: off).",
            BUDGET, minimum=MIN_MAX_MESSAGES,
        ),
        Option(
            "keep_tokens", "int | None", None,
            "Tokens of recent messages kept verbatim after a fold (None: half the window "
            "budget).",
            BUDGET, minimum=0,
        ),
        Option(
            "keep_messages", "int | None", None,
            "Messages kept verbatim after a fold (None: half of max_messages when set).",
            BUDGET, minimum=0,
        ),
        Option(
            "summary_role", "str", "user",
            "Role of the summary message: user, assistant or system (or an alias: LangChain's "
            "human and ai).",
            BUDGET, choices=SUMMARY_ROLES, value_aliases=ROLE_ALIASES,
        ),
        Option(
            "recall_tokens", "int | None", None,
            "Tokens of {max_tokens} reserved for the facts and turns recalled for the "
            "current question (None: a quarter with extract_facts, an embedder or "
            "recall_scope='user', else 0).",
            BUDGET, minimum=0,
        ),
        Option(
            "reserve_tokens", "int", 0,
            "Tokens of {max_tokens} left free for what the application sends beside the "
            "memory's messages and the memory cannot see (a system prompt, tool schemas).",
            BUDGET, minimum=0,
        ),
        Option(
            "extract_facts", "bool", False,
            "Extract atomic facts at each fold, in the summary call (needs a model).",
            ENGINE, surfaces=_NOT_CLI,
        ),
        Option(
            "embedder", "Any", None,
            "For dense recall: a LangChain Embeddings, LlamaIndex BaseEmbedding, Chroma "
            "EmbeddingFunction or core Embedder (None: lexical recall only).",
            ENGINE, surfaces=frozenset({PYTHON}),
        ),
        Option(
            "tokenizer_model", "str", "gpt-4o",
            "The chat model's name; picks the tiktoken encoding that counts tokens.",
            ENGINE,
        ),
        Option(
            "retry", "RetryPolicy | None", None,
            "Retries, timeouts and cool-down of model and embedding calls.",
            ENGINE, surfaces=frozenset({PYTHON}),
        ),
        Option(
            "background_folds", "bool", False,
            "Fold on a background thread or task, so adding messages never waits for the "
            "summarizer.",
            ENGINE, surfaces=frozenset({PYTHON}),
        ),
        Option(
            "recall_scope", "str", "session",
            "Where recall takes archived turns from: 'session' (this conversation) or "
            "'user' (every session of the user; reserves the recall share by default).",
            ENGINE, choices=RECALL_SCOPES,
        ),
        Option(
            "config", "MemoryConfig | None", None,
            "A whole MemoryConfig instead of the budget options.",
            WHOLE, surfaces=frozenset({PYTHON}),
        ),
    ]
)  # fmt: skip
"""Every memory option, once (see the module doc)."""
