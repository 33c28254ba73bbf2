"""Static checks of the library's architecture rules, used by ``test_architecture.py``.

Standard library only (:mod:`ast`, :mod:`tokenize`): nothing here imports the library.
Every ``check_*`` function takes the parsed sources and returns a list of violations, one
human-readable line each, so a failing test can name every place to fix.
"""

from __future__ import annotations

import ast
import functools
import io
import keyword
import tokenize
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("langchain_recursive_memory", "llamaindex_higmem")


# -- sources ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One library file, parsed once and shared by every check."""

    rel: str  # path relative to the repository root, POSIX style
    module: str  # dotted module name (a package's ``__init__`` is the package)
    is_package: bool
    text: str
    tree: ast.Module
    tokens: tuple[tokenize.TokenInfo, ...]

    def __repr__(self) -> str:
        return f"Source({self.rel!r})"

    @property
    def physical_lines(self) -> int:
        """Return how many lines the file has."""
        return len(self.text.splitlines())


def _module_name(rel: Path) -> tuple[str, bool]:
    """Return the dotted name of the file at ``rel`` and whether it is a package."""
    parts = list(rel.with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def _load(path: Path, root: Path) -> Source:
    """Read, parse and tokenize one file."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(root)
    module, is_package = _module_name(rel)
    tokens = tuple(tokenize.generate_tokens(io.StringIO(text).readline))
    return Source(rel.as_posix(), module, is_package, text, ast.parse(text, str(rel)), tokens)


@functools.lru_cache(maxsize=2)
def library_sources(root: Path = ROOT) -> tuple[Source, ...]:
    """Return every ``.py`` file of the two packages below ``root``, sorted by path."""
    paths = sorted(p for package in PACKAGES for p in (root / package).rglob("*.py"))
    return tuple(_load(p, root) for p in paths if "__pycache__" not in p.parts)


# -- rule 1: sizes ---------------------------------------------------------------------------

#: kind -> (most lines of code, most physical lines)
SIZE_LIMITS = {"module": (600, 660), "class": (400, 440), "function": (60, 80)}

_LAYOUT_TOKENS = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
)

_Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
_Scope = ast.Module | _Definition


def _docstring_lines(tree: ast.Module) -> set[int]:
    """Return the lines taken by module, class and function docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, _Scope) or not node.body:
            continue
        first = node.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: Source) -> frozenset[int]:
    """Return the lines that hold code: not blank, not only a comment, not a docstring."""
    lines: set[int] = set()
    for tok in source.tokens:
        if tok.type not in _LAYOUT_TOKENS:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return frozenset(lines - _docstring_lines(source.tree))


def _definitions(tree: ast.Module) -> Iterator[tuple[str, str, _Definition]]:
    """Yield ``(kind, qualified name, node)`` for every class and function, nested ones too.

    A definition spans from its ``def``/``class`` line (decorators not counted) to its last.
    """
    todo: deque[tuple[str, ast.AST]] = deque([("", tree)])
    while todo:
        prefix, parent = todo.popleft()
        for node in ast.iter_child_nodes(parent):
            if isinstance(node, _Definition):
                name = f"{prefix}{node.name}"
                yield ("class" if isinstance(node, ast.ClassDef) else "function"), name, node
                todo.append((f"{name}.", node))
            else:
                todo.append((prefix, node))


def _size_violation(where: str, what: str, code: int, physical: int, kind: str) -> str | None:
    """Return the report line for one definition, or ``None`` when it is within limits."""
    most_code, most_physical = SIZE_LIMITS[kind]
    if code <= most_code and physical <= most_physical:
        return None
    return (
        f"{where} {what}: {code} lines of code (max {most_code}), "
        f"{physical} physical lines (max {most_physical})"
    )


