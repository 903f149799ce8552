"""What a model's planner would have learnt of the household's signals, taught to it at once.

The tests of warming on a signal (emulated and real servers) start from a planner that
knows an edge leads a use: twenty cold edges of each entity, each followed by a use
``lead`` seconds later, and a contest that found warming on the signals cheapest. The
rules that learn this are tested in ``test_core_signal_learning.py`` and
``test_core_warm_signals.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from homeassistant.config_entries import ConfigEntry
from homeassistant.util import dt as dt_util

from custom_components.llm_warmth.core.signal_learning import EdgeStats, SignalBook
from custom_components.llm_warmth.core.usage import UsageRecord
from custom_components.llm_warmth.core.warm_contest import WAYS, Contest, Tally, WarmMode, Way


def teach(
    entry: ConfigEntry,
    model: str,
    leads: Mapping[str, int],
    *,
    now: datetime,
    load: float | None = None,
) -> None:
    """Have ``model``'s planner know that each entity's ``on`` leads a use by its seconds.

    ``load``: the model's cold load the planner judges leads against (None: as it is).
    """
    usage = entry.runtime_data.usage
    if usage.get(model) is None:
        usage.set(model, UsageRecord())
    record = usage.get(model)
    assert record is not None
    planner = record.planner
    moment = int(now.timestamp())
    planner.days = 14
    planner.folded_until = dt_util.start_of_local_day(dt_util.as_local(now))
    if load is not None:
        planner.load = load
    planner.signals = SignalBook(
        {
            (entity, "on"): EdgeStats([(moment - 3600 * i, lead) for i in range(20, 0, -1)], 20, 2)
            for entity, lead in leads.items()
        },
        folded=moment,
    )
    scores = dict.fromkeys(WAYS, (100.0, 100.0)) | {Way(WarmMode.SIGNALS): (10.0, 10.0)}
    planner.contest = Contest(Tally(scores, 14, 60), Tally(dict(scores), 14, 60), "idle@300")
