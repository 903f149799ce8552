// How the LLM Warmth card looks: its colours (each one a theme may set), its state labels (in the card's language),
// its style sheet, and the two helpers every panel writes HTML with.

import { t } from "./llm-warmth-card-words.js";

// Each colour can be set by a theme (--llm-warmth-<state>-color), else follows HA's.
export const STATE_COLORS = {
  cold: "var(--llm-warmth-cold-color, var(--blue-color, #2196f3))",
  loading: "var(--llm-warmth-loading-color, var(--amber-color, #ffc107))",
  warm: "var(--llm-warmth-warm-color, var(--orange-color, #ff9800))",
  kept_warm: "var(--llm-warmth-kept-warm-color, var(--deep-orange-color, #ff5722))",
  unloading: "var(--llm-warmth-unloading-color, var(--blue-grey-color, #607d8b))",
  unavailable: "var(--disabled-color, #bdbdbd)",
  unknown: "var(--divider-color, rgba(0, 0, 0, 0.12))",
};
// A warmth state in the card's language ("cold", "warm, no expiry"); an unknown one as is.
export const stateLabel = (state) => (state in STATE_COLORS ? t(`state_${state}`) : state);
export const MODEL_COLORS = ["#4e79a7", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759"];
export const modelColor = (i) =>
  `var(--llm-warmth-model-${i + 1}-color, ${MODEL_COLORS[i % MODEL_COLORS.length]})`;
export const STAGE_COLORS = {
  queue: "var(--llm-warmth-queue-color, var(--grey-color, #9e9e9e))",
  load: "var(--llm-warmth-load-color, var(--amber-color, #ffc107))",
  prefill: "var(--llm-warmth-prefill-color, var(--blue-color, #2196f3))",
  first_decode: "var(--llm-warmth-decode-color, var(--green-color, #4caf50))",
  overhead: "var(--llm-warmth-overhead-color, var(--purple-color, #9c27b0))",
  unreported: "var(--divider-color, rgba(0, 0, 0, 0.12))",
};

export const escape = (text) =>
  String(text).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );
export const px = (n) => Math.round(n * 10) / 10;

export const STYLE = `
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
