"""How long to wait before reconnecting to a stream that dropped: a doubling, bounded delay."""

from __future__ import annotations


def reconnect_delay(
    previous: float | None, worked_for: float | None, *, shortest: float, longest: float
) -> float:
    """Return the wait before the next attempt, in seconds.

    ``previous`` is the wait before this attempt (None: the first failure); ``worked_for`` how
    long the stream that just dropped had delivered (None: it never did). The wait doubles
    from ``shortest`` up to ``longest``, and starts again from ``shortest`` after a stream that
    worked for longer than the longest wait: a server restarted once a day is not retried an
    hour late.
    """
    if previous is None or (worked_for is not None and worked_for > longest):
        return shortest
    return min(2 * previous, longest)
