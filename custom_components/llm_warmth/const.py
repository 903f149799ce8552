"""Constants of the LLM Warmth integration."""

from datetime import timedelta
import logging
from typing import Final

DOMAIN: Final = "llm_warmth"
LOGGER = logging.getLogger(__package__)

# Which kind of server an entry talks to (a ServerKind value); entries before version 2
# were all Ollama.
CONF_SERVER_KIND: Final = "server_kind"

# Poll interval (options flow), in seconds.
DEFAULT_SCAN_INTERVAL: Final = 10
MIN_SCAN_INTERVAL: Final = 2
MAX_SCAN_INTERVAL: Final = 300
# While a model is loading the server is polled this often: the resolution of observed loads.
SETTLING_SCAN_INTERVAL: Final = timedelta(seconds=0.5)
# With the event stream up, a model that left unexplained is decided this long (seconds)
# after its replacement window ends (from the last pushed residency; nothing is sent).
DECISION_SLACK: Final = 0.05
# How long a load that an agent's turn began (on a server that lists a model only once
# loaded) is shown as loading at least, when polling does not list the model before.
HEARD_LOAD_SECONDS: Final = 120.0
# ... for at most this long at a time; then the regular interval again until it settles.
FAST_POLL_LIMIT: Final = timedelta(minutes=5)
# How often an eviction reads the residency again until the server let the model go.
EVICT_CHECK_INTERVAL: Final = 0.25

# A pinned model found gone is asserted again after this long (seconds), if still gone:
# a server that switches models may list none in between.
PIN_SETTLE_SECONDS: Final = 1.0

# A server's event stream that fails is reconnected after this long, doubling up to the max.
EVENTS_RETRY_MIN: Final = 1.0
EVENTS_RETRY_MAX: Final = 60.0

EVENT_MODEL_LOADED: Final = "llm_warmth_model_loaded"
EVENT_MODEL_UNLOADED: Final = "llm_warmth_model_unloaded"
EVENT_SERVER_RESTARTED: Final = "llm_warmth_server_restarted"
EVENT_COLD_START: Final = "llm_warmth_cold_start"
EVENT_PIN_REASSERTED: Final = "llm_warmth_pin_reasserted"
EVENT_PIN_RELEASED: Final = "llm_warmth_pin_released"
EVENT_PIN_REAPPLIED: Final = "llm_warmth_pin_reapplied"
EVENT_DIAGNOSIS_PROGRESS: Final = "llm_warmth_diagnosis_progress"
EVENT_VOICE_TURN: Final = "llm_warmth_voice_turn"
EVENT_ASSISTANT_ROUTE: Final = "llm_warmth_assistant_route"
EVENT_AUTO_WARM: Final = "llm_warmth_auto_warm"

# The household's assistant model, when no conversation agent names it (options flow).
CONF_ASSISTANT_MODEL: Final = "assistant_model"

# GPU telemetry (options flow).
CONF_GPU_SOURCE: Final = "gpu_source"
CONF_EXPORTER_URL: Final = "exporter_url"
CONF_EXPORTER_KIND: Final = "exporter_kind"
CONF_RESERVE_GIB: Final = "reserve_gib"
GPU_SOURCE_NONE: Final = "none"
GPU_SOURCE_NVML: Final = "nvml"
GPU_SOURCE_EXPORTER: Final = "exporter"
DEFAULT_RESERVE_GIB: Final = 1.0

# A model's TTFT target (its number entity) until one is set, in seconds.
DEFAULT_TTFT_TARGET: Final = 1.5

# The household guard (options flow): entities whose "on" means "the GPU is needed now",
# and how long the need must be gone before released pins are re-applied (minutes).
CONF_PROTECTED_ENTITIES: Final = "protected_entities"
# The machine whose GPU the server uses: its household services are that host's.
CONF_HOST: Final = "host"
CONF_GUARD_CLEAR_MINUTES: Final = "guard_clear_minutes"
# The warm assistant (a subentry): its primary agent, ordered fall-backs, accepted wait.
SUBENTRY_WARM_ASSISTANT: Final = "warm_assistant"
# A model's warming signals (a subentry): the model, and the entities whose changes may
# precede its use.
SUBENTRY_WARMING_SIGNALS: Final = "warming_signals"
CONF_SIGNAL_MODEL: Final = "model"
CONF_SIGNAL_ENTITIES: Final = "entities"
# The household entry (made by the integration once a house has two servers): data key.
CONF_HOUSEHOLD: Final = "household"
CONF_ASSISTANT_PRIMARY: Final = "primary_agent"
CONF_ASSISTANT_FALLBACKS: Final = "fallback_agents"
CONF_ASSISTANT_WAIT: Final = "max_wait_seconds"
DEFAULT_GUARD_CLEAR_MINUTES: Final = 10
GIB: Final = 1024**3
