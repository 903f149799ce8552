// The LLM Warmth card's charts, computed from Home Assistant's history: the GPU's memory
// stacked over time, the time axis, the last probe's waterfall and its cold probe.
// Pure data, as llm-warmth-card-data.js (whose readers it uses); tested with `node --test`
// (tests/frontend/). Times are milliseconds since the epoch, memory bytes.

import { durationMs, numeric, toBytes, toEntries, unitOf } from "./llm-warmth-card-data.js";
import { t } from "./llm-warmth-card-words.js";

/** Return a series' values as steps `{t, value}` (value null where unavailable). */
export function steps(history, convert) {
  return toEntries(history).map((e) => ({ t: e.changed, value: convert(e) }));
}

/**
 * Return a step series sampled on intervals: for each [edges[i], edges[i+1]) the highest
 * value it held (so that a model resident for minutes still shows on a month's chart),
 * null where it held none.
 */
export function sample(series, edges) {
  const values = [];
  let k = 0;
  let current = null;
  for (let i = 0; i + 1 < edges.length; i++) {
    while (k < series.length && series[k].t <= edges[i]) current = series[k++].value;
    let high = current;
    while (k < series.length && series[k].t < edges[i + 1]) {
      current = series[k++].value;
      if (current !== null && (high === null || current > high)) high = current;
    }
    values.push(high);
  }
  return values;
}

/**
 * Return step series sampled on intervals at one moment each: for each [edges[i],
 * edges[i+1]) the values all of them held at the moment their sum was highest in it
 * (ties: the earliest), null where a series held none. Stacked, they show what was held
 * at once: the highest value of each (`sample`) would stack a model that left with the
 * one that took its place.
 */
export function peakSample(seriesList, edges) {
  const out = seriesList.map(() => []);
  const next = seriesList.map(() => 0);
  const current = seriesList.map(() => null);
  const advance = (t) => {
    seriesList.forEach((series, s) => {
      while (next[s] < series.length && series[next[s]].t <= t) current[s] = series[next[s]++].value;
    });
  };
  for (let i = 0; i + 1 < edges.length; i++) {
    advance(edges[i]);
    let best = [...current];
    let high = best.reduce((a, v) => a + (v ?? 0), 0);
    for (;;) {
      // The next change inside the interval, of any series.
      let t = Infinity;
      seriesList.forEach((series, s) => {
        if (next[s] < series.length) t = Math.min(t, series[next[s]].t);
      });
      if (!(t < edges[i + 1])) break;
      advance(t);
      const total = current.reduce((a, v) => a + (v ?? 0), 0);
      if (total > high) {
        high = total;
        best = [...current];
      }
    }
    best.forEach((v, s) => out[s].push(v));
  }
  return out;
}

/**
 * Return the GPU memory over [start, end], stacked: each model's memory from the bottom,
 * then the other processes; the total and the household reserve (a band below the total)
 * beside them.
 *
 * Input: `models` `[{name, history, unit}]`, `gpus` `[{total, other, unit}]` (histories;
 * several GPUs are added up), `reserveBytes`. At most `buckets` intervals: a long span is
 * sampled on equal intervals, each showing the layers as they were at the moment the
 * stack was highest in it (two models that pushed each other out within one interval are
 * never drawn on top of each other: the stack never tops what the GPU held at once), and
 * the highest total. Returns `{edges, layers: [{name, kind, values, lower, upper}],
 * total, reserve, max}`, each array one value per interval; `total` null where no GPU
 * reported one. `max` is the highest total, or the highest stack where that is higher
 * (no total reported, or a total lower than what the layers add up to).
 */
