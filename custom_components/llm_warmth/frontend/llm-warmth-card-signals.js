// The LLM Warmth card's "Warming signals" section: per model whose option `signals` names
// its Warming signals sensor, the household's signals it learnt (entity, what each leads,
// how often it led and was wrong) and how the model is warmed. `signalsView` is the data
// (tested alone, in Node); `signalsSection` the HTML the card shows.

// How a model is warmed (the Auto-warm switch's `warmed_by`), as the card says it.
export const WARMED_BY = {
  clock: "by the clock",
  idle: "by its idle times",
  clock_and_signals: "by the clock and the house's signals",
  idle_and_signals: "by its idle times and the house's signals",
  signals: "by the house's signals",
};
// Why no signal warms it (the sensor's `reason`).
export const NO_SIGNAL = {
  none_chosen: "no signals chosen: add warming signals to the server (Settings → Devices & services)",
  learning: "still learning: no signal leads its uses yet",
  time_only_cheaper: "the clock alone costs less",
};

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
        reason: NO_SIGNAL[sensor.attributes.reason] ?? null,
        warmedBy: WARMED_BY[sensor.attributes.warmed_by] ?? null,
        rows,
      };
    });
}

/** Return what one signal leads, in words. */
export function leadWords(row) {
  const edge = row.edge === "alarm" ? "its time comes" : `→ ${row.edge}`;
  if (!Number.isFinite(row.within) || !Number.isFinite(row.share)) return edge;
  return `${edge}: a use follows within ${row.within} min ${row.share} % of the time`;
}

/** Return the card's section (HTML) for the models' signals; "" when none has the option. */
export function signalsSection(models, states, escape) {
  const view = signalsView(models, states);
  if (!view.length) return "";
  const blocks = view.map((model) => {
    if (model.missing) {
      return `<div class="signals-model"><span class="name">${escape(model.name)}</span><p class="note warning">Its Warming signals sensor is not there.</p></div>`;
    }
    const lines = model.rows.map(
      (row) =>
        `<li class="${row.acts ? "acts" : "learnt"}"><b>${escape(row.name)}</b> ${escape(leadWords(row))}` +
        ` <span class="counts">(led ${row.led}, wrong ${row.wrong}${row.acts ? ", warms it" : ""})</span></li>`,
    );
    const summary = [
      model.acting
        ? `${model.acting} signal${model.acting === 1 ? "" : "s"} warm${model.acting === 1 ? "s" : ""} it`
        : model.reason ?? "no signal warms it",
      ...(model.warmedBy ? [`warmed ${model.warmedBy}`] : []),
    ].join(" · ");
    return `<div class="signals-model"><span class="name">${escape(model.name)}</span> <span class="now">${escape(summary)}</span>` +
      (lines.length ? `<ul class="signals">${lines.join("")}</ul>` : "") +
      `</div>`;
  });
  return `<section class="warming-signals"><h2>Warming signals</h2>${blocks.join("")}</section>`;
}

export const SIGNALS_STYLE = `
  .signals-model { margin-bottom: 6px; font-size: 14px; }
  ul.signals { margin: 2px 0 0; padding-left: 18px; font-size: 12px; color: var(--secondary-text-color); }
  ul.signals li.acts b { color: var(--primary-text-color); }
  ul.signals .counts { white-space: nowrap; }
`;