def check_sizes(sources: Sequence[Source]) -> list[str]:
    """Return every module, class and function over its size limit."""
    found: list[str] = []
    for source in sources:
        code = code_lines(source)
        found.append(
            _size_violation(
                f"{source.rel}:1",
                f"module {source.module}",
                len(code),
                source.physical_lines,
                "module",
            )
        )
        for kind, name, node in _definitions(source.tree):
            first, last = node.lineno, node.end_lineno or node.lineno
            span = range(first, last + 1)
            found.append(
                _size_violation(
                    f"{source.rel}:{first}",
                    f"{kind} {name}",
                    sum(1 for n in span if n in code),
                    len(span),
                    kind,
                )
            )
    return [v for v in found if v is not None]


# -- rule 2: imports -------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    """Return whether an ``if`` test is ``TYPE_CHECKING`` (or ``typing.TYPE_CHECKING``)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _import_nodes(
    nodes: Iterable[ast.AST], type_checking: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """Yield every import statement in or below ``nodes``, but under ``if TYPE_CHECKING:``.

    Function-level imports are yielded too; ``importlib.import_module`` calls (the lazy
    ``__getattr__`` of a package) are not import statements and so are not. With
    ``type_checking``, the imports under ``if TYPE_CHECKING:`` are yielded too.
    """
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
            yield from _import_nodes(node.orelse)
        else:
            yield from _import_nodes(ast.iter_child_nodes(node), type_checking)


def _from_base(source: Source, node: ast.ImportFrom) -> str:
    """Return the absolute module a ``from ... import`` statement imports from."""
    if not node.level:
        return node.module or ""
    parts = source.module.split(".")
    if not source.is_package:
        parts.pop()
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def _targets(source: Source, node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """Return the library modules one import statement depends on (see rule 2)."""
    if isinstance(node, ast.Import):
        found = set()
        for alias in node.names:
            parts = alias.name.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts:
                found.add(".".join(parts))
        return found
    base = _from_base(source, node)
    if base not in modules:
        return set()
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}


def import_graph(
    sources: Sequence[Source], *, type_checking: bool = False
) -> dict[str, dict[str, str]]:
    """Return ``module -> {imported module: "path:line" of the first such import}``.

    ``type_checking``: count the imports under ``if TYPE_CHECKING:`` too.
    """
    modules = {s.module for s in sources}
    graph: dict[str, dict[str, str]] = {s.module: {} for s in sources}
    for source in sources:
        for node in _import_nodes(source.tree.body, type_checking):
            for target in sorted(_targets(source, node, modules)):
                graph[source.module].setdefault(target, f"{source.rel}:{node.lineno}")
    return graph


def _is_inside(module: str, package: str) -> bool:
    """Return whether ``module`` lies below ``package``."""
    return module.startswith(f"{package}.")


def check_own_package_imports(graph: dict[str, dict[str, str]]) -> list[str]:
    """Return every import of a module's own ancestor package (its ``__init__``)."""
    return [
        f"{where} {module} -> {target}; import the sibling module directly"
        for module, edges in sorted(graph.items())
        for target, where in sorted(edges.items())
        if _is_inside(module, target)
    ]


