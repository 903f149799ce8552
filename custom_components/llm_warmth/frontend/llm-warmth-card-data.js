// What the LLM Warmth card draws, computed from Home Assistant's history and states.
// Pure data: no DOM, no Home Assistant object; tested on its own with `node --test`
// (tests/frontend/). Times are milliseconds since the epoch, durations seconds unless
// a name says otherwise, memory bytes.

import { decimal, t } from "./llm-warmth-card-words.js";

/** The states of a model's Warmth sensor, in the order the legend lists them. */
export const WARMTH_STATES = ["cold", "loading", "warm", "kept_warm", "unloading"];

/** What Home Assistant writes when it has no value. */
export const ABSENT_STATES = ["unavailable", "unknown"];

// Who measured a load figure (the sensors' `source` attribute): polling sees a load
// from its first sighting on, so its figure is a lower bound; the others are exact.
const LOWER_BOUND_SOURCES = new Set(["polling"]);

// Who waited for a cold request, by who timed it: the integration times only the
// requests of its own probes ("client"); polling saw another client's request (words:
// llm-warmth-card-words.js).
const WAITED_BY = { client: "who_probe", polling: "who_client", events: "who_client", server: "who_client" };

const MS_PER = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 };
const BYTES_PER = {
  B: 1,
  kB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  TiB: 1024 ** 4,
};

/**
 * Return one history entry as `{t, changed, state, attributes}`.
 *
 * Reads the websocket's compressed rows (`{s, a, lu, lc}`, seconds; `lc` only when it
 * differs from `lu`; `a` absent in a minimal response) and full state objects
 * (`{state, attributes, last_changed, last_updated}`, ISO strings).
 * `t` is when the row was written, `changed` when its state last changed.
 */
export function toEntry(raw) {
  if (raw && "s" in raw) {
    const t = Number(raw.lu) * 1000;
    return {
      t,
      changed: raw.lc === undefined ? t : Number(raw.lc) * 1000,
      state: String(raw.s),
      attributes: raw.a ?? {},
    };
  }
  const t = Date.parse(raw.last_updated ?? raw.last_changed);
  return {
    t,
    changed: Date.parse(raw.last_changed ?? raw.last_updated),
    state: String(raw.state),
    attributes: raw.attributes ?? {},
  };
}

/** Return a history's entries, oldest first, without rows that carry no time. */
export function toEntries(history) {
  return (history ?? [])
    .map(toEntry)
    .filter((e) => Number.isFinite(e.t))
    .sort((a, b) => a.t - b.t);
}

/** Return a state as a number, null when it is none (unavailable, unknown, text). */
export function numeric(state) {
  if (state === null || state === undefined || state === "") return null;
  const value = Number(state);
  return Number.isFinite(value) ? value : null;
}

/** Return a duration in milliseconds from a value in `unit` (ms, s, min, h, d). */
export function durationMs(value, unit) {
  if (value === null) return null;
  return value * (MS_PER[unit] ?? 1000);
}

/** Return a memory size in bytes from a value in `unit` (B ... TiB); GiB if none. */
export function toBytes(value, unit) {
  if (value === null) return null;
  return value * (BYTES_PER[unit] ?? BYTES_PER.GiB);
}

export function unitOf(entry, fallback) {
  return entry.attributes.unit_of_measurement ?? fallback;
}

/**
 * Return the warmth of one model over [start, end] as segments `{start, end, state, merged}`.
 *
 * Equal neighbours are joined. On a long span, states shorter than `minMs` (a pixel or two)
 * that follow each other are grouped into one segment: it shows the state the group spent
 * the most time in, counts the changes it hides in `merged` and names in `also` the state
 * it spent the next most time in (a morning's load and warm hour: warm, also loading). A
 * state that lasts `minMs` or more is never grouped. Time before the first known state is
 * no segment.
 */
export function timeline(history, { start, end, minMs = 0 }) {
  const entries = toEntries(history);
  const raw = [];
  entries.forEach((entry, i) => {
    const from = Math.max(entry.changed, start);
    const to = Math.min(i + 1 < entries.length ? entries[i + 1].changed : end, end);
    if (to > from) raw.push({ start: from, end: to, state: entry.state, merged: 0 });
  });
  const joined = joinEqual(raw);
  const groups = [];
  for (const segment of joined) {
    const short = segment.end - segment.start < minMs;
    const last = groups.at(-1);
    if (short && last?.short && last.end === segment.start) {
      last.parts.push(segment);
      last.end = segment.end;
    } else {
      groups.push({ start: segment.start, end: segment.end, short, parts: [segment] });
    }
  }
  return joinEqual(
    groups.map((g) => {
      if (g.parts.length === 1) return g.parts[0];
      const [state, also] = byTime(g.parts);
      const merged = g.parts.reduce((n, p) => n + p.merged, g.parts.length - 1);
      return { start: g.start, end: g.end, state, merged, also };
    }),
  );
}

