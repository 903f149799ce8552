"""Options flow: a server entry's options.

The poll interval, the assistant model, the GPU source and the household reserve, and the
household guard's host, entities and wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from homeassistant.config_entries import ConfigFlowResult, OptionsFlowWithReload
from homeassistant.const import CONF_SCAN_INTERVAL
from homeassistant.helpers.selector import (
    EntitySelector,
    EntitySelectorConfig,
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectSelector,
    SelectSelectorConfig,
    TextSelector,
)
import probatio as vol

from .const import (
    CONF_ASSISTANT_MODEL,
    CONF_EXPORTER_KIND,
    CONF_EXPORTER_URL,
    CONF_GPU_SOURCE,
    CONF_GUARD_CLEAR_MINUTES,
    CONF_HOST,
    CONF_PROTECTED_ENTITIES,
    CONF_RESERVE_GIB,
    DEFAULT_GUARD_CLEAR_MINUTES,
    DEFAULT_RESERVE_GIB,
    DEFAULT_SCAN_INTERVAL,
    GPU_SOURCE_EXPORTER,
    GPU_SOURCE_NONE,
    GPU_SOURCE_NVML,
    MAX_SCAN_INTERVAL,
    MIN_SCAN_INTERVAL,
)
from .core.gpu.errors import GpuSourceError
from .core.gpu.exporter import ExporterKind
from .core.headroom import reserve_too_large
from .core.server_settings import exporter_url, guard_host
from .gpu_coordinator import gpu_source_from_options
from .household import entry_host


class LlmWarmthOptionsFlow(OptionsFlowWithReload):
    """Change the poll interval, the GPU source and the household reserve.

    The exporter's URL and kind are asked in a step of their own, only for an exporter.
    """

    def __init__(self) -> None:
        """Start with nothing chosen yet."""
        self._options: dict[str, object] = {}

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for the interval, the GPU source and the reserve; NVML is tried at once."""
        errors: dict[str, str] = {}
        placeholders = {"reason": "", "total": ""}
        if user_input is not None:
            self._options = {
                **_DEFAULT_OPTIONS,
                **self.config_entry.options,
                CONF_ASSISTANT_MODEL: user_input.get(CONF_ASSISTANT_MODEL) or "",
                CONF_SCAN_INTERVAL: int(user_input[CONF_SCAN_INTERVAL]),
                CONF_GPU_SOURCE: user_input[CONF_GPU_SOURCE],
                CONF_RESERVE_GIB: float(user_input[CONF_RESERVE_GIB]),
                CONF_PROTECTED_ENTITIES: list(user_input.get(CONF_PROTECTED_ENTITIES) or []),
                CONF_GUARD_CLEAR_MINUTES: int(user_input[CONF_GUARD_CLEAR_MINUTES]),
                CONF_HOST: guard_host(user_input.get(CONF_HOST), entry_host(self.config_entry)),
            }
            if self._options[CONF_GPU_SOURCE] == GPU_SOURCE_EXPORTER:
                return await self.async_step_exporter()
            check = await self._check_gpu_source(self._options)
            if check.failed is not None:
                errors["base"], placeholders["reason"] = "gpu_source_failed", check.failed
            elif check.reserve_leaves_no_room_of is not None:
                errors[CONF_RESERVE_GIB] = "reserve_too_large"
                placeholders["total"] = check.reserve_leaves_no_room_of
            else:
                return self.async_create_entry(data=self._options)
        current = {
            **_DEFAULT_OPTIONS,
            CONF_HOST: entry_host(self.config_entry),
            **self.config_entry.options,
            **(user_input or {}),
        }
        data = getattr(self.config_entry, "runtime_data", None)  # None: the entry is not up
        models = sorted(data.coordinator.data.models) if data else []
        schema = _OPTIONS_SCHEMA.extend(
            {
                vol.Optional(CONF_ASSISTANT_MODEL): SelectSelector(
                    SelectSelectorConfig(options=models, custom_value=True)
                )
            }
        )
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(schema, current),
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_exporter(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the exporter's URL and kind, and read it once before saving."""
        errors: dict[str, str] = {}
        placeholders = {"reason": "", "total": ""}
        if user_input is not None:
            options = {
                **self._options,
                CONF_EXPORTER_URL: exporter_url(user_input.get(CONF_EXPORTER_URL)),
                CONF_EXPORTER_KIND: user_input[CONF_EXPORTER_KIND],
            }
            if not options[CONF_EXPORTER_URL]:
                errors[CONF_EXPORTER_URL] = "exporter_url_required"
            elif (check := await self._check_gpu_source(options)).failed is not None:
                errors["base"], placeholders["reason"] = "gpu_source_failed", check.failed
            elif check.reserve_leaves_no_room_of is not None:  # the reserve is on the first form
                errors["base"] = "reserve_too_large"
                placeholders["total"] = check.reserve_leaves_no_room_of
            else:
                return self.async_create_entry(data=options)
        current = {**self._options, **(user_input or {})}
        return self.async_show_form(
            step_id="exporter",
            data_schema=self.add_suggested_values_to_schema(_EXPORTER_SCHEMA, current),
            errors=errors,
            description_placeholders=placeholders,
        )

    async def _check_gpu_source(self, options: Mapping[str, object]) -> _GpuCheck:
        """Read the GPU source the options ask for once; say how it went.

        Whether it failed, and whether the household reserve leaves room for the models on
        the GPUs it read.
        """
        if (source := gpu_source_from_options(self.hass, options)) is None:
            return _GpuCheck()
        try:
            gpus = await source.read()
        except GpuSourceError as err:
            return _GpuCheck(failed=str(err))
        finally:
            await source.close()
        reserve = round(float(str(options.get(CONF_RESERVE_GIB, 0))) * 1024**3)
        if (total := reserve_too_large(reserve, gpus)) is None:
            return _GpuCheck()
        return _GpuCheck(reserve_leaves_no_room_of=f"{total / 1024**3:.1f}")


@dataclass(frozen=True, slots=True)
class _GpuCheck:
    """A GPU source read once: why it failed, or the GiB of a GPU the reserve fills."""

    failed: str | None = None
    reserve_leaves_no_room_of: str | None = None


_DEFAULT_OPTIONS: Final[Mapping[str, object]] = {
    CONF_ASSISTANT_MODEL: "",
    CONF_SCAN_INTERVAL: DEFAULT_SCAN_INTERVAL,
    CONF_GPU_SOURCE: GPU_SOURCE_NONE,
    CONF_EXPORTER_URL: "",
    CONF_EXPORTER_KIND: ExporterKind.AUTO.value,
    CONF_RESERVE_GIB: DEFAULT_RESERVE_GIB,
    CONF_PROTECTED_ENTITIES: [],
    CONF_GUARD_CLEAR_MINUTES: DEFAULT_GUARD_CLEAR_MINUTES,
}
_OPTIONS_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_SCAN_INTERVAL, default=DEFAULT_SCAN_INTERVAL): NumberSelector(
            NumberSelectorConfig(
                min=MIN_SCAN_INTERVAL,
                max=MAX_SCAN_INTERVAL,
                step=1,
                unit_of_measurement="s",
                mode=NumberSelectorMode.BOX,
            )
        ),
        vol.Required(CONF_GPU_SOURCE, default=GPU_SOURCE_NONE): SelectSelector(
            SelectSelectorConfig(
                options=[GPU_SOURCE_NONE, GPU_SOURCE_NVML, GPU_SOURCE_EXPORTER],
                translation_key=CONF_GPU_SOURCE,
            )
        ),
        vol.Required(CONF_RESERVE_GIB, default=DEFAULT_RESERVE_GIB): NumberSelector(
            NumberSelectorConfig(
                min=0, max=256, step=0.25, unit_of_measurement="GiB", mode=NumberSelectorMode.BOX
            )
        ),
        # The household guard: the host whose GPU the server uses, what says "the GPU is
        # needed now" there, and how long to wait after it before pins are re-applied.
        vol.Optional(CONF_HOST): TextSelector(),
        vol.Optional(CONF_PROTECTED_ENTITIES): EntitySelector(EntitySelectorConfig(multiple=True)),
        vol.Required(CONF_GUARD_CLEAR_MINUTES, default=DEFAULT_GUARD_CLEAR_MINUTES): NumberSelector(
            NumberSelectorConfig(
                min=0, max=1440, step=1, unit_of_measurement="min", mode=NumberSelectorMode.BOX
            )
        ),
    }
)

_EXPORTER_SCHEMA = vol.Schema(
    {
        # Plain text: a URL field marks "gpu-box:9400/metrics" invalid.
        vol.Optional(CONF_EXPORTER_URL): TextSelector(),
        vol.Required(CONF_EXPORTER_KIND, default=ExporterKind.AUTO.value): SelectSelector(
            SelectSelectorConfig(
                options=[kind.value for kind in ExporterKind], translation_key=CONF_EXPORTER_KIND
            )
        ),
    }
)