def _cycle_graph(graph: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Drop self-imports, imports of an ancestor package and a package's re-exports.

    A package ``__init__`` importing its own modules is not a cycle (rule 2). The price: a
    loop that enters a package through its ``__init__`` from outside (``x`` imports ``pkg``,
    whose ``__init__`` re-exports ``pkg.m``, which imports ``x``) is not seen either.
    """
    return {
        module: {
            target: where
            for target, where in edges.items()
            if target != module
            and not _is_inside(module, target)
            and not _is_inside(target, module)
        }
        for module, edges in graph.items()
    }


def _strongly_connected(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Return the strongly connected components of ``graph`` with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan; the graph is a few dozen modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def _shortest_cycle(graph: dict[str, dict[str, str]], start: str, members: set[str]) -> list[str]:
    """Return the shortest import path from ``start`` back to itself, within ``members``."""
    came_from: dict[str, str] = {}
    todo = deque([start])
    while todo:
        node = todo.popleft()
        for nxt in sorted(graph[node]):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt in members and nxt not in came_from:
                came_from[nxt] = node
                todo.append(nxt)
    return [start]  # unreachable for a strongly connected component


def check_import_cycles(graph: dict[str, dict[str, str]]) -> list[str]:
    """Return one line per import cycle: its shortest loop and where each of its imports is."""
    cyclic = _cycle_graph(graph)
    found = []
    for component in _strongly_connected(cyclic):
        loop = _shortest_cycle(cyclic, component[0], set(component))
        where = ", ".join(cyclic[a][b] for a, b in pairwise(loop))
        others = sorted(set(component) - set(loop))
        also = f"; also in this cycle: {', '.join(others)}" if others else ""
        found.append(f"{' -> '.join(loop)} [imports at {where}]{also}")
    return found


# -- rule 3: repeated code -------------------------------------------------------------------

WINDOW = 6  # lines that make a repeat
MAX_PLACES = 8  # a run found in more places is a common idiom, not a duplicate
MIN_STRUCTURED = 3  # a shape-only match needs this many lines with real structure

_CONTROL = frozenset(
    {
        *("if", "elif", "else", "for", "while", "with", "try", "except", "finally"),
        *("lambda", "assert", "del", "and", "or", "not", "in", "is", "async", "await"),
        *("global", "nonlocal"),
    }
)
_OPERATORS = frozenset(
    {
        *("/", "//", "%", "<<", ">>", "&", "^", "~", "|"),
        *("<", ">", "<=", ">=", "==", "!=", ":="),
        *("+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", ">>=", "<<="),
    }
)
_BINARY_IF_AFTER_OPERAND = frozenset({"+", "-", "*", "**", "@"})  # else unary, or a decorator
_OPERAND_END = frozenset({"N", "S", "0", ")", "]", "}", "None", "True", "False"})
_CALLABLE_END = frozenset({"N", "S", ")", "]"})
_OPENERS = frozenset({"(", "["})  # after a callable: a call or a subscript
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12+ splits f-strings
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)


@dataclass(frozen=True)
class Line:
    """One line as the repeat detector sees it."""

    number: int
    shape: str  # identifiers -> N, strings -> S, numbers -> 0; keywords and operators kept
    text: str  # the tokens as written, white space folded
    structured: bool  # carries a call, an operator, a control keyword or a subscript


def _without_annotations(shape: list[str]) -> list[str]:
    """Drop a leading ``name: annotation`` and a ``-> annotation``, keeping any ``= value``."""
    while shape[:1] in (["*"], ["**"]):  # ``*args: int`` and ``**kwargs: Any`` parameters
        shape = shape[1:]
    if len(shape) > 1 and shape[0] == "N" and shape[1] == ":":
        rest = shape[2:]
        shape = ["N", *rest[rest.index("=") :]] if "=" in rest else ["N"]
    if "->" in shape:
        shape = shape[: shape.index("->")]
    return shape


def is_structured(shape: list[str]) -> bool:
    """Return whether a normalised line does real work rather than list a field or argument."""
    if shape[:1] in (["def"], ["class"]) or shape[:2] == ["async", "def"]:
        return False  # a signature: what repeats in it is the parameter list
    toks = _without_annotations(shape)
    for i, tok in enumerate(toks):
        before = toks[i - 1] if i else ""
        if tok in _CONTROL or tok in _OPERATORS:
            return True
        if tok in _BINARY_IF_AFTER_OPERAND and before in _OPERAND_END:
            return True
        if tok in _OPENERS and before in _CALLABLE_END:
            return True
    return False


def _logical_lines(tokens: Sequence[tokenize.TokenInfo]) -> Iterator[list[tokenize.TokenInfo]]:
    """Yield the significant tokens of each logical line (statement)."""
    current: list[tokenize.TokenInfo] = []
    for tok in tokens:
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if current:
                yield current
            current = []
        elif tok.type not in _LAYOUT_TOKENS:
            current.append(tok)


def _is_skipped_statement(toks: list[tokenize.TokenInfo]) -> bool:
    """Return whether a statement is an import, an ``__all__`` or a bare string (a docstring).

    ``__all__`` declares the import surface, as import lines do: a package re-exporting
    its modules' names lists them again, which is no repeated logic.
    """
    if toks[0].type == tokenize.NAME and toks[0].string in ("import", "from", "__all__"):
        return True

    strings = (tokenize.STRING, _FSTRING_START)
    return all(t.type in strings for t in toks if t.type != tokenize.OP) and toks[0].type in strings


def _shape_tokens(toks: list[tokenize.TokenInfo]) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line, normalised token, token as written)``; an f-string is one ``S``."""
    depth = 0
    for tok in toks:
        if tok.type == _FSTRING_START:
            if not depth:
                yield tok.start[0], "S", tok.string
            depth += 1
        elif tok.type == _FSTRING_END:
            depth -= 1
        elif depth:
            continue
        elif tok.type == tokenize.NAME:
            yield tok.start[0], tok.string if keyword.iskeyword(tok.string) else "N", tok.string
        elif tok.type in (tokenize.STRING, tokenize.NUMBER):
            yield tok.start[0], "S" if tok.type == tokenize.STRING else "0", tok.string
        else:
            yield tok.start[0], tok.string, tok.string


def repeat_lines(source: Source) -> list[Line]:
    """Return the lines the repeat detector compares (no imports, docstrings, punctuation)."""
    lines: list[Line] = []
    for statement in _logical_lines(source.tokens):
        if _is_skipped_statement(statement):
            continue
        names = [t.string for t in statement[:3]]
        if "def" in names[:2]:  # a signature declares: sync and async twins repeat theirs
            name = names[names.index("def") + 1]  # by design; it counts as its name alone
            lines.append(Line(statement[0].start[0], f"def {name}", f"def {name}", False))
            continue
        rows: dict[int, list[tuple[str, str]]] = defaultdict(list)
        for row, shape, text in _shape_tokens(statement):
            rows[row].append((shape, text))
        for row, pairs in rows.items():
            shape = [s for s, _ in pairs]
            if any(s in ("N", "S", "0") or keyword.iskeyword(s) for s in shape):
                lines.append(
                    Line(row, " ".join(shape), " ".join(t for _, t in pairs), is_structured(shape))
                )
    return lines


@dataclass(frozen=True)
class Repeat:
    """A run of lines of ``first`` standing again in ``second``."""

    first: str
    first_lines: tuple[int, int]
    second: str
    second_lines: tuple[int, int]
    length: int  # compared lines (imports, comments, docstrings and punctuation not counted)
    exact: bool  # some window of it is the same to the letter, not only the same shape

    def __str__(self) -> str:
        shape = "" if self.exact else " shape"
        return (
            f"{self.first}:{self.first_lines[0]}-{self.first_lines[1]} ~ "
            f"{self.second}:{self.second_lines[0]}-{self.second_lines[1]}{shape}"
        )


def _window_verdict(lines: list[Line], i: int, other: list[Line], j: int) -> tuple[bool, bool]:
    """Return whether two same-shape windows are a repeat, and whether they are exact."""
    exact = all(lines[i + k].text == other[j + k].text for k in range(WINDOW))
    structured = sum(line.structured for line in lines[i : i + WINDOW])
    return exact or structured >= MIN_STRUCTURED, exact


def _listable(
    shapes: Iterable[list[tuple[int, int]]], files: list[list[Line]]
) -> Iterator[list[tuple[int, int]]]:
    """Yield the groups of same-shape windows to pair up, leaving out the too common ones.

    A shape found in more than :data:`MAX_PLACES` places is an idiom; the places where it
    stands to the letter are still listed when they are few enough.
    """
    for where in shapes:
        if len(where) <= MAX_PLACES:
            if len(where) > 1:
                yield where
            continue
        same_text: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
        for f, i in where:
            same_text[tuple(line.text for line in files[f][i : i + WINDOW])].append((f, i))
        yield from (w for w in same_text.values() if 2 <= len(w) <= MAX_PLACES)


def _matching_windows(
    files: list[list[Line]],
) -> dict[tuple[int, int, int], dict[int, bool]]:
    """Return ``(file a, file b, offset) -> {window start in a: exact}`` for repeated windows."""
    places: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
    for f, lines in enumerate(files):
        for i in range(len(lines) - WINDOW + 1):
            places[tuple(line.shape for line in lines[i : i + WINDOW])].append((f, i))
    matches: dict[tuple[int, int, int], dict[int, bool]] = defaultdict(dict)
    for where in _listable(places.values(), files):
        for (fa, ia), (fb, ib) in combinations(where, 2):
            if fa == fb and ib - ia < WINDOW:
                continue  # the two places overlap
            counts, exact = _window_verdict(files[fa], ia, files[fb], ib)
            if counts:
                matches[(fa, fb, ib - ia)][ia] = exact
    return matches


def _runs(starts: dict[int, bool]) -> Iterator[tuple[int, int, bool]]:
    """Yield ``(first line, last line, exact)`` for each run of consecutive window starts."""
    ordered = sorted(starts)
    begin = 0
    for k in range(1, len(ordered) + 1):
        if k == len(ordered) or ordered[k] != ordered[k - 1] + 1:
            run = ordered[begin:k]
            yield run[0], run[-1] + WINDOW - 1, any(starts[i] for i in run)
            begin = k


def find_repeats(sources: Sequence[Source]) -> list[list[Repeat]]:
    """Return the repeated runs, grouped by pair of files, the pair sharing most lines first."""
    files = [repeat_lines(s) for s in sources]
    by_pair: dict[tuple[int, int], list[Repeat]] = defaultdict(list)
    for (fa, fb, offset), starts in _matching_windows(files).items():
        a, b = files[fa], files[fb]
        for first, last, exact in _runs(starts):
            lines_a = (a[first].number, a[last].number)
            lines_b = (b[first + offset].number, b[last + offset].number)
            repeat = Repeat(
                sources[fa].rel, lines_a, sources[fb].rel, lines_b, last - first + 1, exact
            )
            by_pair[(fa, fb)].append(repeat)
    groups = [sorted(runs, key=lambda r: (-r.length, r.first_lines)) for runs in by_pair.values()]
    return sorted(groups, key=lambda g: (-sum(r.length for r in g), str(g[0])))


def check_repeats(sources: Sequence[Source]) -> list[str]:
    """Return one entry per pair of files that repeat code: the longest run, then the others."""
    found = []
    for runs in find_repeats(sources):
        more = "".join(f"\n    also {run} [{run.length} lines]" for run in runs[1:])
        found.append(f"{runs[0]} [{runs[0].length} lines]{more}")
    return found


# -- rule 4: sorted ``__all__`` --------------------------------------------------------------


def _literal_all(tree: ast.Module) -> tuple[int, list[str] | None] | None:
    """Return ``(line, names)`` of a module's ``__all__`` (names ``None``: not a literal)."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = getattr(node, "value", None)
            try:
                names = ast.literal_eval(value) if value is not None else None
            except ValueError:
                names = None
            return node.lineno, list(names) if isinstance(names, list | tuple) else None
    return None


def _all_problem(names: list[str] | None) -> str | None:
    """Return what is wrong with one ``__all__``, or ``None``."""
    if names is None:
        return "__all__ is not a literal list of names"
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return f"__all__ lists {', '.join(twice)} more than once"
    expected = sorted(names)
    for position, (name, wanted) in enumerate(zip(names, expected, strict=True)):
        if name != wanted:
            after = f" after {expected[position - 1]!r}" if position else " first"
            return f"__all__ is not sorted (sorted(), case-sensitive): {wanted!r} belongs{after}"
    return None


def check_all_sorted(sources: Sequence[Source], skip: frozenset[str]) -> list[str]:
    """Return every package ``__init__`` (but those in ``skip``) whose ``__all__`` is unsorted."""
    found = []
    for source in sources:
        if source.is_package and source.module not in skip:
            declared = _literal_all(source.tree)
            problem = _all_problem(declared[1]) if declared else None
            if declared and problem:
                found.append(f"{source.rel}:{declared[0]} {problem}")
    return found


# -- rule 5: magic numbers in the engine -----------------------------------------------------

ENGINE = "langchain_recursive_memory.core"
#: the numbers an engine function may write as they are (1e9 or 10**9: nanoseconds a second)
ALLOWED_NUMBERS = (0, 1, 2, -1, 0.0, 1.0, 0.5, 100, 1000, 1e9, 1_000_000_000)
_ALLOWED = frozenset((type(v), v) for v in ALLOWED_NUMBERS)  # 2.0 is not 2: a tuned float
_QUIET_KEYWORDS = frozenset({"digest_size"})


def _number(node: ast.AST) -> int | float | complex | None:
    """Return the value of a numeric literal (``-3`` included), else ``None``."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, complex):
        return sign * node.value
    return None


def _is_public(name: str) -> bool:
    """Return whether a function name is public (dunders are)."""
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


class _MagicNumbers(ast.NodeVisitor):
    """Collect the numeric literals of function bodies that should be named constants."""

    def __init__(self, rel: str, text: str) -> None:
        self.rel, self.text = rel, text
        self.scope: list[str] = []  # enclosing class and function names
        self.in_body = False
        self.found: list[str] = []

    def _visit_body(self, node: _Definition, in_body: bool) -> None:
        outer = self.in_body
        self.scope.append(node.name)
        self.in_body = in_body
        for stmt in node.body:
            self.visit(stmt)
        self.scope.pop()
        self.in_body = outer

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Check the body; and the defaults too of a private or a nested function."""
        outer = self.in_body
        self.in_body = outer or not _is_public(node.name)
        self.scope.append(node.name)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        self.scope.pop()
        self.in_body = outer
        if outer:
            for decorator in node.decorator_list:
                self.visit(decorator)
        self._visit_body(node, True)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        """Check a class body only where it stands inside a function."""
        self._visit_body(node, self.in_body)

    def visit_arg(self, node: ast.arg) -> None:
        """Skip annotations."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        """Check the value, not the annotation."""
        if node.value is not None:
            self.visit(node.value)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        """Skip f-strings: their numbers format a message."""

    def visit_Raise(self, node: ast.Raise) -> None:
        """Skip what a ``raise`` builds: its numbers shape an error message."""

    def visit_Assert(self, node: ast.Assert) -> None:
        """Check the test, not the message."""
        self.visit(node.test)

    def visit_keyword(self, node: ast.keyword) -> None:
        """Skip ``digest_size=`` (a hash's width, not a tuning)."""
        if node.arg not in _QUIET_KEYWORDS:
            self.visit(node.value)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        """Read ``-3`` as one literal."""
        if _number(node) is None:
            self.generic_visit(node)
        else:
            self._check(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        """Report a number that is not a named constant."""
        self._check(node)

    def _check(self, node: ast.expr) -> None:
        value = _number(node)
        if self.in_body and value is not None and (type(value), value) not in _ALLOWED:
            literal = ast.get_source_segment(self.text, node) or repr(value)
            self.found.append(f"{self.rel}:{node.lineno} {'.'.join(self.scope)}: {literal}")


def check_magic_numbers(sources: Sequence[Source]) -> list[str]:
    """Return the unnamed tuned numbers in the function bodies of the engine's modules."""
    found: list[str] = []
    for source in sources:
        if source.module == ENGINE or source.module.startswith(f"{ENGINE}."):
            visitor = _MagicNumbers(source.rel, source.text)
            visitor.visit(source.tree)
            found.extend(visitor.found)
    return found