function joinEqual(segments) {
  const out = [];
  for (const segment of segments) {
    const last = out.at(-1);
    if (last && last.state === segment.state && last.end === segment.start) {
      last.end = segment.end;
      last.merged += segment.merged;
      if (!last.also && segment.also) last.also = segment.also;
    } else {
      out.push({ ...segment });
    }
  }
  return out;
}

// The states of a group by the time spent in them: [the longest, the next (or null)].
function byTime(parts) {
  const time = new Map();
  for (const p of parts) time.set(p.state, (time.get(p.state) ?? 0) + p.end - p.start);
  const sorted = [...time].sort((a, b) => b[1] - a[1]);
  return [sorted[0][0], sorted[1]?.[0] ?? null];
}

/**
 * Return when a model was pinned within [start, end]: each span its Keep warm switch was
 * on, `{start, end, until}` (`until`: the pin's end as its `until` attribute said, in ms;
 * null for a pin until unpinned). A pin with an end keeps the model "warm" (an expiry),
 * not "warm, no expiry": without these spans it would not show on the timeline.
 */
export function pinSpans(history, { start, end }) {
  const entries = toEntries(history);
  const spans = [];
  entries.forEach((entry, i) => {
    if (entry.state !== "on") return;
    const from = Math.max(entry.changed, start);
    const to = Math.min(i + 1 < entries.length ? entries[i + 1].changed : end, end);
    if (to <= from) return;
    const parsed = entry.attributes.until ? Date.parse(entry.attributes.until) : NaN;
    const until = Number.isFinite(parsed) ? parsed : null;
    const last = spans.at(-1);
    if (last && last.end === from && last.until === until) last.end = to;
    else spans.push({ start: from, end: to, until });
  });
  return spans;
}

/**
 * Return the figures a "last ... duration" sensor wrote within [start, end], one per load.
 *
 * The sensor's state is the last exact figure, and its `at_least_seconds` attribute a
 * newer one that only polls saw (a lower bound, in seconds). Each changes once per load:
 * a figure is new when it differs from the last one of its kind seen (unavailable and
 * unknown in between are no load, nor is the value restored after a restart). What is
 * carried in at `start` is no load. Each is `{t, seconds, exact, source}`; `exact` is
 * false for a lower bound. (History written before the attribute existed kept a polled
 * figure as the state, with `source: polling`: a lower bound too.)
 */
export function figures(history, { start, end, unit = "s" }) {
  const out = [];
  let lastExact = null;
  let lastBound = null;
  for (const entry of toEntries(history)) {
    const carried = entry.t <= start + 1000;
    const fresh = !carried && entry.t <= end;
    const value = numeric(entry.state);
    const bound = numeric(entry.attributes.at_least_seconds);
    let seenBound = bound;
    if (value !== null) {
      const seconds = durationMs(value, unitOf(entry, unit)) / 1000;
      const source = entry.attributes.source ?? null;
      // Before 1.7 a polled figure was the state (source "polling"): a lower bound, which
      // the attribute holds since (the same figure then, no new load).
      const legacyBound = LOWER_BOUND_SOURCES.has(source);
      // The same exact figure again is a new load when a lower bound came between: the
      // attribute went back to null, an exact figure of a newer load replaced it.
      const replacedBound = !legacyBound && lastBound !== null && bound === null;
      if (fresh && (lastExact !== seconds || replacedBound)) {
        out.push({ t: entry.t, seconds, exact: !legacyBound, source });
      }
      lastExact = seconds;
      if (legacyBound) seenBound = seconds;
    }
    if (bound !== null && fresh && lastBound !== bound) {
      out.push({ t: entry.t, seconds: bound, exact: false, source: "polling" });
    }
    if (seenBound !== null || value !== null) lastBound = seenBound;
  }
  return out;
}

/**
 * Return each load as a bar `{start, end, seconds, exact, source, clipped}`: it ended when
 * its figure was written and lasted as long as the figure says (at least that long when
 * the figure is a lower bound). `clipped` when it began before `start`.
 */
export function loadBars(history, window) {
  return figures(history, window).map((f) => {
    const begin = f.t - f.seconds * 1000;
    return {
      start: Math.max(begin, window.start),
      end: f.t,
      seconds: f.seconds,
      exact: f.exact,
      source: f.source,
      clipped: begin < window.start,
    };
  });
}

