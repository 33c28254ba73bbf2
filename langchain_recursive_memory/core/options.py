"""The memory options: one pydantic model, :class:`MemoryOptions`, whose fields are the docs.

Every surface that takes memory options derives them from the model's fields: the engines
(``RecursiveMemory(**options)``), :func:`~.builder.build_memory`, the LangChain chat
history and agent middleware (``**options: Unpack[MemoryKwargs]``), the LlamaIndex
memory (its pydantic fields and ``from_defaults`` settings, under its own names:
``token_limit`` is ``max_tokens``) and the command line (``--option NAME=VALUE``). Each
field carries a :class:`Rule` (its layer, least value, choices, the surfaces that offer
it); :data:`OPTIONS` is the table of the fields as each surface sees them.

An option belongs to one *layer*: :data:`BUDGET` (a field of :class:`~.config.MemoryConfig`),
:data:`ENGINE` (the engine's own) or :data:`WHOLE` (``config``: a whole ``MemoryConfig``
instead of the budget options). It is offered on *surfaces*: :data:`PYTHON` (the core and
the LangChain adapters), :data:`LLAMAINDEX` and :data:`CLI`.

Example:
    >>> from langchain_recursive_memory.core import ConfigurationError
    >>> from langchain_recursive_memory.core.options import LLAMAINDEX, OPTIONS, MemoryOptions
    >>> MemoryOptions(max_tokens=800, extract_facts=True).memory_config().recall_tokens
    200
    >>> OPTIONS.to_core({"token_limit": 800}, LLAMAINDEX)
    {'max_tokens': 800}
    >>> try:
    ...     MemoryOptions(max_messages=1)
    ... except ConfigurationError as exc:
    ...     print(exc)
    max_messages=1: must be an integer >= 2
"""

from __future__ import annotations

import difflib
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, ValidationError
from typing_extensions import TypedDict

from .config import (
    DEFAULT_MAX_TOKENS,
    MemoryConfig,
    check_budget,
    recall_share,
    summary_cap,
)
from .deprecations import warn_deprecated
from .errors import ConfigurationError
from .runtime.retry import RetryPolicy

__all__ = [
    "BUDGET",
    "CLI",
    "ENGINE",
    "LLAMAINDEX",
    "OPTIONS",
    "OPTION_DOCS",
    "PYTHON",
    "RECALL_SCOPES",
    "SURFACES",
    "WHOLE",
    "LlamaIndexKwargs",
    "MemoryKwargs",
    "MemoryOptions",
    "Option",
    "OptionTable",
    "Rule",
]

BUDGET = "budget"
"""The layer of an option that is a field of :class:`~.config.MemoryConfig`."""
ENGINE = "engine"
"""The layer of an option that is the engine's own (``RecursiveMemory``)."""
WHOLE = "config"
"""The layer of ``config``: a whole ``MemoryConfig`` instead of the budget options."""
PYTHON = "python"
"""The surface of the core and the LangChain adapters (:class:`MemoryKwargs`)."""
LLAMAINDEX = "llamaindex"
"""The surface of the LlamaIndex memory's settings (:class:`LlamaIndexKwargs`)."""
CLI = "cli"
"""The surface of the command line's ``--option NAME=VALUE``."""
SURFACES = frozenset({PYTHON, LLAMAINDEX, CLI})
_NOT_CLI = frozenset({PYTHON, LLAMAINDEX})
_PYTHON = frozenset({PYTHON})

RECALL_SCOPES = ("session", "user")
"""Where recall may take archived turns from (``retrieval.pool.SCOPES``)."""
OPTION_DOCS = "{OPTIONS}"
"""The line of a docstring that :meth:`OptionTable.document` replaces by the options' docs."""
_DOC_WIDTH = 92
_DOC_HANG = 4  # the indent of an entry's further lines
T = TypeVar("T")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Rule:
    """What a field of :class:`MemoryOptions` asks beyond its type (``Annotated`` metadata).

    A budget option's values are checked by :func:`~.config.check_budget`, the rules of
    :class:`~.config.MemoryConfig`.

    Attributes:
        layer: :data:`BUDGET`, :data:`ENGINE` or :data:`WHOLE`.
        choices: The values a str option may take (empty: any).
        aliases: Its name on a surface that spells it otherwise (``{"llamaindex":
            "token_limit"}``).
        surfaces: Where it is offered (default: everywhere).
    """

    layer: str
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    surfaces: frozenset[str] = SURFACES


