"""A model's warmth from what its server says of it (pure)."""

from datetime import UTC, datetime, timedelta

import pytest

from custom_components.llm_warmth.core.backends.types import ResidencyState, ResidentModel
from custom_components.llm_warmth.core.warmth import Warmth, warmth

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("state", "expires_at", "loading", "warm"),
    [
        (ResidencyState.SLEEPING, None, False, Warmth.COLD),
        (ResidencyState.SLEEPING, None, True, Warmth.COLD),  # asleep: its weights are gone
        (ResidencyState.UNLOADING, None, False, Warmth.UNLOADING),
        (ResidencyState.LOADING, None, False, Warmth.LOADING),
        (ResidencyState.LOADED, NOW + timedelta(minutes=5), True, Warmth.LOADING),
        (ResidencyState.LOADED, NOW + timedelta(minutes=5), False, Warmth.WARM),
        (ResidencyState.LOADED, NOW + timedelta(days=365 * 292), False, Warmth.KEPT_WARM),
    ],
)
def test_each_state_a_server_tells_is_one_warmth(
    state: ResidencyState, expires_at: datetime | None, loading: bool, warm: Warmth
) -> None:
    model = ResidentModel("m", state, expires_at=expires_at)
    assert warmth(model, loading=loading, now=NOW) is warm


def test_a_model_not_listed_is_cold_unless_our_request_loads_it() -> None:
    assert warmth(None, loading=False, now=NOW) is Warmth.COLD
    assert warmth(None, loading=True, now=NOW) is Warmth.LOADING