/**
 * Return each cold start `{t, seconds, exact, source, waitedBy}`: when the request that
 * had to wait for the load answered, how long it waited and who it was ("probe" for the
 * integration's own probe, "a client" for a request polling saw).
 */
export function coldStarts(history, window) {
  return figures(history, window).map((f) => ({
    ...f,
    waitedBy: t(WAITED_BY[f.source] ?? "who_request"),
  }));
}

/** Return a figure in words: "7.5 s", "at least 7.5 s", "1 min 5 s". */
export function formatSeconds(seconds, exact = true) {
  const bounded = (figure) => (exact ? figure : t("at_least", { figure }));
  if (seconds < 10) return bounded(`${decimal(seconds, 1)} s`);
  if (seconds < 60) return bounded(`${Math.round(seconds)} s`);
  const minutes = Math.floor(seconds / 60);
  const rest = Math.round(seconds - minutes * 60);
  return bounded(`${minutes} min${rest ? ` ${rest} s` : ""}`);
}

/**
 * Return a load's figure in the words of a model's row, `{before, figure, after}`: "last
 * timed load 4.0 s" for an exact figure; "last load at least 3.0 s (polls saw part of
 * it)" for a lower bound. The row names an exact figure as timed, so that it does not
 * read as the length of a later cold start that polling saw part of.
 */
export function loadWords(load) {
  const figure = formatSeconds(load.seconds, load.exact);
  return load.exact
    ? { before: t("last_timed_load"), figure, after: "" }
    : { before: t("last_load"), figure, after: t("polls_saw_part") };
}

/**
 * Return a cold start in words, `{before, figure, after}`: "a client waited 7.8 s" when
 * timed; "polling saw a client wait at least 0.5 s" when polls saw only part of the wait
 * (from the first poll that saw the load to the request's end: a lower bound, which says
 * nothing of how long the load took).
 */
export function coldStartWords(cold) {
  const figure = formatSeconds(cold.seconds, cold.exact);
  return cold.exact
    ? { before: t("waited", { who: cold.waitedBy }), figure, after: "" }
    : { before: t("polling_saw_wait", { who: cold.waitedBy }), figure, after: "" };
}

/** Return how many changes a grouped segment hides, in words: "1 change too short to draw". */
export const hiddenChanges = (n) =>
  n === 1 ? t("hidden_change") : t("hidden_changes", { count: n });

/** Return a memory size in words: "11.3 GiB", "512 MiB". */
export function formatBytes(bytes) {
  if (bytes >= 1024 ** 3) return `${decimal(bytes / 1024 ** 3, 1)} GiB`;
  return `${Math.round(bytes / 1024 ** 2)} MiB`;
}

/**
 * Check a card's configuration; return it with defaults, or throw an Error that says what
 * is wrong (Home Assistant shows it on the card).
 */
export function checkConfig(config) {
  if (!config || typeof config !== "object") throw new Error("Invalid configuration");
  const hours = config.hours_to_show ?? 6;
  if (typeof hours !== "number" || !(hours > 0) || hours > 24 * 366) {
    throw new Error("hours_to_show must be a number of hours above 0 (at most a year)");
  }
  const householdIds = [
    ...(config.household?.servers ?? []),
    ...(config.household?.assistants ?? []),
  ];
  if (config.household !== undefined) {
    const h = config.household;
    if (!h || typeof h !== "object" || !Array.isArray(h.servers ?? []) || !Array.isArray(h.assistants ?? [])) {
      throw new Error("household: give servers (their Household sensors) and assistants (lists)");
    }
    if (householdIds.length === 0) {
      throw new Error("household: list the servers' Household sensors or the warm assistants");
    }
  }
  const models = config.models ?? [];
  if (!Array.isArray(models) || (models.length === 0 && !householdIds.length)) {
    throw new Error("models: list the models, each with its warmth sensor (warmth: sensor.…)");
  }
  const entity = (value, where) => {
    if (value === undefined) return;
    if (typeof value !== "string" || !/^[a-z_]+\.[a-z0-9_]+$/.test(value)) {
      throw new Error(`${where} must be an entity id, not ${JSON.stringify(value)}`);
    }
  };
  householdIds.forEach((id, i) => entity(id, `household[${i}]`));
  models.forEach((model, i) => {
    if (!model || typeof model !== "object" || !model.warmth) {
      throw new Error(`models[${i}]: warmth (the model's Warmth sensor) is required`);
    }
    for (const key of ["warmth", "load", "cold_request", "vram", "keep_warm", "signals"]) {
      entity(model[key], `models[${i}].${key}`);
    }
    for (const [key, value] of Object.entries(model.probe ?? {})) {
      entity(value, `models[${i}].probe.${key}`);
    }
  });
  (config.gpus ?? []).forEach((gpu, i) => {
    if (!gpu || typeof gpu !== "object" || !gpu.total) {
      throw new Error(`gpus[${i}]: total (the GPU's memory total sensor) is required`);
    }
    for (const key of ["total", "other", "headroom_low"]) entity(gpu[key], `gpus[${i}].${key}`);
  });
  return { ...config, hours_to_show: hours, models, gpus: config.gpus ?? [] };
}