class MemoryOptions(BaseModel):
    """What a memory's user chooses: every memory option, its type, default, check and doc.

    Every adapter takes these as keyword arguments (:class:`MemoryKwargs`). A name that
    is not an option, or a value an option refuses, is a ``ConfigurationError`` naming it.
    ``config`` overrides the budget fields when given.

    Example:
        >>> MemoryOptions(keep_messages=4).keep_messages
        4
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, arbitrary_types_allowed=True
    )

    max_tokens: Annotated[
        int, Rule(BUDGET, aliases={LLAMAINDEX: "token_limit"}, surfaces=_NOT_CLI)
    ] = Field(
        DEFAULT_MAX_TOKENS,
        description="Budget of the whole context the memory returns (summary, recalled "
        "memories, recent messages), in tokens.",
    )
    max_summary_tokens: Annotated[int | None, Rule(BUDGET, surfaces=_NOT_CLI)] = Field(
        None,
        description="Enforced cap of the summary text, in tokens (None: 300, or a quarter "
        "of a {max_tokens} under 1,200).",
    )
    max_messages: Annotated[int | None, Rule(BUDGET)] = Field(
        None, description="Also fold when more messages than this are unfolded (None: off)."
    )
    keep_tokens: Annotated[int | None, Rule(BUDGET)] = Field(
        None,
        description="Tokens of recent messages kept verbatim after a fold (None: half the "
        "window budget).",
    )
    keep_messages: Annotated[int | None, Rule(BUDGET)] = Field(
        None,
        description="Messages kept verbatim after a fold (None: half of {max_messages} when set).",
    )
    summary_role: Annotated[str, Rule(BUDGET)] = Field(
        "user",
        description="Role of the summary message: user, assistant or system (or an alias: "
        "LangChain's human and ai).",
    )
    recall_tokens: Annotated[int | None, Rule(BUDGET)] = Field(
        None,
        description="Tokens of {max_tokens} reserved for the facts and turns recalled for "
        "the current question (None: a quarter with {extract_facts}, an embedder or "
        "{recall_scope}='user', else 0).",
    )
    reserve_tokens: Annotated[int, Rule(BUDGET)] = Field(
        0,
        description="Tokens of {max_tokens} left free for what the application sends beside "
        "the memory's messages and the memory cannot see (a system prompt, tool schemas).",
    )
    extract_facts: Annotated[bool, Rule(ENGINE, surfaces=_NOT_CLI)] = Field(
        False,
        description="Extract atomic facts at each fold, in the summary call (needs a model).",
    )
    embedder: Annotated[Any, Rule(ENGINE, surfaces=_PYTHON)] = Field(
        None,
        description="For dense recall: a LangChain Embeddings, LlamaIndex BaseEmbedding, "
        "Chroma EmbeddingFunction or core Embedder (None: lexical recall only).",
    )
    tokenizer_model: Annotated[str, Rule(ENGINE)] = Field(
        "gpt-4o",
        description="The chat model's name; picks the tiktoken encoding that counts tokens.",
    )
    retry: Annotated[InstanceOf[RetryPolicy] | None, Rule(ENGINE, surfaces=_PYTHON)] = Field(
        None, description="Retries, timeouts and cool-down of model and embedding calls."
    )
    background_folds: Annotated[bool, Rule(ENGINE, surfaces=_PYTHON)] = Field(
        False,
        description="Fold on a background thread or task, so adding messages never waits "
        "for the summarizer.",
    )
    recall_scope: Annotated[str, Rule(ENGINE, choices=RECALL_SCOPES)] = Field(
        "session",
        description="Where recall takes archived turns from: 'session' (this conversation) "
        "or 'user' (every session of the user; reserves the recall share by default).",
    )
    config: Annotated[InstanceOf[MemoryConfig] | None, Rule(WHOLE, surfaces=_PYTHON)] = Field(
        None, description="A whole MemoryConfig instead of the budget options."
    )

    def __init__(self, **values: Any) -> None:
        """Check every given name and value (``ConfigurationError``), then build."""
        OPTIONS.check_known(values, PYTHON)
        for name, value in values.items():
            OPTIONS.check(name, value)
        try:
            super().__init__(**values)
        except ValidationError as exc:
            error = exc.errors()[0]
            name = str(error["loc"][0]) if error["loc"] else "options"
            raise ConfigurationError.for_value(name, values.get(name), error["msg"]) from exc

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> MemoryOptions:
        """The options of an adapter's keyword arguments (checked as the constructor does)."""
        return cls(**kwargs)

    def with_values(self, **values: Any) -> MemoryOptions:
        """A copy with ``values`` changed, checked as the constructor checks them."""
        given = {name: getattr(self, name) for name in self.model_fields_set}
        return type(self)(**{**given, **values})

    @property
    def hybrid(self) -> bool:
        """Whether the memory recalls by default.

        It extracts facts, has an embedder, or recalls from the user's sessions
        (``recall_scope="user"``: BM25 recall of the user's turns needs neither a model
        nor an embedder, and a user scope with no recall share would do nothing).
        """
        return self.extract_facts or self.embedder is not None or self.recall_scope == "user"

    def memory_config(self, *, recalls: bool | None = None) -> MemoryConfig:
        """The validated :class:`~.config.MemoryConfig` of these options.

        ``config`` when given; otherwise the budget options, with the rules of those whose
        default is a rule: the summary cap (:func:`~.config.summary_cap`) and the recall
        share (:func:`~.config.recall_share`), a quarter of ``max_tokens`` for a memory
        that recalls by default.

        Args:
            recalls: Whether the memory recalls by default: True for a
                :class:`~.recursive.HybridMemory`; None (the adapters, which pick the
                engine by :attr:`hybrid`): when :attr:`hybrid`. A user scope always does.
        """
        if self.config is not None:
            return self.config
        budget = {o.name: getattr(self, o.name) for o in OPTIONS.layer(BUDGET)}
        hybrid = self.hybrid if recalls is None else recalls or self.recall_scope == "user"
        budget.update(
            max_summary_tokens=summary_cap(self.max_tokens, self.max_summary_tokens),
            recall_tokens=recall_share(self.max_tokens, self.recall_tokens, hybrid=hybrid),
        )
        return MemoryConfig(**budget)


