// The LLM Warmth card's words, in the languages of the integration's translations: English
// here, German, Dutch, French and Spanish in their own modules. The card takes Home
// Assistant's language (`hass.locale.language`) before it draws; a language it has no
// words for, or a word missing in one, is English. Placeholders: `{name}`; the card fills
// them with text it has escaped already.

import { DE } from "./llm-warmth-card-words-de.js";
import { ES } from "./llm-warmth-card-words-es.js";
import { FR } from "./llm-warmth-card-words-fr.js";
import { NL } from "./llm-warmth-card-words-nl.js";

export const EN = {
  waiting: "Waiting for Home Assistant…",
  no_such_entity: "no such entity",
  reach_up: "up",
  reach_down: "down",
  on_peer: "on peer {peer}",
  on_peer_why: "on peer {peer} ({why})",
  peer_shown_by: "shown by {server}",
  peer_not_added: "add it as an entry to see its warmth",
  peer_ambiguous: "several entries serve that model",
  peer_unreachable: "its entry cannot reach it",
  gpu_headroom: "{gpu}: {headroom} GiB headroom of {total} GiB",
  no_models: "no models",
  agents: "agents: {agents}",
  host: "Host {host}",
  unknown_host: "unknown host",
  last_turn: "last turn {time}: answered by {agent}{model}, {reason}",
  model_on_server: " ({model} on {server})",
  no_turn_yet: "no turn yet",
  assistant_line: "primary {primary}, then {fallbacks}",
  none: "none",
  warm_assistants: "Warm assistants",
  route_primary_warm: "primary warm",
  route_primary_within_wait: "primary ready within the wait",
  route_primary_not_followed: "primary not followed",
  route_fallback_primary_cold: "fall-back: primary cold",
  route_fallback_primary_down: "fall-back: primary's server down",
  route_primary_no_ready_fallback: "primary: no fall-back ready",
  route_nothing_reachable: "no agent's server reachable",
  state_cold: "cold",
  state_loading: "loading",
  state_warm: "warm",
  state_kept_warm: "warm, no expiry",
  state_unloading: "unloading",
  state_unavailable: "unavailable",
  state_unknown: "unknown",
  no_history: "no history in this span",
  pinned_span: "pinned {start} – {end}{until}",
  until_time: ", until {time}",
  until_unpinned: ", until unpinned",
  also: " (also {state})",
  hidden_change: "1 change too short to draw",
  hidden_changes: "{count} changes too short to draw",
  load_label: "load {figure}, ended {time}",
  polled_from_first_sighting: " (polling saw it from its first sighting on)",
  cold_start_at: "cold start {time}: {words}",
  cold_starts_in_span: "{count} cold starts in this span",
  warmth_aria: "{name} warmth",
  legend_load: "load (its length)",
  legend_load_at_least: "load, at least",
  legend_cold_start: "cold start",
  legend_pinned: "pinned",
  history_error: "History could not be read ({error}): the current states only.",
  warmth_since: "Warmth, since {time}",
  warmth_last: "Warmth, last {span}",
  span_days: "{count} days",
  span_hour: "hour",
  span_hours: "{count} hours",
  at_least: "at least {figure}",
  last_timed_load: "last timed load",
  last_load: "last load",
  polls_saw_part: "(polls saw part of it)",
  waited: "{who} waited",
  polling_saw_wait: "polling saw {who} wait",
  who_probe: "probe",
  who_client: "a client",
  who_request: "a request",
  gpu_memory: "GPU memory",
  gpu_memory_of: "GPU memory ({count} GPUs)",
  no_memory: "No memory figures in this span yet.",
  household_reserve: "household reserve {size}",
  up_to: "{name}: up to {size}",
  total: "total",
  reserve: "reserve {size}",
  other_processes: "other processes",
  last_probe: "Last probe: time to first token",
  last_cold_probe: "Last cold probe: time to first token",
  no_probe: "No probe yet (llm_warmth.probe measures one).",
  first_token_after: "first token after {figure}",
  ttft_aria: "time to first token by stage",
  stage_queue: "queue",
  stage_load: "load",
  stage_queue_and_load: "queue and load",
  stage_prefill: "prefill",
  stage_first_decode: "first decode",
  stage_overhead: "overhead",
  stage_unreported: "not reported",
  warming_signals: "Warming signals",
  warmed_by_clock: "by the clock",
  warmed_by_idle: "by its idle times",
  warmed_by_clock_and_signals: "by the clock and the house's signals",
  warmed_by_idle_and_signals: "by its idle times and the house's signals",
  warmed_by_signals: "by the house's signals",
  no_signal_none_chosen: "no signals chosen: add warming signals to the server (Settings → Devices & services)",
  no_signal_learning: "still learning: no signal leads its uses yet",
  no_signal_time_only_cheaper: "the clock alone costs less",
  edge_alarm: "its time comes",
  lead_follows: "{edge}: a use follows within {within} min {share} % of the time",
  signals_missing: "Its Warming signals sensor is not there.",
  led_wrong: "led {led}, wrong {wrong}",
  warms_it: ", warms it",
  signal_warms: "1 signal warms it",
  signals_warm: "{count} signals warm it",
  no_signal_warms: "no signal warms it",
  warmed: "warmed {how}",
};

export const LANGUAGES = { en: EN, de: DE, nl: NL, fr: FR, es: ES };

let table = EN;
let numberLanguage = "en";

/** Take Home Assistant's language ("de", "nl-BE", ...): its words, English where none fit. */
export function setLanguage(language) {
  const base = String(language ?? "en").toLowerCase().split("-")[0];
  table = LANGUAGES[base] ?? EN;
  numberLanguage = LANGUAGES[base] ? String(language) : "en";
}

/** Return the word of `key` in the card's language, its placeholders filled from `values`. */
export function t(key, values = {}) {
  const template = table[key] ?? EN[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/** Return a number with `digits` decimals as the card's language writes it ("7,5"). */
export function decimal(value, digits) {
  return new Intl.NumberFormat(numberLanguage, {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
    useGrouping: false,
  }).format(value);
}