/** Return every entity id a configuration names. */
export function configEntities(config) {
  const ids = [];
  for (const model of config.models) {
    ids.push(model.warmth, model.load, model.cold_request, model.vram, model.keep_warm, model.signals);
    ids.push(...Object.values(model.probe ?? {}));
  }
  for (const gpu of config.gpus ?? []) ids.push(gpu.total, gpu.other, gpu.headroom_low);
  ids.push(...(config.household?.servers ?? []), ...(config.household?.assistants ?? []));
  return ids.filter(Boolean);
}

/** Return a model's name for a configuration entry: `name`, else the warmth sensor's. */
export function modelName(model, states) {
  if (model.name) return model.name;
  const state = states?.[model.warmth];
  return state?.attributes?.friendly_name ?? model.warmth;
}

/**
 * Return where a model runs, for a model served through another server (a llama-swap
 * peer): "on lab, through this server" with the entry that shows it, else why its warmth
 * is unknown. Empty for a model of the server's own.
 */
export function modelHost(model, states) {
  const attributes = states?.[model.warmth]?.attributes ?? {};
  if (!attributes.peer) return "";
  const reading = attributes.peer_reading;
  let why = ["not_added", "ambiguous", "unreachable"].includes(reading) ? t(`peer_${reading}`) : "";
  if (reading === "read" && attributes.peer_server) why = t("peer_shown_by", { server: attributes.peer_server });
  return why ? t("on_peer_why", { peer: attributes.peer, why }) : t("on_peer", { peer: attributes.peer });
}

// A warm assistant's route reasons the card has words for ("route_<reason>").
const REASONS = new Set([
  "primary_warm", "primary_within_wait", "primary_not_followed", "fallback_primary_cold",
  "fallback_primary_down", "primary_no_ready_fallback", "nothing_reachable",
]);

/**
 * The household section: each server's Household sensor grouped by its host (reach, warm
 * models, every model's warmth and peer, its host's GPUs, the agents that use its models),
 * and each warm assistant's last route. Servers whose sensor is missing say so.
 */
export function household(config, states) {
  const hosts = new Map();
  for (const id of config.household?.servers ?? []) {
    const state = states?.[id];
    const a = state?.attributes ?? {};
    const host = a.host ?? t("unknown_host");
    const models = Object.entries(a.models ?? {}).map(([name, m]) => ({
      name,
      warmth: m?.warmth ?? "unknown",
      peer: m?.peer ?? null,
    }));
    const server = {
      id,
      // "Household Big box": the household device's name, then the server's.
      name: (a.friendly_name ?? id).replace(/^Household /, ""),
      up: state ? state.state === "up" : null,
      warm: a.warm_models ?? [],
      models,
      gpus: a.gpus ?? [],
      agents: Object.entries(a.agents ?? {}).map(([agent, model]) => ({ agent, model })),
    };
    if (!hosts.has(host)) hosts.set(host, []);
    hosts.get(host).push(server);
  }
  // An agent by its name where Home Assistant has its state, else by its entity id.
  const agentName = (id) => (id ? states?.[id]?.attributes?.friendly_name ?? id : null);
  const assistants = (config.household?.assistants ?? []).map((id) => {
    const a = states?.[id]?.attributes ?? {};
    return {
      id,
      name: a.friendly_name ?? id,
      exists: Boolean(states?.[id]),
      primary: agentName(a.primary_agent),
      fallbacks: (a.fallback_agents ?? []).map(agentName),
      agent: agentName(a.agent),
      reason: a.reason ? (REASONS.has(a.reason) ? t(`route_${a.reason}`) : a.reason) : null,
      server: a.agent_server ?? null,
      model: a.agent_model ?? null,
      at: a.routed_at ? Date.parse(a.routed_at) : null,
    };
  });
  return {
    hosts: [...hosts.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([host, servers]) => ({ host, servers })),
    assistants,
  };
}
