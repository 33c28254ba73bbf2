"""The ``lrm`` command group: a global option given after the command gets a hint.

``lrm sessions --path ./memory`` fails as click fails it (``No such option: --path``,
exit 2), and says where the option goes: ``--path is a global option: give it before the
command: lrm --path ./memory sessions``.
"""

from __future__ import annotations

import shlex
from typing import Any

from typer.core import TyperGroup

__all__ = ["LrmGroup"]

_ARGS = "lrm.args"
"""``ctx.meta`` key of the command line's arguments, as given."""


class LrmGroup(TyperGroup):
    """The app's group: click's own, with a hint for misplaced global options."""

    # Contexts and errors are typed Any: typer (0.29) vendors its own click, older ones use
    # click's; both have the same names, which is all this needs.

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Keep the arguments as given (for the hint), then parse them as click does."""
        ctx.meta[_ARGS] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; a global option after it gets a hint in click's error."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if type(exc).__name__ == "NoSuchOption":
                hint = self._hint(ctx, getattr(exc, "option_name", ""))
                if hint is not None:
                    exc.message = f"{exc.message}. {hint}"  # type: ignore[attr-defined]
            raise

    def _hint(self, ctx: Any, option: str) -> str | None:
        """Where a global option goes, with the command line fixed; None for any other."""
        param = next((p for p in self.params if option in (*p.opts, *p.secondary_opts)), None)
        args: list[str] = ctx.meta.get(_ARGS, [])
        if param is None or option not in args:
            return None
        at = args.index(option)
        takes = 0 if getattr(param, "is_flag", False) else 1
        moved = args[at : at + 1 + takes]
        fixed = [*moved, *args[:at], *args[at + 1 + takes :]]
        line = shlex.join([ctx.find_root().info_name or "lrm", *fixed])
        return f"{option} is a global option: give it before the command: {line}"
