"""GPU telemetry: one reading per poll from the configured source, beside the server's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed
import pynvml

from .const import (
    CONF_EXPORTER_KIND,
    CONF_EXPORTER_URL,
    CONF_GPU_SOURCE,
    DOMAIN,
    GPU_SOURCE_EXPORTER,
    GPU_SOURCE_NVML,
    LOGGER,
)
from .core.gpu.errors import GpuSourceError
from .core.gpu.exporter import ExporterKind, ExporterSource
from .core.gpu.nvml import NvmlSource
from .core.gpu.types import GpuStatus
from .core.headroom import GpuMemoryView, memory_view
from .data import LlmWarmthConfigEntry


class GpuSource(Protocol):
    """What the coordinator needs of a GPU telemetry source."""

    @property
    def description(self) -> str:
        """Return a short name of the source."""

    async def read(self) -> tuple[GpuStatus, ...]:
        """Return the GPUs' status."""

    async def close(self) -> None:
        """Release what the source holds."""


def gpu_issue_id(entry_id: str) -> str:
    """Return the id of the repair issue raised when an entry's GPU source fails."""
    return f"gpu_source_{entry_id}"


def gpu_source_from_options(hass: HomeAssistant, options: Mapping[str, Any]) -> GpuSource | None:
    """Return the GPU source the entry's options ask for, or None for no source."""
    source = options.get(CONF_GPU_SOURCE)
    if source == GPU_SOURCE_NVML:
        return NvmlSource(pynvml, hass.async_add_executor_job)
    if source == GPU_SOURCE_EXPORTER:
        return ExporterSource(
            async_get_clientsession(hass),
            options[CONF_EXPORTER_URL],
            ExporterKind(options.get(CONF_EXPORTER_KIND, ExporterKind.AUTO)),
        )
    return None


@dataclass(frozen=True, slots=True)
class GpuReading:
    """One GPU at one poll, with its memory split."""

    status: GpuStatus
    memory: GpuMemoryView


@dataclass(frozen=True, slots=True)
class GpuSnapshot:
    """Every GPU of the source at one poll, by UUID."""

    gpus: dict[str, GpuReading]


class GpuCoordinator(DataUpdateCoordinator[GpuSnapshot]):
    """Reads the GPU source; a failure here leaves the server's entities alone."""

    config_entry: LlmWarmthConfigEntry

    def __init__(
        self,
        hass: HomeAssistant,
        entry: LlmWarmthConfigEntry,
        source: GpuSource,
        *,
        update_interval: timedelta,
        llm_vram: Callable[[], int | None],
        reserve_bytes: int,
    ) -> None:
        """Poll ``source`` every ``update_interval``.

        ``llm_vram`` returns the GPU memory the server's resident models hold, where the
        server reports it (None otherwise): it splits the memory when the GPU's process
        list does not name the server.
        """
        super().__init__(
            hass,
            LOGGER,
            config_entry=entry,
            name=f"{DOMAIN} {entry.title} GPU",
            update_interval=update_interval,
            always_update=False,
        )
        self.source = source
        self.reserve_bytes = reserve_bytes
        self._llm_vram = llm_vram
        self._issue_id = gpu_issue_id(entry.entry_id)
        self.unavailable_reason: str | None = None

    async def async_shutdown(self) -> None:
        """Stop polling and release the source (NVML is shut down)."""
        await super().async_shutdown()
        await self.source.close()

    async def _async_update_data(self) -> GpuSnapshot:
        try:
            gpus = await self.source.read()
        except GpuSourceError as err:
            self.unavailable_reason = str(err)
            ir.async_create_issue(
                self.hass,
                DOMAIN,
                self._issue_id,
                is_fixable=False,
                severity=ir.IssueSeverity.WARNING,
                translation_key="gpu_source_unavailable",
                translation_placeholders={
                    "server": self.config_entry.title,
                    "source": self.source.description,
                    "reason": str(err),
                },
            )
            raise UpdateFailed(
                translation_domain=DOMAIN,
                translation_key="gpu_unavailable",
                translation_placeholders={"source": self.source.description, "reason": str(err)},
            ) from err
        self.unavailable_reason = None
        ir.async_delete_issue(self.hass, DOMAIN, self._issue_id)
        llm_vram = self._llm_vram()
        return GpuSnapshot(
            gpus={
                gpu.uuid: GpuReading(
                    gpu,
                    memory_view(
                        gpu,
                        reserve_bytes=self.reserve_bytes,
                        llm_resident_vram=llm_vram,
                        gpu_count=len(gpus),
                    ),
                )
                for gpu in gpus
            }
        )
