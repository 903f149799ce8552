// The LLM Warmth card: per model, a timeline of its warmth with each load as a bar of its
// measured length and each cold start marked with who waited how long; the GPU's memory
// over the same time, stacked; the last probe's time to first token as a waterfall.
// Plain web component, no build step, no dependency; the integration serves it and adds
// it to the frontend. What it draws is computed in llm-warmth-card-data.js (tested alone).

import {
  WARMTH_STATES,
  timeline,
  pinSpans,
  loadBars,
  coldStarts,
  formatSeconds,
  hiddenChanges,
  loadWords,
  coldStartWords,
  checkConfig,
  configEntities,
  modelName,
  modelHost,
  household,
} from "./llm-warmth-card-data.js";
import { MIN_CHART_SPAN_MS, chartStart, timeTicks } from "./llm-warmth-card-charts.js";
import { memoryPanel, waterfallPanel } from "./llm-warmth-card-panels.js";
import { escape, px, STATE_COLORS, stateLabel, STYLE } from "./llm-warmth-card-style.js";
import { setLanguage, t } from "./llm-warmth-card-words.js";
import { SIGNALS_STYLE, signalsSection } from "./llm-warmth-card-signals.js";

const CARD = "llm-warmth-card";

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
    // Home Assistant's language (the user's profile, else the server's): the card's words.
    setLanguage(this._hass?.locale?.language ?? this._hass?.language);
    if (!this._hass) {
      parts.push(`<p class="note">${escape(t("waiting"))}</p>`);
    } else {
      if (this._config.household) parts.push(this._household());
      if (this._config.models.length) {
        const range = this._chartRange();
        parts.push(this._timelines(range, inner));
        parts.push(memoryPanel(this, range, inner));
        parts.push(waterfallPanel(this, inner));
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
    const hosts = view.hosts.map(({ host, servers }) => {
      const rows = servers.map((s) => {
        const reach = s.up === null ? "none" : s.up ? "up" : "down";
        const reachText = reach === "none" ? t("no_such_entity") : t(`reach_${reach}`);
        const models = s.models
          .map((m) => `<span class="state-${escape(m.warmth)}">${escape(m.name)}${m.peer ? ` (${escape(t("on_peer", { peer: m.peer }))})` : ""}: ${escape(stateLabel(m.warmth))}</span>`)
          .join(", ");
        const gpus = s.gpus
          .map((g) => escape(t("gpu_headroom", { gpu: g.name, headroom: g.headroom_gib ?? "?", total: g.total_gib ?? "?" })))
          .join("; ");
        const agents = s.agents.map((a) => `${escape(a.agent)} → ${escape(a.model)}`).join(", ");
        return `<div class="household-server"><span class="name">${escape(s.name)}</span> <span class="reach reach-${reach}">${escape(reachText)}</span>
          <div class="facts">${models || escape(t("no_models"))}${gpus ? ` · ${gpus}` : ""}${agents ? ` · ${t("agents", { agents })}` : ""}</div></div>`;
      });
      return `<div class="household-host"><h2>${escape(t("host", { host }))}</h2>${rows.join("")}</div>`;
    });
    const time = new Intl.DateTimeFormat(this._hass.locale?.language ?? undefined, {
      hour: "2-digit",
      minute: "2-digit",
    });
    const assistants = view.assistants.map((a) => {
      if (!a.exists) return `<div class="household-assistant">${escape(a.id)}: ${escape(t("no_such_entity"))}</div>`;
      const model = a.model ? t("model_on_server", { model: escape(a.model), server: escape(a.server ?? "?") }) : "";
      const last = a.agent
        ? t("last_turn", {
            time: a.at ? escape(time.format(a.at)) : "",
            agent: `<b>${escape(a.agent)}</b>`,
            model,
            reason: escape(a.reason ?? ""),
          })
        : escape(t("no_turn_yet"));
      const route = t("assistant_line", {
        primary: escape(a.primary ?? "?"),
        fallbacks: escape(a.fallbacks.join(", ") || t("none")),
      });
      return `<div class="household-assistant"><span class="name">${escape(a.name)}</span>: ${route}<div class="facts">${last}</div></div>`;
    });
    const heading = assistants.length ? `<h2>${escape(t("warm_assistants"))}</h2>` : "";
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
      const nowText = now ? stateLabel(now.state) : t("no_such_entity");
      const svg = [];
      if (!segments.length) {
        svg.push(`<text class="empty" x="4" y="17">${escape(t("no_history"))}</text>`);
      }
      // Pinned (its Keep warm switch on, by the switch, an action or an automation): a band
      // over the warmth, whatever the server's keep says (a pin with an end reads "warm").
      for (const pin of pins) {
        const left = px(x(pin.start));
        const w = px(Math.max(2, x(pin.end) - x(pin.start)));
        const until = pin.until ? t("until_time", { time: time.format(pin.until) }) : t("until_unpinned");
        const label = t("pinned_span", { start: time.format(pin.start), end: time.format(pin.end), until });
        svg.push(
          `<rect class="pin" x="${left}" y="0" width="${w}" height="3"><title>${escape(label)}</title></rect>`,
        );
      }
      for (const s of segments) {
        const known = STATE_COLORS[s.state] ? s.state : "unknown";
        const also = s.also ? t("also", { state: stateLabel(s.also) }) : "";
        const hidden = s.merged ? `${also}, ${hiddenChanges(s.merged)}` : "";
        const left = px(x(s.start));
        const w = px(Math.max(1, x(s.end) - x(s.start)));
        svg.push(
          `<rect class="segment state-${escape(known)}" x="${left}" y="4" width="${w}" height="18" fill="${STATE_COLORS[known]}"><title>${escape(stateLabel(s.state))}${escape(hidden)}: ${escape(time.format(s.start))} – ${escape(time.format(s.end))}</title></rect>`,
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
        const label = t("load_label", { figure: formatSeconds(load.seconds, load.exact), time: time.format(load.end) });
        // A lower bound: an open bar with an arrow to the left (it began earlier).
        svg.push(
          load.exact
            ? `<rect class="load exact" x="${px(left)}" y="26" width="${px(w)}" height="8" rx="1"><title>${escape(label)}</title></rect>`
            : `<g class="load lower-bound"><rect x="${px(left)}" y="26.5" width="${px(w)}" height="7" rx="1"></rect><path d="M${px(left - 4)} 30 l4 -3.5 v7 z"></path><title>${escape(label + t("polled_from_first_sighting"))}</title></g>`,
        );
      }
      const words = (w, bold) =>
        [escape(w.before), bold ? `<b>${escape(w.figure)}</b>` : escape(w.figure), escape(w.after)]
          .filter(Boolean)
          .join(" ");
      for (const cold of colds) {
        const cx = x(cold.t);
        const label = t("cold_start_at", { time: escape(time.format(cold.t)), words: words(coldStartWords(cold), false) });
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
          `<span class="cold-text">${t("cold_start_at", { time: escape(time.format(lastCold.t)), words: words(coldStartWords(lastCold), true) })}</span>`,
        colds.length > 1 && escape(t("cold_starts_in_span", { count: colds.length })),
      ].filter(Boolean);
      return `
        <div class="model-row">
          <div class="model-head"><span class="name">${escape(name)}${host ? `<span class="host"> · ${escape(host)}</span>` : ""}</span><span class="now state-${escape(now?.state ?? "none")}">${escape(nowText)}</span></div>
          <svg class="lane" width="${inner}" height="40" role="img" aria-label="${escape(t("warmth_aria", { name }))}">${svg.join("")}</svg>
          ${facts.length ? `<div class="facts">${facts.join(" · ")}</div>` : ""}
        </div>`;
    });
    const offset = -new Date().getTimezoneOffset() * 60_000;
    const legend = [...WARMTH_STATES, "unavailable"]
      .map((s) => `<span><i style="background:${STATE_COLORS[s]}"></i>${escape(stateLabel(s))}</span>`)
      .concat([
        `<span><i class="load-key"></i>${escape(t("legend_load"))}</span>`,
        `<span><i class="load-key lower-bound"></i>${escape(t("legend_load_at_least"))}</span>`,
        `<span><i class="cold-key"></i>${escape(t("legend_cold_start"))}</span>`,
        ...(this._config.models.some((m) => m.keep_warm) ? [`<span><i class="pin-key"></i>${escape(t("legend_pinned"))}</span>`] : []),
      ])
      .join("");
    const note = this._historyError
      ? `<p class="note warning">${escape(t("history_error", { error: this._historyError }))}</p>`
      : "";
    return `
      <section class="timelines">
        <h2>${escape(range.since ? t("warmth_since", { time: time.format(range.start) }) : t("warmth_last", { span: spanText(this._config.hours_to_show) }))}</h2>
        ${note}${rows.join("")}
        ${this._axis(range, inner, offset)}
        <div class="legend">${legend}</div>
      </section>`;
  }

}

function spanText(hours) {
  if (hours % 24 === 0 && hours >= 48) return t("span_days", { count: hours / 24 });
  if (hours === 1) return t("span_hour");
  return t("span_hours", { count: hours });
}


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
