// The LLM Warmth card's "Warming signals" section: per model whose option `signals` names
// its Warming signals sensor, the household's signals it learnt (entity, what each leads,
// how often it led and was wrong) and how the model is warmed. `signalsView` is the data
// (tested alone, in Node); `signalsSection` the HTML the card shows.

import { EN, t } from "./llm-warmth-card-words.js";

// How a model is warmed (the Auto-warm switch's `warmed_by`) and why no signal warms it
// (the sensor's `reason`): the values the card has words for, with their English words.
const WARMED_BY_KEYS = ["clock", "idle", "clock_and_signals", "idle_and_signals", "signals"];
const NO_SIGNAL_KEYS = ["none_chosen", "learning", "time_only_cheaper"];
export const WARMED_BY = Object.fromEntries(WARMED_BY_KEYS.map((k) => [k, EN[`warmed_by_${k}`]]));
export const NO_SIGNAL = Object.fromEntries(NO_SIGNAL_KEYS.map((k) => [k, EN[`no_signal_${k}`]]));
const said = (keys, prefix, value) => (keys.includes(value) ? t(`${prefix}${value}`) : null);

/** Return each model's signals as the card shows them (models without the option left out). */
export function signalsView(models, states) {
  return models
    .filter((model) => model.signals)
    .map((model) => {
      const sensor = states[model.signals];
      const warmth = states[model.warmth];
      const name = warmth?.attributes.friendly_name ?? model.warmth;
      if (!sensor) return { name, missing: true, rows: [], acting: 0 };
      const rows = (Array.isArray(sensor.attributes.signals) ? sensor.attributes.signals : [])
        .filter((row) => row && typeof row.entity_id === "string")
        .map((row) => ({
          name: typeof row.name === "string" ? row.name : row.entity_id,
          edge: String(row.edge ?? ""),
          within: Number(row.within_minutes),
          share: Number(row.share_percent),
          led: Number(row.led),
          wrong: Number(row.wrong),
          acts: row.acts === true,
        }));
      const acting = Number(sensor.state);
      return {
        name,
        missing: false,
        acting: Number.isFinite(acting) ? acting : 0,
        reason: said(NO_SIGNAL_KEYS, "no_signal_", sensor.attributes.reason),
        warmedBy: said(WARMED_BY_KEYS, "warmed_by_", sensor.attributes.warmed_by),
        rows,
      };
    });
}

/** Return what one signal leads, in words. */
export function leadWords(row) {
  const edge = row.edge === "alarm" ? t("edge_alarm") : `→ ${row.edge}`;
  if (!Number.isFinite(row.within) || !Number.isFinite(row.share)) return edge;
  return t("lead_follows", { edge, within: row.within, share: row.share });
}

/** Return the card's section (HTML) for the models' signals; "" when none has the option. */
export function signalsSection(models, states, escape) {
  const view = signalsView(models, states);
  if (!view.length) return "";
  const blocks = view.map((model) => {
    if (model.missing) {
      return `<div class="signals-model"><span class="name">${escape(model.name)}</span><p class="note warning">${escape(t("signals_missing"))}</p></div>`;
    }
    const lines = model.rows.map(
      (row) =>
        `<li class="${row.acts ? "acts" : "learnt"}"><b>${escape(row.name)}</b> ${escape(leadWords(row))}` +
        ` <span class="counts">(${escape(t("led_wrong", { led: row.led, wrong: row.wrong }))}${row.acts ? escape(t("warms_it")) : ""})</span></li>`,
    );
    const summary = [
      model.acting
        ? model.acting === 1
          ? t("signal_warms")
          : t("signals_warm", { count: model.acting })
        : model.reason ?? t("no_signal_warms"),
      ...(model.warmedBy ? [t("warmed", { how: model.warmedBy })] : []),
    ].join(" · ");
    return `<div class="signals-model"><span class="name">${escape(model.name)}</span> <span class="signals-summary">${escape(summary)}</span>` +
      (lines.length ? `<ul class="signals">${lines.join("")}</ul>` : "") +
      `</div>`;
  });
  return `<section class="warming-signals"><h2>${escape(t("warming_signals"))}</h2>${blocks.join("")}</section>`;
}

export const SIGNALS_STYLE = `
  .signals-model { margin-bottom: 6px; font-size: 14px; }
  .signals-summary { color: var(--secondary-text-color); overflow-wrap: anywhere; }
  ul.signals { margin: 2px 0 0; padding-left: 18px; font-size: 12px; color: var(--secondary-text-color); }
  ul.signals li.acts b { color: var(--primary-text-color); }
  ul.signals .counts { white-space: nowrap; }
`;
