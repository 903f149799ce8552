// Two panels of the LLM Warmth card: the GPU's memory stacked over time and the last
// probe's time to first token by stage (with the last cold probe's). Each takes the card
// (its configuration, Home Assistant's states, its history rows) and returns its HTML.

import { formatBytes, formatSeconds, modelName } from "./llm-warmth-card-data.js";
import { coldProbe, memory, waterfall } from "./llm-warmth-card-charts.js";
import { STAGE_COLORS, escape, modelColor, px } from "./llm-warmth-card-style.js";
import { t } from "./llm-warmth-card-words.js";

export function memoryPanel(card, range, inner) {
  const gpus = card._config.gpus;
  const models = card._config.models.filter((m) => m.vram);
  if (!gpus.length && !models.length) return "";
  const reserve = gpus.reduce(
    (sum, g) => sum + (Number(card._hass.states[g.headroom_low]?.attributes.reserve_bytes) || 0),
    0,
  );
  const data = memory({
    ...range,
    models: card._config.models
      .filter((m) => m.vram)
      .map((m) => ({
        name: modelName(m, card._hass.states),
        history: card._rows(m.vram),
        unit: card._unit(m.vram, "GiB"),
      })),
    gpus: gpus.map((g) => ({
      total: card._rows(g.total),
      other: card._rows(g.other),
      unit: card._unit(g.total, "GiB"),
      otherUnit: card._unit(g.other, "GiB"),
    })),
    reserveBytes: reserve,
    buckets: Math.max(20, Math.floor(inner / 2)),
  });
  const title = `<h2>${escape(gpus.length > 1 ? t("gpu_memory_of", { count: gpus.length }) : t("gpu_memory"))}</h2>`;
  if (data.max <= 0) {
    return `<section class="memory">${title}<p class="note">${escape(t("no_memory"))}</p></section>`;
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
      )}"><title>${escape(t("household_reserve", { size: formatBytes(reserve) }))}</title></path>`,
    );
  }
  data.layers.forEach((layer, i) => {
    const fill = layer.kind === "other" ? "var(--secondary-text-color)" : modelColor(i);
    const peak = Math.max(...layer.values);
    svg.push(
      `<path class="memory-layer ${layer.kind}" d="${area(layer.upper, layer.lower)}" fill="${fill}"><title>${escape(t("up_to", { name: layer.name, size: formatBytes(peak) }))}</title></path>`,
    );
  });
  let totalLine = "";
  data.total.forEach((t, i) => {
    if (t === null) return;
    const move = i === 0 || data.total[i - 1] === null ? "M" : "L";
    totalLine += `${move}${px(x(data.edges[i]))} ${px(y(t))} L${px(x(data.edges[i + 1]))} ${px(y(t))} `;
  });
  if (totalLine) svg.push(`<path class="total" d="${totalLine}"><title>${escape(t("total"))}</title></path>`);
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
      reserve > 0 ? [`<span><i class="reserve-key"></i>${escape(t("reserve", { size: formatBytes(reserve) }))}</span>`] : [],
      totalLine ? [`<span><i class="total-key"></i>${escape(t("total"))}</span>`] : [],
    )
    .join("");
  const offset = -new Date().getTimezoneOffset() * 60_000;
  return `
    <section class="memory">
      ${title}
      <svg class="chart" width="${inner}" height="${height}" role="img" aria-label="${escape(t("gpu_memory"))}">
        <defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6"></line></pattern></defs>
        ${svg.join("")}
      </svg>
      ${card._axis(range, inner, offset)}
      <div class="legend">${legend}</div>
    </section>`;
}

export function waterfallPanel(card, inner) {
  const probes = card._config.models
    .filter((m) => m.probe?.ttft)
    .map((m) => {
      const state = (id) => (id ? card._hass.states[id] : undefined);
      const p = m.probe;
      return {
        model: modelName(m, card._hass.states),
        ttft: state(p.ttft),
        load: state(p.load),
        queue: state(p.queue),
        prefill: state(p.prefill),
        first_decode: state(p.first_decode),
        overhead: state(p.overhead),
      };
    });
  if (!card._config.models.some((m) => m.probe)) return "";
  const result = waterfall(probes);
  const title = `<h2>${escape(t("last_probe"))}</h2>`;
  if (!result) {
    return `<section class="waterfall">${title}<p class="note">${escape(t("no_probe"))}</p></section>`;
  }
  // The last cold probe too, once warm probes came after it: its load stays in sight.
  const cold = coldProbe(
    card._config.models
      .filter((m) => m.probe?.cold_ttft && m.probe?.ttft)
      .map((m) => {
        const keys = ["ttft", "load", "queue", "prefill", "first_decode", "overhead"];
        const p = m.probe;
        return {
          model: modelName(m, card._hass.states),
          cold: card._hass.states[p.cold_ttft],
          rows: Object.fromEntries(keys.map((k) => [k, card._rows(p[k])])),
          units: Object.fromEntries(keys.map((k) => [k, card._unit(p[k], "ms")])),
        };
      }),
  );
  const sections = [stagesPanel(card, result, title, inner)];
  if (cold && cold.updated < result.updated - 1000) {
    sections.push(stagesPanel(card, cold, `<h2>${escape(t("last_cold_probe"))}</h2>`, inner));
  }
  return sections.join("");
}

function stagesPanel(card, result, title, inner) {
  const when = new Intl.DateTimeFormat(card._hass.locale?.language ?? undefined, {
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
      <div class="facts"><span class="name">${escape(result.model)}</span>, ${escape(when)}: ${t("first_token_after", { figure: `<b>${escape(formatSeconds(result.ttftMs / 1000))}</b>` })}</div>
      <svg class="chart" width="${inner}" height="${result.stages.length * 22 + 4}" role="img" aria-label="${escape(t("ttft_aria"))}">${rows.join("")}</svg>
    </section>`;
}
