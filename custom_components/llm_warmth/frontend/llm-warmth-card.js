// The LLM Warmth card: per model, a timeline of its warmth with each load as a bar of its
// measured length and each cold start marked with who waited how long; the GPU's memory
// over the same time, stacked; the last probe's time to first token as a waterfall.
// Plain web component, no build step, no dependency; the integration serves it and adds
// it to the frontend. What it draws is computed in llm-warmth-card-data.js (tested alone).

import {
  MIN_CHART_SPAN_MS,
  WARMTH_STATES,
  chartStart,
  checkConfig,
  coldProbe,
  coldStartWords,
  coldStarts,
  configEntities,
  formatBytes,
  formatSeconds,
  loadBars,
  loadWords,
  memory,
  household,
  modelHost,
  modelName,
  pinSpans,
  timeTicks,
  timeline,
  waterfall,
} from "./llm-warmth-card-data.js";
import { SIGNALS_STYLE, signalsSection } from "./llm-warmth-card-signals.js";

const CARD = "llm-warmth-card";

// Each colour can be set by a theme (--llm-warmth-<state>-color), else follows HA's.
const STATE_COLORS = {
  cold: "var(--llm-warmth-cold-color, var(--blue-color, #2196f3))",
  loading: "var(--llm-warmth-loading-color, var(--amber-color, #ffc107))",
  warm: "var(--llm-warmth-warm-color, var(--orange-color, #ff9800))",
  kept_warm: "var(--llm-warmth-kept-warm-color, var(--deep-orange-color, #ff5722))",
  unloading: "var(--llm-warmth-unloading-color, var(--blue-grey-color, #607d8b))",
  unavailable: "var(--disabled-color, #bdbdbd)",
  unknown: "var(--divider-color, rgba(0, 0, 0, 0.12))",
};
const STATE_LABELS = {
  cold: "cold",
  loading: "loading",
  warm: "warm",
  kept_warm: "warm, no expiry",
  unloading: "unloading",
  unavailable: "unavailable",
  unknown: "unknown",
};
const MODEL_COLORS = ["#4e79a7", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759"];
const modelColor = (i) =>
  `var(--llm-warmth-model-${i + 1}-color, ${MODEL_COLORS[i % MODEL_COLORS.length]})`;
const STAGE_COLORS = {
  queue: "var(--llm-warmth-queue-color, var(--grey-color, #9e9e9e))",
  load: "var(--llm-warmth-load-color, var(--amber-color, #ffc107))",
  prefill: "var(--llm-warmth-prefill-color, var(--blue-color, #2196f3))",
  first_decode: "var(--llm-warmth-decode-color, var(--green-color, #4caf50))",
  overhead: "var(--llm-warmth-overhead-color, var(--purple-color, #9c27b0))",
  unreported: "var(--divider-color, rgba(0, 0, 0, 0.12))",
};

const escape = (text) =>
  String(text).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );
const px = (n) => Math.round(n * 10) / 10;