class MemoryKwargs(TypedDict, total=False):
    """:class:`MemoryOptions` as keyword arguments, for ``Unpack`` (the tests hold them equal)."""

    max_tokens: int
    max_summary_tokens: int | None
    max_messages: int | None
    keep_tokens: int | None
    keep_messages: int | None
    summary_role: str
    recall_tokens: int | None
    reserve_tokens: int
    extract_facts: bool
    embedder: Any
    tokenizer_model: str
    retry: RetryPolicy | None
    background_folds: bool
    recall_scope: str
    config: MemoryConfig | None


class LlamaIndexKwargs(TypedDict, total=False):
    """The options offered on the LlamaIndex surface, under its names, for ``Unpack``.

    ``summary_role`` takes LlamaIndex's ``MessageRole`` too (a ``str`` enum).
    """

    token_limit: int
    max_summary_tokens: int | None
    max_messages: int | None
    keep_tokens: int | None
    keep_messages: int | None
    summary_role: str
    recall_tokens: int | None
    reserve_tokens: int
    extract_facts: bool
    tokenizer_model: str
    recall_scope: str


@dataclass(frozen=True)
class Option:
    """One field of :class:`MemoryOptions`, as the surfaces see it (derived, never declared).

    Attributes:
        name: Its name in the core.
        type: Its annotation (``int | None``).
        default: Its default (None often means "the rule": see the doc).
        doc: The field's description; option names in braces are written in each
            surface's own spelling (:meth:`OptionTable.doc_for`).
        rule: Its :class:`Rule`.
    """

    name: str
    type: Any
    default: Any
    doc: str
    rule: Rule

    @property
    def layer(self) -> str:
        """Its layer (:data:`BUDGET`, :data:`ENGINE` or :data:`WHOLE`)."""
        return self.rule.layer

    @property
    def surfaces(self) -> frozenset[str]:
        """The surfaces that offer it."""
        return self.rule.surfaces

    @property
    def aliases(self) -> Mapping[str, str]:
        """Its name on each surface that spells it otherwise."""
        return self.rule.aliases

    @property
    def nullable(self) -> bool:
        """Whether None is a value of the option (it then means the default rule)."""
        return type(None) in _union_args(self.type)

    @property
    def annotation(self) -> str:
        """Its type as written (``"int | None"``)."""
        names = (
            "None" if a is type(None) else getattr(a, "__name__", str(a))
            for a in _union_args(self.type)
        )
        return " | ".join(names)

    def check(self, value: Any, *, resolved: bool = False) -> Any:
        """``value`` if the option accepts it; ``resolved``: None is not (a rule applied).

        Raises:
            ConfigurationError: Naming the option and the bad value.
        """
        if value is None and self.nullable and not resolved:
            return value
        if self.layer == BUDGET:
            return check_budget(self.name, value)
        if self.rule.choices and value not in self.rule.choices:
            raise ConfigurationError.for_value(
                self.name, value, f"must be one of {self.rule.choices}"
            )
        return value

    def name_on(self, surface: str) -> str:
        """Its name on ``surface``."""
        return self.rule.aliases.get(surface, self.name)

    def parse(self, text: str) -> Any:
        """The value of ``text`` (``"none"``: None where None is allowed).

        Raises:
            ConfigurationError: When ``text`` is not a value of the option.
        """
        kinds = [a for a in _union_args(self.type) if a is not type(None)]
        kind = kinds[0] if len(kinds) == 1 and kinds[0] in (int, str, bool) else None
        word = text.strip().lower()
        if kind is None:
            raise ConfigurationError.for_value(self.name, text, "cannot be given as text")
        if word == "none" and self.nullable:
            return None
        if kind is bool and word in _TRUE + _FALSE:
            return word in _TRUE
        if kind is int and word.lstrip("-").isdigit():
            return int(word)
        if kind is str:
            return text
        raise ConfigurationError.for_value(self.name, text, f"is not a {self.annotation}")


