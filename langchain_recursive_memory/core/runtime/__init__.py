"""How the engines talk to the outside world: effects, their runner, retries, background folds.

The engines' operations are written once, as generators of typed effects
(:mod:`.effects`); a :class:`~.runner.Runner` that each engine holds performs them with
blocking calls or with ``await``, applying one retry path (:mod:`.retry`) to model and
embedding calls.
"""

from .retry import RetryPolicy

__all__ = ["RetryPolicy"]
