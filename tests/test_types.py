"""What the typed server replies derive: a pin forever, the GPU's share, a request's wait."""

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.backends.types import (
    ResidencyState,
    ResidentModel,
    ServedRequest,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
TWENTY_YEARS = timedelta(days=7300)


def resident(**fields: object) -> ResidentModel:
    return ResidentModel("m", ResidencyState.LOADED, **fields)  # type: ignore[arg-type]


def test_an_expiry_more_than_20_years_out_is_kept_forever() -> None:
    """Ollama's own line (format/time.go): 7300 days, not a day more or less."""
    assert resident(expires_at=NOW + TWENTY_YEARS + timedelta(seconds=1)).kept_forever(NOW)
    assert not resident(expires_at=NOW + TWENTY_YEARS).kept_forever(NOW)
    assert not resident(expires_at=NOW + timedelta(days=7299)).kept_forever(NOW)
    assert not resident(expires_at=NOW + timedelta(days=30)).kept_forever(NOW)
    assert not resident().kept_forever(NOW)


def test_the_gpu_share_to_a_tenth_of_a_percent_of_any_size() -> None:
    assert resident(size=3, size_vram=1).gpu_share == 33.3
    assert resident(size=1, size_vram=1).gpu_share == 100.0
    assert resident(size=0, size_vram=0).gpu_share is None
    assert resident(size=3).gpu_share is None


def test_a_requests_wait_to_the_millisecond() -> None:
    served = ServedRequest(
        id=1,
        model="m",
        ended_at=NOW,
        seconds=1.0,
        status=200,
        prefill_seconds=0.3333,
        generation_seconds=0.0,
    )
    assert served.waited_seconds == 0.667
