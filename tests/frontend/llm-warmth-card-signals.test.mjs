// The card's Warming signals section on its own: `node --test tests/frontend/`.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  NO_SIGNAL,
  WARMED_BY,
  leadWords,
  signalsSection,
  signalsView,
} from "../../custom_components/llm_warmth/frontend/llm-warmth-card-signals.js";

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const ROW = {
  entity_id: "binary_sensor.hall",
  name: "Hall motion",
  edge: "on",
  within_minutes: 12,
  share_percent: 64,
  led: 9,
  wrong: 5,
  lift: 3.2,
  acts: true,
};

const states = {
  "sensor.llama": { state: "warm", attributes: { friendly_name: "llama3.2:3b" } },
  "sensor.llama_signals": {
    state: "1",
    attributes: {
      chosen: 2,
      warmed_by: "clock_and_signals",
      signals: [
        ROW,
        { entity_id: "sensor.phone_next_alarm", edge: "alarm", within_minutes: 20, share_percent: 80, led: 4, wrong: 1, acts: false },
        { name: "no entity" },
        null,
      ],
    },
  },
  "sensor.qwen": { state: "cold", attributes: {} },
  "sensor.qwen_signals": { state: "0", attributes: { reason: "none_chosen", signals: "not a list" } },
};

describe("warming signals", () => {
  it("reads each model's signals from its sensor, leaving out models without the option", () => {
    const view = signalsView(
      [
        { warmth: "sensor.llama", signals: "sensor.llama_signals" },
        { warmth: "sensor.qwen", signals: "sensor.qwen_signals" },
        { warmth: "sensor.other" },
        { warmth: "sensor.gone", signals: "sensor.gone_signals" },
      ],
      states,
    );
    assert.equal(view.length, 3);
    assert.deepEqual(view[0], {
      name: "llama3.2:3b",
      missing: false,
      acting: 1,
      reason: null,
      warmedBy: WARMED_BY.clock_and_signals,
      rows: [
        { name: "Hall motion", edge: "on", within: 12, share: 64, led: 9, wrong: 5, acts: true },
        { name: "sensor.phone_next_alarm", edge: "alarm", within: 20, share: 80, led: 4, wrong: 1, acts: false },
      ],
    });
    // Named by its entity id when the warmth sensor has no name; its rows unreadable: none.
    assert.equal(view[1].name, "sensor.qwen");
    assert.deepEqual(view[1].rows, []);
    assert.equal(view[1].reason, NO_SIGNAL.none_chosen);
    assert.equal(view[1].warmedBy, null);
    assert.deepEqual(view[2], { name: "sensor.gone", missing: true, rows: [], acting: 0 });
  });

  it("reads an unreadable count as none", () => {
    const view = signalsView(
      [{ warmth: "sensor.m", signals: "sensor.s" }],
      { "sensor.s": { state: "unavailable", attributes: {} } },
    );
    assert.equal(view[0].acting, 0);
  });

  it("says what a signal leads in words", () => {
    assert.equal(
      leadWords({ edge: "on", within: 12, share: 64 }),
      "→ on: a use follows within 12 min 64 % of the time",
    );
    assert.equal(
      leadWords({ edge: "alarm", within: 20, share: 80 }),
      "its time comes: a use follows within 20 min 80 % of the time",
    );
    assert.equal(leadWords({ edge: "home", within: NaN, share: 5 }), "→ home");
  });

  it("draws a section only for models with the option, escaping what it shows", () => {
    assert.equal(signalsSection([{ warmth: "sensor.llama" }], states, escape), "");
    const html = signalsSection(
      [
        { warmth: "sensor.llama", signals: "sensor.llama_signals" },
        { warmth: "sensor.qwen", signals: "sensor.qwen_signals" },
        { warmth: "sensor.gone", signals: "sensor.gone_signals" },
      ],
      {
        ...states,
        "sensor.llama": { state: "warm", attributes: { friendly_name: "<b>llama</b>" } },
      },
      escape,
    );
    assert.match(html, /<h2>Warming signals<\/h2>/);
    assert.match(html, /&#60;b&#62;llama&#60;\/b&#62;/); // the name, escaped
    assert.match(html, /1 signal warms it · warmed by the clock and the house&#39;s signals/);
    assert.match(html, /<li class="acts"><b>Hall motion<\/b> → on: a use follows within 12 min 64 % of the time/);
    assert.match(html, /\(led 9, wrong 5, warms it\)/);
    assert.match(html, /<li class="learnt"><b>sensor.phone_next_alarm<\/b> its time comes/);
    assert.match(html, /no signals chosen: add warming signals/);
    assert.match(html, /Its Warming signals sensor is not there/);
    const two = signalsSection(
      [{ warmth: "sensor.llama", signals: "sensor.s" }],
      { "sensor.s": { state: "2", attributes: { signals: [] } } },
      escape,
    );
    assert.match(two, /2 signals warm it/);
    assert.doesNotMatch(two, /<ul/);
    const none = signalsSection(
      [{ warmth: "sensor.llama", signals: "sensor.s" }],
      { "sensor.s": { state: "0", attributes: { reason: "odd" } } },
      escape,
    );
    assert.match(none, /no signal warms it/);
  });
});
