"""How a renamed public name warns until it goes.

A name of 0.2.0's public API that this release renames keeps working until 0.4.0, with a
:class:`DeprecationWarning` that names its replacement: ``"X is deprecated since 0.3.0 and
will be removed in 0.4.0; use Y"``. The old name calls :func:`warn_deprecated` and does
what the new one does. (0.1.0's names, which 0.2.0 deprecated, were removed in 0.3.0.)

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_deprecated("old_name()", "new_name()", stacklevel=2)
    >>> print(caught[0].message)
    old_name() is deprecated since 0.3.0 and will be removed in 0.4.0; use new_name()
"""

from __future__ import annotations

import warnings

__all__ = ["DEPRECATED_SINCE", "REMOVED_IN", "warn_deprecated"]

#: the release that deprecates the names warned about
DEPRECATED_SINCE = "0.3.0"
#: the release that removes them
REMOVED_IN = "0.4.0"


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated and goes in :data:`REMOVED_IN`, naming ``new``.

    Args:
        old: What the caller used, e.g. ``"HiGMem.old_name()"``.
        new: What to use instead, e.g. ``"HiGMem.new_name()"``.
        stacklevel: Passed to :func:`warnings.warn`; the default 3 points at the caller
            of the function that calls this one.
    """
    message = (
        f"{old} is deprecated since {DEPRECATED_SINCE} and will be removed in {REMOVED_IN}; "
        f"use {new}"
    )
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)