class LlmWarmthCard extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._history = {};
    this._historyError = null;
    this._width = 0;
    this._watched = new Map();
    // States seen since the last fetch, by entity: the newest rows until the recorder's
    // come with the next periodic fetch (a state change draws; it does not fetch).
    this._live = new Map();
    this._fetches = 0;
  }

  /** Check the configuration: Home Assistant shows a thrown error on an error card. */
  setConfig(config) {
    this._config = checkConfig(config);
    this._history = {};
    this._live = new Map();
    this._loaded = false;
    this._scheduleFetch(0);
    this._render();
  }

  set hass(hass) {
    this._hass = hass;
    let changed = !this._loaded;
    for (const id of this._config ? configEntities(this._config) : []) {
      const state = hass.states[id];
      if (this._watched.get(id) !== state) {
        changed = true;
        this._watched.set(id, state);
        if (state) this._live.set(id, [...(this._live.get(id) ?? []), state]);
      }
    }
    if (!changed) return;
    if (!this._loaded) this._scheduleFetch(0);
    this._render();
  }

  get hass() {
    return this._hass;
  }

  getCardSize() {
    const models = this._config?.models.length ?? 1;
    return 3 + Math.ceil(models * 1.5) + (this._config?.gpus.length ? 4 : 0);
  }

  getGridOptions() {
    return { columns: 12, min_columns: 6 };
  }

  static getStubConfig(hass) {
    const warmth = Object.keys(hass.states).filter(
      (id) =>
        id.startsWith("sensor.") &&
        hass.states[id].attributes.options?.includes("kept_warm") &&
        "server_state" in hass.states[id].attributes,
    );
    return { models: warmth.slice(0, 3).map((id) => ({ warmth: id })) };
  }

  connectedCallback() {
    this._resize = new ResizeObserver(([entry]) => {
      const width = Math.floor(entry.contentRect.width);
      if (Math.abs(width - this._width) >= 1) {
        this._width = width;
        this._render();
      }
    });
    this._resize.observe(this);
    // The span moves on: fetch again now and then, more rarely on a long span.
    const every = Math.max(60_000, (this._config?.hours_to_show ?? 6) * 3_600_000 / 500);
    this._timer = setInterval(() => this._scheduleFetch(0), every);
    this._scheduleFetch(0);
  }

  disconnectedCallback() {
    this._resize?.disconnect();
    clearInterval(this._timer);
    clearTimeout(this._fetchTimer);
  }

  _scheduleFetch(delay) {
    clearTimeout(this._fetchTimer);
    this._fetchTimer = setTimeout(() => this._fetch(), delay);
  }

  _window() {
    const end = Date.now();
    return { start: end - this._config.hours_to_show * 3_600_000, end };
  }

  /** The span drawn: the configured one, or from the first recorded row when later. */
  _chartRange() {
    const range = this._window();
    if (!this._loaded || this._historyError) return { ...range, since: false };
    const minSpanMs = Math.min(MIN_CHART_SPAN_MS, range.end - range.start);
    const start = chartStart(Object.values(this._history), { ...range, minSpanMs });
    return { start, end: range.end, since: start > range.start };
  }

  async _fetch() {
    if (!this._hass || !this._config || !this.isConnected) return;
    const { start, end } = this._window();
    const ids = (list) => [...new Set(list.filter(Boolean))];
    const models = this._config.models;
    const events = ids(models.flatMap((m) => [m.warmth, m.load, m.cold_request, m.keep_warm]));
    // Sizes, and the probes' stages (the last cold probe's are read from their history).
    const sizes = ids([
      ...models.map((m) => m.vram),
      ...this._config.gpus.flatMap((g) => [g.total, g.other]),
      ...models.flatMap((m) => (m.probe?.cold_ttft ? Object.values(m.probe) : [])),
    ]);
    const ask = (entityIds, lean) =>
      entityIds.length
        ? this._hass.callWS({
            type: "history/history_during_period",
            start_time: new Date(start).toISOString(),
            end_time: new Date(end).toISOString(),
            entity_ids: entityIds,
            // The load figures' attributes say who measured them; sizes need none.
            minimal_response: lean,
            no_attributes: lean,
            significant_changes_only: false,
          })
        : Promise.resolve({});
    const fetch = ++this._fetches;
    try {
      const [withAttributes, lean] = await Promise.all([ask(events, false), ask(sizes, true)]);
      if (fetch !== this._fetches) return; // a newer fetch answers for the span
      this._history = { ...withAttributes, ...lean };
      this._historyError = null;
      // What the recorder now holds needs no live row of its own.
      for (const [id, states] of this._live) {
        this._live.set(id, states.filter((state) => Date.parse(state.last_updated) > end));
      }
    } catch (err) {
      if (fetch !== this._fetches) return;
      this._historyError = err?.message ?? String(err);
    }
    this._loaded = true;
    this._render();
  }

  /** A history with the current state as its newest row. */
  _rows(entityId) {
    if (!entityId) return [];
    const rows = [...(this._history[entityId] ?? []), ...(this._live.get(entityId) ?? [])];
    const current = this._hass?.states[entityId];
    return current && rows.at(-1) !== current ? [...rows, current] : rows;
  }

  _unit(entityId, fallback) {
    return this._hass?.states[entityId]?.attributes.unit_of_measurement ?? fallback;
  }

  _render() {
    if (!this._config) return;
    const width = this._width || this.clientWidth || 360;
    const inner = Math.max(200, width - 32);
    const title = this._config.title;
    const parts = [];
    if (!this._hass) {
      parts.push(`<p class="note">Waiting for Home Assistant…</p>`);
    } else {
      if (this._config.household) parts.push(this._household());
      if (this._config.models.length) {
        const range = this._chartRange();
        parts.push(this._timelines(range, inner));
        parts.push(this._memory(range, inner));
        parts.push(this._waterfall(inner));
        parts.push(signalsSection(this._config.models, this._hass.states, escape));
      }
    }
    this.shadowRoot.innerHTML = `
      <style>${STYLE}${SIGNALS_STYLE}</style>
      <ha-card>
        ${title ? `<h1 class="card-header">${escape(title)}</h1>` : ""}
        <div class="content">${parts.join("")}</div>
      </ha-card>`;
  }

  _household() {
    const view = household(this._config, this._hass.states);
    const warmth = (w) => STATE_LABELS[w] ?? w;
    const hosts = view.hosts.map(({ host, servers }) => {
      const rows = servers.map((s) => {
        const reach = s.up === null ? "no such entity" : s.up ? "up" : "down";
        const models = s.models
          .map((m) => `<span class="state-${escape(m.warmth)}">${escape(m.name)}${m.peer ? ` (on peer ${escape(m.peer)})` : ""}: ${escape(warmth(m.warmth))}</span>`)
          .join(", ");
        const gpus = s.gpus
          .map((g) => `${escape(g.name)}: ${g.headroom_gib ?? "?"} GiB headroom of ${g.total_gib ?? "?"} GiB`)
          .join("; ");
        const agents = s.agents.map((a) => `${escape(a.agent)} → ${escape(a.model)}`).join(", ");
        return `<div class="household-server"><span class="name">${escape(s.name)}</span> <span class="reach reach-${reach.replace(/ /g, "-")}">${escape(reach)}</span>
          <div class="facts">${models || "no models"}${gpus ? ` · ${gpus}` : ""}${agents ? ` · agents: ${agents}` : ""}</div></div>`;
      });
      return `<div class="household-host"><h2>Host ${escape(host)}</h2>${rows.join("")}</div>`;
    });
    const time = new Intl.DateTimeFormat(this._hass.locale?.language ?? undefined, {
      hour: "2-digit",
      minute: "2-digit",
    });
    const assistants = view.assistants.map((a) => {
      if (!a.exists) return `<div class="household-assistant">${escape(a.id)}: no such entity</div>`;
      const last = a.agent
        ? `last turn ${a.at ? escape(time.format(a.at)) : ""}: answered by <b>${escape(a.agent)}</b>${a.model ? ` (${escape(a.model)} on ${escape(a.server ?? "?")})` : ""}, ${escape(a.reason ?? "")}`
        : "no turn yet";
      return `<div class="household-assistant"><span class="name">${escape(a.name)}</span>: primary ${escape(a.primary ?? "?")}, then ${escape(a.fallbacks.join(", ") || "none")}<div class="facts">${last}</div></div>`;
    });
    const heading = assistants.length ? `<h2>Warm assistants</h2>` : "";
    return `<div class="household">${hosts.join("")}${heading}${assistants.join("")}</div>`;
  }

  _axis(range, inner, offsetMs) {
    const { step, ticks } = timeTicks(range.start, range.end, Math.max(2, Math.floor(inner / 70)), offsetMs);
    const x = (t) => ((t - range.start) / (range.end - range.start)) * inner;
    const format = new Intl.DateTimeFormat(
      this._hass.locale?.language ?? undefined,
      step >= 86_400_000 ? { month: "short", day: "numeric" } : { hour: "2-digit", minute: "2-digit" },
    );
    return `<svg class="axis" width="${inner}" height="16" role="presentation">${ticks
      .map((t) => {
        const anchor = x(t) < 20 ? "start" : x(t) > inner - 20 ? "end" : "middle";
        return `<text x="${px(x(t))}" y="12" text-anchor="${anchor}">${escape(format.format(t))}</text>`;
      })
      .join("")}</svg>`;
  }

  _timelines(range, inner) {
    const span = range.end - range.start;
    const x = (t) => ((t - range.start) / span) * inner;
    // Two pixels or less is no state one can see: grouped (and counted) in the data.
    const minMs = (span / inner) * 2;
    const time = new Intl.DateTimeFormat(this._hass.locale?.language ?? undefined, {
      month: span > 86_400_000 ? "short" : undefined,
      day: span > 86_400_000 ? "numeric" : undefined,
      hour: "2-digit",
      minute: "2-digit",
    });
    const rows = this._config.models.map((model) => {
      const name = modelName(model, this._hass.states);
      const host = modelHost(model, this._hass.states);
      const segments = timeline(this._rows(model.warmth), { ...range, minMs });
      const loads = loadBars(this._rows(model.load), { ...range, unit: this._unit(model.load, "s") });
      const colds = coldStarts(this._rows(model.cold_request), {
        ...range,
        unit: this._unit(model.cold_request, "s"),
      });
      const pins = pinSpans(this._rows(model.keep_warm), range);
      const now = this._hass.states[model.warmth];
      const nowText = now ? STATE_LABELS[now.state] ?? now.state : "no such entity";
      const svg = [];
      if (!segments.length) {
        svg.push(`<text class="empty" x="4" y="17">no history in this span</text>`);
      }
      // Pinned (its Keep warm switch on, by the switch, an action or an automation): a band
      // over the warmth, whatever the server's keep says (a pin with an end reads "warm").
      for (const pin of pins) {
        const left = px(x(pin.start));
        const w = px(Math.max(2, x(pin.end) - x(pin.start)));
        const until = pin.until ? `, until ${time.format(pin.until)}` : ", until unpinned";
        const label = `pinned ${time.format(pin.start)} – ${time.format(pin.end)}${until}`;
        svg.push(
          `<rect class="pin" x="${left}" y="0" width="${w}" height="3"><title>${escape(label)}</title></rect>`,
        );
      }
      for (const s of segments) {
        const known = STATE_COLORS[s.state] ? s.state : "unknown";
        const also = s.also ? ` (also ${STATE_LABELS[s.also] ?? s.also})` : "";
        const hidden = s.merged ? `${also}, ${s.merged} changes too short to draw` : "";
        const left = px(x(s.start));
        const w = px(Math.max(1, x(s.end) - x(s.start)));
        svg.push(
          `<rect class="segment state-${escape(known)}" x="${left}" y="4" width="${w}" height="18" fill="${STATE_COLORS[known]}"><title>${escape(STATE_LABELS[s.state] ?? s.state)}${escape(hidden)}: ${escape(time.format(s.start))} – ${escape(time.format(s.end))}</title></rect>`,
        );
        // A group of short states: a band in the colour of the one it spent next most in.
        if (s.also) {
          const band = STATE_COLORS[s.also] ?? STATE_COLORS.unknown;
          svg.push(
            `<rect class="also" x="${left}" y="16" width="${w}" height="6" fill="${band}"></rect>`,
          );
        }
      }
      for (const load of loads) {
        const left = x(load.start);
        const w = Math.max(2, x(load.end) - left);
        const label = `load ${formatSeconds(load.seconds, load.exact)}, ended ${time.format(load.end)}`;
        // A lower bound: an open bar with an arrow to the left (it began earlier).
        svg.push(
          load.exact
            ? `<rect class="load exact" x="${px(left)}" y="26" width="${px(w)}" height="8" rx="1"><title>${escape(label)}</title></rect>`
            : `<g class="load lower-bound"><rect x="${px(left)}" y="26.5" width="${px(w)}" height="7" rx="1"></rect><path d="M${px(left - 4)} 30 l4 -3.5 v7 z"></path><title>${escape(label)} (polling saw it from its first sighting on)</title></g>`,
        );
      }
      const words = (w, bold) =>
        [escape(w.before), bold ? `<b>${escape(w.figure)}</b>` : escape(w.figure), escape(w.after)]
          .filter(Boolean)
          .join(" ");
      for (const cold of colds) {
        const cx = x(cold.t);
        const label = `cold start ${escape(time.format(cold.t))}: ${words(coldStartWords(cold), false)}`;
        svg.push(
          `<g class="cold-start"><path d="M${px(cx - 5)} 38 h10 l-5 -7 z"></path><title>${label}</title></g>`,
        );
      }
      const lastCold = colds.at(-1);
      const lastLoad = loads.at(-1);
      const facts = [
        lastLoad &&
          `${words(loadWords(lastLoad), true)} (${escape(time.format(lastLoad.end))})`,
        lastCold &&
          `<span class="cold-text">cold start ${escape(time.format(lastCold.t))}: ${words(coldStartWords(lastCold), true)}</span>`,
        colds.length > 1 && `${colds.length} cold starts in this span`,
      ].filter(Boolean);
      return `
        <div class="model-row">
          <div class="model-head"><span class="name">${escape(name)}${host ? `<span class="host"> · ${escape(host)}</span>` : ""}</span><span class="now state-${escape(now?.state ?? "none")}">${escape(nowText)}</span></div>
          <svg class="lane" width="${inner}" height="40" role="img" aria-label="${escape(name)} warmth">${svg.join("")}</svg>
          ${facts.length ? `<div class="facts">${facts.join(" · ")}</div>` : ""}
        </div>`;
    });
    const offset = -new Date().getTimezoneOffset() * 60_000;
    const legend = [...WARMTH_STATES, "unavailable"]
      .map((s) => `<span><i style="background:${STATE_COLORS[s]}"></i>${STATE_LABELS[s]}</span>`)
      .concat([
        `<span><i class="load-key"></i>load (its length)</span>`,
        `<span><i class="load-key lower-bound"></i>load, at least</span>`,
        `<span><i class="cold-key"></i>cold start</span>`,
        ...(this._config.models.some((m) => m.keep_warm) ? [`<span><i class="pin-key"></i>pinned</span>`] : []),
      ])
      .join("");
    const note = this._historyError
      ? `<p class="note warning">History could not be read (${escape(this._historyError)}): the current states only.</p>`
      : "";
    return `
      <section class="timelines">
        <h2>Warmth, ${range.since ? `since ${escape(time.format(range.start))}` : `last ${escape(spanText(this._config.hours_to_show))}`}</h2>
        ${note}${rows.join("")}
        ${this._axis(range, inner, offset)}
        <div class="legend">${legend}</div>
      </section>`;
  }

  _memory(range, inner) {
    const gpus = this._config.gpus;
    const models = this._config.models.filter((m) => m.vram);
    if (!gpus.length && !models.length) return "";
    const reserve = gpus.reduce(
      (sum, g) => sum + (Number(this._hass.states[g.headroom_low]?.attributes.reserve_bytes) || 0),
      0,
    );
    const data = memory({
      ...range,
      models: this._config.models
        .filter((m) => m.vram)
        .map((m) => ({
          name: modelName(m, this._hass.states),
          history: this._rows(m.vram),
          unit: this._unit(m.vram, "GiB"),
        })),
      gpus: gpus.map((g) => ({
        total: this._rows(g.total),
        other: this._rows(g.other),
        unit: this._unit(g.total, "GiB"),
        otherUnit: this._unit(g.other, "GiB"),
      })),
      reserveBytes: reserve,
      buckets: Math.max(20, Math.floor(inner / 2)),
    });
    const title = `<h2>GPU memory${gpus.length > 1 ? ` (${gpus.length} GPUs)` : ""}</h2>`;
    if (data.max <= 0) {
      return `<section class="memory">${title}<p class="note">No memory figures in this span yet.</p></section>`;
    }
    const height = 120;
    const top = data.max * 1.1;
    const x = (t) => ((t - range.start) / (range.end - range.start)) * inner;
    const y = (v) => height - (v / top) * height;
    const area = (upper, lower) => {
      const e = data.edges;
      let d = "";
      upper.forEach((v, i) => {
        d += `${i ? "L" : "M"}${px(x(e[i]))} ${px(y(v))} L${px(x(e[i + 1]))} ${px(y(v))} `;
      });
      for (let i = lower.length - 1; i >= 0; i--) {
        d += `L${px(x(e[i + 1]))} ${px(y(lower[i]))} L${px(x(e[i]))} ${px(y(lower[i]))} `;
      }
      return `${d}Z`;
    };
    const svg = [];
    // The reserve: a band below the total that the household keeps for itself.
    if (reserve > 0) {
      const lower = data.total.map((t) => (t === null ? null : Math.max(0, t - reserve)));
      const ok = data.total.map((t) => t !== null);
      svg.push(
        `<path class="reserve" d="${area(
          data.total.map((t, i) => (ok[i] ? t : 0)),
          lower.map((l, i) => (ok[i] ? l : 0)),
        )}"><title>household reserve ${escape(formatBytes(reserve))}</title></path>`,
      );
    }
    data.layers.forEach((layer, i) => {
      const fill = layer.kind === "other" ? "var(--secondary-text-color)" : modelColor(i);
      const peak = Math.max(...layer.values);
      svg.push(
        `<path class="memory-layer ${layer.kind}" d="${area(layer.upper, layer.lower)}" fill="${fill}"><title>${escape(layer.name)}: up to ${escape(formatBytes(peak))}</title></path>`,
      );
    });
    let totalLine = "";
    data.total.forEach((t, i) => {
      if (t === null) return;
      const move = i === 0 || data.total[i - 1] === null ? "M" : "L";
      totalLine += `${move}${px(x(data.edges[i]))} ${px(y(t))} L${px(x(data.edges[i + 1]))} ${px(y(t))} `;
    });
    if (totalLine) svg.push(`<path class="total" d="${totalLine}"><title>total</title></path>`);
    // The scale: the highest figure, just below its level (the total's line, usually).
    svg.push(
      `<text class="scale" x="2" y="${px(y(data.max) + 12)}">${escape(formatBytes(data.max))}</text><text class="scale" x="2" y="${height - 3}">0</text>`,
    );
    const legend = data.layers
      .map((layer, i) => {
        const fill = layer.kind === "other" ? "var(--secondary-text-color)" : modelColor(i);
        return `<span><i style="background:${fill}"></i>${escape(layer.name)}</span>`;
      })
      .concat(
        reserve > 0 ? [`<span><i class="reserve-key"></i>reserve ${escape(formatBytes(reserve))}</span>`] : [],
        totalLine ? [`<span><i class="total-key"></i>total</span>`] : [],
      )
      .join("");
    const offset = -new Date().getTimezoneOffset() * 60_000;
    return `
      <section class="memory">
        ${title}
        <svg class="chart" width="${inner}" height="${height}" role="img" aria-label="GPU memory">
          <defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6"></line></pattern></defs>
          ${svg.join("")}
        </svg>
        ${this._axis(range, inner, offset)}
        <div class="legend">${legend}</div>
      </section>`;
  }

  _waterfall(inner) {
    const probes = this._config.models
      .filter((m) => m.probe?.ttft)
      .map((m) => {
        const state = (id) => (id ? this._hass.states[id] : undefined);
        const p = m.probe;
        return {
          model: modelName(m, this._hass.states),
          ttft: state(p.ttft),
          load: state(p.load),
          queue: state(p.queue),
          prefill: state(p.prefill),
          first_decode: state(p.first_decode),
          overhead: state(p.overhead),
        };
      });
    if (!this._config.models.some((m) => m.probe)) return "";
    const result = waterfall(probes);
    const title = `<h2>Last probe: time to first token</h2>`;
    if (!result) {
      return `<section class="waterfall">${title}<p class="note">No probe yet (llm_warmth.probe measures one).</p></section>`;
    }
    // The last cold probe too, once warm probes came after it: its load stays in sight.
    const cold = coldProbe(
      this._config.models
        .filter((m) => m.probe?.cold_ttft && m.probe?.ttft)
        .map((m) => {
          const keys = ["ttft", "load", "queue", "prefill", "first_decode", "overhead"];
          const p = m.probe;
          return {
            model: modelName(m, this._hass.states),
            cold: this._hass.states[p.cold_ttft],
            rows: Object.fromEntries(keys.map((k) => [k, this._rows(p[k])])),
            units: Object.fromEntries(keys.map((k) => [k, this._unit(p[k], "ms")])),
          };
        }),
    );
    const sections = [this._stages(result, title, inner)];
    if (cold && cold.updated < result.updated - 1000) {
      sections.push(this._stages(cold, `<h2>Last cold probe: time to first token</h2>`, inner));
    }
    return sections.join("");
  }

  _stages(result, title, inner) {
    const when = new Intl.DateTimeFormat(this._hass.locale?.language ?? undefined, {
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
    }).format(result.updated);
    const labelWidth = Math.min(110, Math.round(inner * 0.32));
    const bars = inner - labelWidth - 8;
    const scale = (ms) => (ms / result.ttftMs) * bars;
    const rows = result.stages.map((s, i) => {
      const left = labelWidth + 8 + scale(s.startMs);
      const w = Math.max(1.5, scale(s.ms));
      const value = formatSeconds(s.ms / 1000);
      const inside = w > 60;
      const textX = inside ? left + w - 4 : Math.min(left + w + 4, inner - 2);
      const anchor = inside || left + w + 50 > inner ? "end" : "start";
      const textY = i * 22 + 15;
      return `<g class="stage stage-${escape(s.key)}">
          <text class="stage-label" x="0" y="${textY}">${escape(s.label)}</text>
          <rect x="${px(left)}" y="${i * 22 + 3}" width="${px(w)}" height="16" rx="2" fill="${STAGE_COLORS[s.key]}"></rect>
          <text class="stage-value${inside ? " inside" : ""}" x="${px(anchor === "end" && !inside ? left - 4 : textX)}" y="${textY}" text-anchor="${anchor}">${escape(value)}</text>
          <title>${escape(s.label)}: ${escape(value)}</title>
        </g>`;
    });
    return `
      <section class="waterfall">
        ${title}
        <div class="facts"><span class="name">${escape(result.model)}</span>, ${escape(when)}: first token after <b>${escape(formatSeconds(result.ttftMs / 1000))}</b></div>
        <svg class="chart" width="${inner}" height="${result.stages.length * 22 + 4}" role="img" aria-label="time to first token by stage">${rows.join("")}</svg>
      </section>`;
  }
}