def _union_args(tp: Any) -> tuple[Any, ...]:
    """The members of a union annotation (``InstanceOf[X]`` as ``X``), or ``(tp,)``."""
    if get_origin(tp) is Annotated:
        return _union_args(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        return tuple(m for a in get_args(tp) for m in _union_args(a))
    return (tp,)


class OptionTable(Mapping[str, Option]):
    """The fields of :class:`MemoryOptions` by core name, with what each surface asks."""

    def __init__(self, model: type[BaseModel]) -> None:
        self._options: dict[str, Option] = {}
        for name, info in model.model_fields.items():
            rule = next(m for m in info.metadata if isinstance(m, Rule))
            doc = info.description or ""
            self._options[name] = Option(name, info.annotation, info.default, doc, rule)

    def __getitem__(self, name: str) -> Option:
        return self._options[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)

    def on(self, surface: str) -> dict[str, Option]:
        """The options offered on ``surface``, by their names there (model order)."""
        return {o.name_on(surface): o for o in self.values() if surface in o.surfaces}

    def layer(self, layer: str) -> tuple[Option, ...]:
        """The options of ``layer`` (model order)."""
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
        """A decorator: the ``{OPTIONS}`` line of a docstring becomes :meth:`docs`."""

        def decorate(obj: T) -> T:
            doc = obj.__doc__ or ""
            for line in doc.splitlines():
                if line.strip() == OPTION_DOCS:
                    indent = len(line) - len(line.lstrip())
                    obj.__doc__ = doc.replace(line, self.docs(surface, indent))
            return obj

        return decorate


OPTIONS = OptionTable(MemoryOptions)
"""Every memory option, as the surfaces see it (see the module doc)."""

_MOVED = ("DEFAULT_MAX_TOKENS", "MIN_SUMMARY_TOKENS", "SUMMARY_ROLES", "check_int")


def __getattr__(name: str) -> Any:
    """0.2.0's budget constants and ``check_int`` moved to :mod:`.config` (until 0.4.0)."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = "langchain_recursive_memory.core.config"
    warn_deprecated(f"{__name__}.{name}", f"{new}.{name}")
    from . import config

    return getattr(config, name)