export function memory({ models = [], gpus = [], reserveBytes = 0, start, end, buckets = 240 }) {
  const bytesOf = (fallback) => (e) => toBytes(numeric(e.state), unitOf(e, fallback));
  const modelSteps = models.map((m) => steps(m.history, bytesOf(m.unit)));
  const otherSteps = gpus.map((g) => steps(g.other, bytesOf(g.otherUnit ?? g.unit)));
  const totalSteps = gpus.map((g) => steps(g.total, bytesOf(g.unit)));
  const changes = new Set([start, end]);
  for (const series of [...modelSteps, ...otherSteps, ...totalSteps]) {
    for (const step of series) if (step.t > start && step.t < end) changes.add(step.t);
  }
  let edges = [...changes].sort((a, b) => a - b);
  if (edges.length - 1 > buckets) {
    const width = (end - start) / buckets;
    edges = Array.from({ length: buckets + 1 }, (_, i) => start + i * width);
  }
  const sum = (seriesList, keepNull) =>
    edges.slice(1).map((_, i) => {
      const values = seriesList.map((s) => s[i]);
      if (keepNull && values.some((v) => v === null)) return null;
      return values.reduce((a, v) => a + (v ?? 0), 0);
    });
  // Each layer's series (the other processes: one per GPU, added up), at the stack's peak.
  const stacked = peakSample([...modelSteps, ...otherSteps], edges);
  const layers = [
    ...models.map((m, i) => ({ name: m.name, kind: "model", values: stacked[i] })),
  ];
  if (gpus.length) {
    layers.push({
      name: t("other_processes"),
      kind: "other",
      values: sum(stacked.slice(models.length), false),
    });
  }
  const base = edges.slice(1).map(() => 0);
  for (const layer of layers) {
    layer.values = layer.values.map((v) => v ?? 0);
    layer.lower = [...base];
    layer.upper = layer.values.map((v, i) => (base[i] += v));
  }
  const total = gpus.length
    ? sum(
        totalSteps.map((s) => sample(s, edges)),
        true,
      )
    : edges.slice(1).map(() => null);
  // A bucket's peaks come at different moments: stacked, they can pass the GPU's memory
  // (a model's 6 GiB and the other processes' 3.3 GiB on an 8 GiB GPU). What a GPU holds
  // never does: where its total is known the stack stops at it, and so does the scale.
  total.forEach((cap, i) => {
    if (cap === null) return;
    for (const layer of layers) {
      layer.lower[i] = Math.min(layer.lower[i], cap);
      layer.upper[i] = Math.min(layer.upper[i], cap);
    }
    base[i] = Math.min(base[i], cap);
  });
  const max = Math.max(0, ...base, ...total.filter((v) => v !== null));
  return { edges, layers, total, reserve: reserveBytes, max };
}

/**
 * The least span the charts draw on a new installation: its first minutes fill the chart
 * (a demo's morning of a minute or two is not squeezed into a tenth of it), while a first
 * minute's few rows are not stretched across the whole width.
 */
export const MIN_CHART_SPAN_MS = 2 * 60_000;

/**
 * Return where the charts begin: `start`, or later when the history begins later (a new
 * installation: its first minutes fill the chart instead of its last pixel), but never
 * less than `minSpanMs` before `end`. A history that begins within the span's first
 * twentieth keeps the span.
 */
export function chartStart(histories, { start, end, minSpanMs }) {
  let first = Infinity;
  for (const history of histories) {
    for (const entry of toEntries(history)) first = Math.min(first, entry.changed);
  }
  // A history that begins in the first twentieth of the span fills it already.
  if (!Number.isFinite(first) || first - start <= (end - start) / 20) return start;
  return Math.max(start, Math.min(first, end - minSpanMs));
}

// The stages of a time to first token, in the order they happen.
const STAGES = ["queue", "load", "prefill", "first_decode", "overhead"];

/**
 * Return the most recent probe's time to first token as a waterfall, or null.
 *
 * Input: `[{model, ttft, load, queue, prefill, first_decode, overhead}]`, each figure a
 * state object (`{state, attributes, last_updated}`) or undefined; `load` is the
 * queue-and-load stage (the queue inside it where the server tells it). The probe is the
 * model whose figures were written last. Returns `{model, ttftMs, updated, stages:
 * [{key, label, startMs, ms}]}`; what the stages do not account for (stages the server
 * does not report, or sensors that are disabled) is a stage "not reported".
 */