function spanText(hours) {
  if (hours % 24 === 0 && hours >= 48) return `${hours / 24} days`;
  if (hours === 1) return "hour";
  return `${hours} hours`;
}

const STYLE = `
  :host { display: block; }
  ha-card { overflow: hidden; }
  .card-header { margin: 0; padding: 16px 16px 0; font-size: 20px; font-weight: 400; color: var(--ha-card-header-color, var(--primary-text-color)); }
  .content { padding: 8px 16px 16px; }
  h2 { font-size: 14px; font-weight: 500; margin: 12px 0 6px; color: var(--secondary-text-color); }
  section:first-child h2 { margin-top: 4px; }
  .model-row { margin-bottom: 6px; }
  .model-head { display: flex; justify-content: space-between; gap: 8px; font-size: 14px; color: var(--primary-text-color); }
  .name { font-weight: 500; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .host { font-weight: 400; color: var(--secondary-text-color); }
  .now { color: var(--secondary-text-color); white-space: nowrap; }
  svg { display: block; overflow: visible; }
  .lane { margin-top: 2px; }
  .lane .empty, .scale, .axis text { fill: var(--secondary-text-color); font-size: 11px; }
  .load.exact, .load-key { fill: var(--primary-text-color); background: var(--primary-text-color); }
  .load.lower-bound rect { fill: none; stroke: var(--primary-text-color); stroke-dasharray: 2 1.5; }
  .load.lower-bound path { fill: var(--primary-text-color); }
  .cold-start path { fill: var(--error-color, #db4437); }
  .pin, .legend i.pin-key { fill: var(--llm-warmth-pin-color, var(--primary-color, #03a9f4)); background: var(--llm-warmth-pin-color, var(--primary-color, #03a9f4)); }
  .legend i.pin-key { height: 3px; }
  .cold-text b { color: var(--error-color, #db4437); }
  .facts { font-size: 12px; color: var(--secondary-text-color); margin-top: 2px; line-height: 1.4; }
  .facts b { color: var(--primary-text-color); font-weight: 500; }
  .household-server, .household-assistant { margin: 4px 0 8px; }
  .reach { font-size: 12px; padding: 0 6px; border-radius: 8px; }
  .reach-up { background: var(--success-color, #43a047); color: #fff; }
  .reach-down { background: var(--error-color, #db4437); color: #fff; }
  .legend { display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: 12px; color: var(--secondary-text-color); margin-top: 4px; }
  .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
  .legend i.load-key { height: 6px; }
  .legend i.load-key.lower-bound { background: none; border: 1px dashed var(--primary-text-color); box-sizing: border-box; }
  .legend i.cold-key { width: 0; height: 0; border-radius: 0; border: 5px solid transparent; border-bottom: 7px solid var(--error-color, #db4437); border-top: 0; }
  .legend i.reserve-key { background: repeating-linear-gradient(45deg, var(--error-color, #db4437) 0 1px, transparent 1px 4px); border: 1px solid var(--error-color, #db4437); box-sizing: border-box; }
  .legend i.total-key { height: 2px; background: var(--primary-text-color); }
  .memory-layer { opacity: 0.85; }
  .reserve { fill: url(#hatch); stroke: none; }
  pattern line { stroke: var(--error-color, #db4437); stroke-width: 1.5; opacity: 0.6; }
  .total { fill: none; stroke: var(--primary-text-color); stroke-width: 1.5; }
  .stage-label { fill: var(--primary-text-color); font-size: 12px; }
  .stage-value { fill: var(--secondary-text-color); font-size: 12px; }
  .stage-value.inside { fill: var(--text-primary-color, #fff); }
  .note { font-size: 13px; color: var(--secondary-text-color); margin: 4px 0; }
  .note.warning { color: var(--warning-color, #ffa600); }
`;

if (!customElements.get(CARD)) {
  customElements.define(CARD, LlmWarmthCard);
  window.customCards = window.customCards || [];
  window.customCards.push({
    type: CARD,
    name: "LLM Warmth",
    description:
      "Per model: warmth over time, each load as a bar of its length, each cold start; the GPU's memory stacked; the last probe's time to first token by stage.",
    documentationURL: "https://github.com/llm-warmth/llm_warmth#the-llm-warmth-card",
  });
}