export function waterfall(probes) {
  const read = (state) => {
    if (!state) return null;
    const value = numeric(state.state);
    return durationMs(value, state.attributes?.unit_of_measurement ?? "ms");
  };
  const written = (probe) =>
    Math.max(
      ...Object.values(probe)
        .filter((s) => s && typeof s === "object" && s.last_updated)
        .map((s) => Date.parse(s.last_updated)),
    );
  const candidates = probes
    .filter((p) => read(p.ttft) !== null)
    .map((p) => ({ probe: p, updated: written(p) }))
    .sort((a, b) => b.updated - a.updated);
  if (!candidates.length) return null;
  const { probe, updated } = candidates[0];
  const ttftMs = read(probe.ttft);
  const figures = {
    queue: read(probe.queue),
    load: read(probe.load),
    prefill: read(probe.prefill),
    first_decode: read(probe.first_decode),
    overhead: read(probe.overhead),
  };
  if (figures.load !== null && figures.queue !== null) {
    figures.load = Math.max(0, figures.load - figures.queue);
  }
  const stages = [];
  let at = 0;
  for (const key of STAGES) {
    const ms = figures[key];
    if (ms === null) continue;
    const shown = t(key === "load" && figures.queue === null ? "stage_queue_and_load" : `stage_${key}`);
    stages.push({ key, label: shown, startMs: at, ms });
    at += ms;
  }
  // Rounding leaves tenths of a millisecond: only a real remainder is a stage, and only
  // one the chart can say (under 50 ms it would read "0.0 s").
  if (ttftMs - at >= UNREPORTED_MIN_MS && ttftMs - at > ttftMs * 0.005) {
    stages.push({ key: "unreported", label: t("stage_unreported"), startMs: at, ms: ttftMs - at });
  }
  return { model: probe.model, ttftMs, updated, stages };
}

/** The shortest remainder a waterfall names "not reported" (it reads 0.1 s). */
export const UNREPORTED_MIN_MS = 50;

/** Return a history's newest entry written at or before `t` (null: none by then). */
export function asOf(history, t) {
  let found = null;
  for (const entry of toEntries(history)) {
    if (entry.t > t) break;
    found = entry;
  }
  return found;
}

// A probe writes all its sensors in one update: within this much of each other.
const SAME_PROBE_MS = 1000;

/**
 * Return the last cold probe's time to first token as a waterfall (as `waterfall`), or
 * null: so that a cold start's load stays in sight once warm probes came after it.
 *
 * Input: `[{model, cold, rows: {ttft, load, queue, prefill, first_decode, overhead},
 * units: {...}}]`: `cold` the model's "last cold time to first token" state (written when
 * a probe was cold), `rows` the stage sensors' histories, `units` their units. The stages
 * are what the sensors held when the cold figure was written; null when the history does
 * not reach back to it or does not agree with it (its time to first token is another).
 */
export function coldProbe(probes) {
  const candidates = probes
    .filter((p) => p.cold && numeric(p.cold.state) !== null && p.cold.last_updated)
    .map((p) => ({ probe: p, at: Date.parse(p.cold.last_updated) }))
    .filter((c) => Number.isFinite(c.at))
    .sort((a, b) => b.at - a.at);
  if (!candidates.length) return null;
  const { probe, at } = candidates[0];
  const stateAt = (key) => {
    const entry = asOf(probe.rows?.[key], at + SAME_PROBE_MS);
    if (!entry) return undefined;
    return {
      state: entry.state,
      attributes: { unit_of_measurement: probe.units?.[key] ?? "ms" },
      last_updated: new Date(at).toISOString(),
    };
  };
  const ttft = stateAt("ttft");
  const coldMs = durationMs(numeric(probe.cold.state), probe.cold.attributes?.unit_of_measurement ?? "ms");
  const ttftMs = ttft ? durationMs(numeric(ttft.state), ttft.attributes.unit_of_measurement) : null;
  if (ttftMs === null || Math.abs(ttftMs - coldMs) > Math.max(1, coldMs * 0.01)) return null;
  return waterfall([
    {
      model: probe.model,
      ttft,
      load: stateAt("load"),
      queue: stateAt("queue"),
      prefill: stateAt("prefill"),
      first_decode: stateAt("first_decode"),
      overhead: stateAt("overhead"),
    },
  ]);
}

// Tick steps of a time axis, shortest first.
const TICK_STEPS = [
  60_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000,
  43_200_000, 86_400_000, 172_800_000, 604_800_000,
];

/**
 * Return the ticks of a time axis over [start, end]: at most `count` steps apart, on round times of
 * the local clock (`offsetMs`: the time zone's offset from UTC), `{step, ticks}`.
 */
export function timeTicks(start, end, count, offsetMs = 0) {
  const span = end - start;
  const step =
    TICK_STEPS.find((s) => span / s <= Math.max(1, count)) ?? TICK_STEPS[TICK_STEPS.length - 1];
  const ticks = [];
  const first = Math.ceil((start + offsetMs) / step) * step - offsetMs;
  for (let t = first; t <= end; t += step) ticks.push(t);
  return { step, ticks };
}
