// The card's data code on its own: `node --test tests/frontend/` (scripts/test runs it).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  checkConfig,
  coldStartWords,
  coldStarts,
  configEntities,
  durationMs,
  formatBytes,
  formatSeconds,
  hiddenChanges,
  household,
  loadBars,
  loadWords,
  modelHost,
  modelName,
  numeric,
  pinSpans,
  timeline,
  toBytes,
  toEntries,
  toEntry,
} from "../../custom_components/llm_warmth/frontend/llm-warmth-card-data.js";
import {
  MIN_CHART_SPAN_MS,
  UNREPORTED_MIN_MS,
  asOf,
  chartStart,
  coldProbe,
  memory,
  peakSample,
  sample,
  timeTicks,
  waterfall,
} from "../../custom_components/llm_warmth/frontend/llm-warmth-card-charts.js";

const T0 = Date.UTC(2026, 11, 1, 8, 0, 0); // a morning, in ms
const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const GIB = 1024 ** 3;

// A compressed history row, as history/history_during_period sends it (seconds).
const row = (ms, state, attributes) => ({ s: state, ...(attributes && { a: attributes }), lu: ms / 1000 });

describe("history rows", () => {
  it("reads compressed rows and full state objects", () => {
    assert.deepEqual(toEntry({ s: "warm", a: { x: 1 }, lu: 10, lc: 5 }), {
      t: 10_000,
      changed: 5_000,
      state: "warm",
      attributes: { x: 1 },
    });
    assert.deepEqual(toEntry({ s: "cold", lu: 10 }).changed, 10_000);
    const full = toEntry({
      state: "7.5",
      attributes: { source: "server" },
      last_changed: "2026-12-01T08:00:00Z",
      last_updated: "2026-12-01T08:00:01Z",
    });
    assert.equal(full.t, T0 + S);
    assert.equal(full.changed, T0);
    assert.equal(full.state, "7.5");
  });

  it("sorts rows and drops those without a time", () => {
    const entries = toEntries([row(T0 + S, "b"), { s: "x", lu: "nope" }, row(T0, "a")]);
    assert.deepEqual(
      entries.map((e) => e.state),
      ["a", "b"],
    );
    assert.deepEqual(toEntries(undefined), []);
  });

  it("reads numbers, units of time and of memory", () => {
    assert.equal(numeric("7.5"), 7.5);
    for (const absent of ["unavailable", "unknown", "", null, undefined, "warm"]) {
      assert.equal(numeric(absent), null);
    }
    assert.equal(durationMs(1.5, "s"), 1500);
    assert.equal(durationMs(2, "min"), 120_000);
    assert.equal(durationMs(250, "ms"), 250);
    assert.equal(durationMs(3, undefined), 3000);
    assert.equal(durationMs(null, "s"), null);
    assert.equal(toBytes(2, "GiB"), 2 * GIB);
    assert.equal(toBytes(512, "MiB"), 512 * 1024 ** 2);
    assert.equal(toBytes(1, undefined), GIB);
    assert.equal(toBytes(null, "GiB"), null);
  });
});

describe("warmth timeline", () => {
  const window = { start: T0, end: T0 + 6 * H };

  it("cuts the states into segments within the window", () => {
    const history = [
      row(T0 - H, "cold"), // carried in: starts at the window's start
      row(T0 + H, "loading"),
      row(T0 + H + 8 * S, "warm"),
      row(T0 + 2 * H, "warm", { agents: [] }), // an attribute change: no new segment
      row(T0 + 3 * H, "unavailable"),
      row(T0 + 3 * H + 5 * MIN, "cold"),
    ];
    assert.deepEqual(timeline(history, window), [
      { start: T0, end: T0 + H, state: "cold", merged: 0 },
      { start: T0 + H, end: T0 + H + 8 * S, state: "loading", merged: 0 },
      { start: T0 + H + 8 * S, end: T0 + 3 * H, state: "warm", merged: 0 },
      { start: T0 + 3 * H, end: T0 + 3 * H + 5 * MIN, state: "unavailable", merged: 0 },
      { start: T0 + 3 * H + 5 * MIN, end: T0 + 6 * H, state: "cold", merged: 0 },
    ]);
  });

  it("has no segment before the first known state, and none for no history", () => {
    assert.deepEqual(timeline([row(T0 + 5 * H, "warm")], window), [
      { start: T0 + 5 * H, end: T0 + 6 * H, state: "warm", merged: 0 },
    ]);
    assert.deepEqual(timeline([], window), []);
  });

  it("groups what is too short to see on a long span, by the state that lasted longest", () => {
    const month = { start: T0, end: T0 + 30 * 24 * H, minMs: 2 * H };
    const history = [row(T0, "cold")];
    // Every morning: loaded for 20 minutes (the load in 10 s), then cold again.
    for (let day = 1; day < 30; day++) {
      const at = T0 + day * 24 * H;
      history.push(row(at, "loading"), row(at + 10 * S, "warm"), row(at + 20 * MIN, "cold"));
    }
    // Day 10: warm for five hours (long enough to draw as it is).
    const long = T0 + 10 * 24 * H + 20 * MIN;
    history.splice(
      history.findIndex((r) => r.lu * 1000 === long),
      1,
      row(long + 5 * H, "cold"),
    );
    // Day 20: two flickers in a row, unavailable then unknown, grouped with the morning.
    history.push(row(T0 + 20 * 24 * H + 21 * MIN, "unavailable"));
    history.push(row(T0 + 20 * 24 * H + 22 * MIN, "cold"));
    const segments = timeline(history, month);
    // A morning is one segment (warm, also loading), between two long cold ones.
    const mornings = segments.filter((s) => s.merged);
    assert.equal(mornings.length, 28);
    for (const s of mornings) {
      assert.equal(s.state, "warm");
      assert.ok(s.end - s.start < month.minMs);
    }
    const day20 = T0 + 20 * 24 * H;
    assert.ok(mornings.filter((s) => s.start !== day20).every((s) => s.also === "loading"));
    // loading, warm, cold a minute, unavailable a minute: warm, also cold (the first of
    // two as long).
    assert.deepEqual(
      mornings.filter((s) => s.start === day20).map((s) => [s.merged, s.also]),
      [[3, "cold"]],
    );
    // The five warm hours of day 10 stand alone, after their load (too short to draw, and
    // nothing short beside it to group with); the rest is long and cold.
    const alone = segments.filter((s) => !s.merged);
    assert.deepEqual(
      alone.filter((s) => s.end - s.start < month.minMs).map((s) => [s.state, s.end - s.start]),
      [["loading", 10 * S]],
    );
    assert.deepEqual(
      alone.filter((s) => s.state === "warm").map((s) => s.end - s.start),
      [5 * H + 20 * MIN - 10 * S],
    );
    assert.ok(segments.length <= 2 * 30 + 1, `${segments.length} segments`);
    // The segments still cover the whole month, end to end.
    assert.equal(segments[0].start, month.start);
    assert.equal(segments.at(-1).end, month.end);
    segments.slice(1).forEach((s, i) => assert.equal(s.start, segments[i].end));
  });

  it("never groups a state that lasts exactly minMs (the bound is long enough to draw)", () => {
    const span = { start: T0, end: T0 + 10 * H, minMs: H };
    const history = [
      row(T0, "cold"),
      row(T0 + 2 * H, "loading"), // 1 min: short
      row(T0 + 2 * H + MIN, "warm"), // exactly minMs: drawn as it is
      row(T0 + 3 * H + MIN, "loading"), // 1 min: short, grouped with nothing short beside it
      row(T0 + 3 * H + 2 * MIN, "cold"),
    ];
    assert.deepEqual(
      timeline(history, span).map((s) => [s.state, s.end - s.start, s.merged]),
      [
        ["cold", 2 * H, 0],
        ["loading", MIN, 0],
        ["warm", H, 0],
        ["loading", MIN, 0],
        ["cold", 10 * H - 3 * H - 2 * MIN, 0],
      ],
    );
  });
});

describe("pins", () => {
  const window = { start: T0, end: T0 + 6 * H };

  it("spans each time the Keep warm switch was on, with the pin's end", () => {
    // A blueprint's pin before the morning window (until 08:00), then one until unpinned.
    const until = new Date(T0 + 3 * H).toISOString();
    const history = [
      row(T0 - H, "off"),
      row(T0 + H, "on", { until, priority: 10 }),
      row(T0 + 3 * H, "off", { until: null }),
      row(T0 + 4 * H, "on", { until: null }),
      row(T0 + 5 * H, "unavailable"),
    ];
    assert.deepEqual(pinSpans(history, window), [
      { start: T0 + H, end: T0 + 3 * H, until: T0 + 3 * H },
      { start: T0 + 4 * H, end: T0 + 5 * H, until: null },
    ]);
    // On since before the span, and still on: clipped to it.
    assert.deepEqual(pinSpans([row(T0 - H, "on")], window), [{ start: T0, end: T0 + 6 * H, until: null }]);
    assert.deepEqual(pinSpans([], window), []);
  });

  it("accepts the switch in the configuration and watches it", () => {
    const config = checkConfig({ models: [{ warmth: "sensor.a", keep_warm: "switch.a_keep_warm" }] });
    assert.ok(configEntities(config).includes("switch.a_keep_warm"));
    assert.throws(() => checkConfig({ models: [{ warmth: "sensor.a", keep_warm: "a switch" }] }), /keep_warm/);
  });
});

describe("loads and cold starts", () => {
  const window = { start: T0, end: T0 + 6 * H };
  const server = { source: "server", unit_of_measurement: "s" };
  const polling = { source: "polling", unit_of_measurement: "s" };

  it("takes a figure written within a second of the window's start as carried in", () => {
    // The history API repeats the state at the window's start (its own time, or a few
    // milliseconds later): no load. A figure written after that second is one.
    const at = (ms) => loadBars([row(T0 + ms, "3.0", server)], window).length;
    assert.equal(at(0), 0);
    assert.equal(at(999), 0);
    assert.equal(at(1000), 0);
    assert.equal(at(1001), 1);
  });

  it("reads a figure in the unit its sensor states (hours, minutes, milliseconds)", () => {
    assert.equal(durationMs(2, "h"), 2 * H);
    assert.equal(durationMs(3, "min"), 3 * MIN);
    assert.equal(durationMs(250, "ms"), 250);
    assert.equal(durationMs(1.5, "d"), 36 * H);
    assert.equal(durationMs(4, undefined), 4 * S); // seconds when none is stated
    const hours = { source: "server", unit_of_measurement: "h" };
    const [bar] = loadBars([row(T0 + H, "0.5", hours)], window);
    assert.deepEqual([bar.seconds, bar.start], [1800, T0 + H - 30 * MIN]);
  });

  it("draws each load as a bar of its length, ending when its figure was written", () => {
    const history = [
      row(T0, "4.2", server), // carried in at the window's start: an earlier load
      row(T0 + H, "7.5", server),
      row(T0 + 2 * H, "unavailable"),
      row(T0 + 2 * H + MIN, "7.5", server), // back after an outage: the same load
      row(T0 + 3 * H, "6.1", polling),
    ];
    assert.deepEqual(loadBars(history, window), [
      {
        start: T0 + H - 7500,
        end: T0 + H,
        seconds: 7.5,
        exact: true,
        source: "server",
        clipped: false,
      },
      {
        start: T0 + 3 * H - 6100,
        end: T0 + 3 * H,
        seconds: 6.1,
        exact: false, // polling saw it from its first sighting on: at least 6.1 s
        source: "polling",
        clipped: false,
      },
    ]);
  });

  it("draws a lower bound (at_least_seconds) beside the exact figure it never replaces", () => {
    // The sensor's state stays the last exact figure; a newer load that only polls saw
    // is its at_least_seconds attribute (null again once an exact figure replaces it).
    const history = [
      row(T0, "unknown", { at_least_seconds: 0.4 }), // carried in: no load
      row(T0 + H, "7.0", { source: "client", at_least_seconds: null }),
      row(T0 + 2 * H, "7.0", { source: "client", at_least_seconds: 0.5 }),
      row(T0 + 2 * H + MIN, "7.0", { source: "client", at_least_seconds: 0.5 }), // unchanged
      row(T0 + 3 * H, "unknown", { at_least_seconds: 0.6 }),
    ];
    assert.deepEqual(
      loadBars(history, window).map((b) => [b.end, b.seconds, b.exact, b.source]),
      [
        [T0 + H, 7, true, "client"],
        [T0 + 2 * H, 0.5, false, "polling"],
        [T0 + 3 * H, 0.6, false, "polling"],
      ],
    );
    assert.deepEqual(
      coldStarts([row(T0 + H, "unknown", { at_least_seconds: 12 })], window).map((c) => [
        c.waitedBy,
        c.exact,
      ]),
      [["a client", false]],
    );
  });

  it("keeps a load before the 1.7 upgrade once, and an exact figure repeated after a bound", () => {
    const history = [
      row(T0 + H, "6.1", { source: "polling" }), // before 1.7: a polled figure as the state
      row(T0 + 2 * H, "unknown", { at_least_seconds: 6.1 }), // the upgrade moved it: no load
      row(T0 + 3 * H, "7.0", { source: "client", at_least_seconds: null }),
      row(T0 + 4 * H, "7.0", { source: "client", at_least_seconds: 9 }),
      row(T0 + 5 * H, "7.0", { source: "client", at_least_seconds: null }), // 7.0 s again
    ];
    assert.deepEqual(
      loadBars(history, window).map((b) => [b.end, b.seconds, b.exact]),
      [
        [T0 + H, 6.1, false],
        [T0 + 3 * H, 7, true],
        [T0 + 4 * H, 9, false],
        [T0 + 5 * H, 7, true],
      ],
    );
  });

  it("reads the figure's unit and clips a load that began before the window", () => {
    const history = [row(T0 - H, "unknown"), row(T0 + 2 * S, "0.05", { unit_of_measurement: "min" })];
    const [bar] = loadBars(history, window);
    assert.equal(bar.seconds, 3);
    assert.equal(bar.start, T0);
    assert.equal(bar.clipped, true);
    assert.equal(bar.exact, true);
  });

  it("marks each cold start with who waited how long", () => {
    const history = [
      row(T0 + H, "9.4", { source: "client" }),
      row(T0 + 2 * H, "12.0", { source: "polling" }),
      row(T0 + 3 * H, "3.0", {}),
    ];
    assert.deepEqual(
      coldStarts(history, window).map((c) => [c.t, c.waitedBy, c.seconds, c.exact]),
      [
        [T0 + H, "probe", 9.4, true],
        [T0 + 2 * H, "a client", 12, false],
        [T0 + 3 * H, "a request", 3, true],
      ],
    );
  });

  it("says a lower bound as one", () => {
    assert.equal(formatSeconds(7.54), "7.5 s");
    assert.equal(formatSeconds(7.54, false), "at least 7.5 s");
    assert.equal(formatSeconds(42.4), "42 s");
    assert.equal(formatSeconds(65), "1 min 5 s");
    assert.equal(formatSeconds(120, false), "at least 2 min");
    assert.equal(formatBytes(11.25 * GIB), "11.3 GiB");
    assert.equal(formatBytes(512 * 1024 ** 2), "512 MiB");
  });

  it("names an exact load as timed, and a cold start polls saw part of as what they saw", () => {
    // The demo's morning: a probe timed a 4.0 s load; later another client's cold start
    // that polls saw the end of. "last load 4.0 s" beside "a client waited at least 0.5 s"
    // read as one load said twice, two ways.
    const say = (w) => [w.before, w.figure, w.after].filter(Boolean).join(" ");
    assert.equal(say(loadWords({ seconds: 4, exact: true })), "last timed load 4.0 s");
    assert.equal(
      say(loadWords({ seconds: 3, exact: false })),
      "last load at least 3.0 s (polls saw part of it)",
    );
    assert.equal(
      say(coldStartWords({ seconds: 0.5, exact: false, waitedBy: "a client" })),
      "polling saw a client wait at least 0.5 s",
    );
    assert.equal(
      say(coldStartWords({ seconds: 7.8, exact: true, waitedBy: "probe" })),
      "probe waited 7.8 s",
    );
  });
});

describe("GPU memory", () => {
  const window = { start: T0, end: T0 + 4 * H };
  const gib = () => ({ unit_of_measurement: "GiB" });

  it("samples a step series: the highest value within each interval", () => {
    const series = [
      { t: T0 - H, value: 1 },
      { t: T0 + 10 * MIN, value: 5 },
      { t: T0 + 20 * MIN, value: 2 },
      { t: T0 + 90 * MIN, value: null },
    ];
    assert.deepEqual(sample(series, [T0, T0 + H, T0 + 2 * H, T0 + 3 * H]), [5, 2, null]);
    assert.deepEqual(sample([], [T0, T0 + H]), [null]);
  });

  it("stacks the models and the other processes, beside the total and the reserve", () => {
    const result = memory({
      ...window,
      models: [
        {
          name: "llama3.2:3b",
          history: [row(T0 - H, "0", gib()), row(T0 + H, "3", gib()), row(T0 + 3 * H, "0", gib())],
        },
        { name: "qwen3:8b", history: [row(T0, "unavailable"), row(T0 + 2 * H, "6144", { unit_of_measurement: "MiB" })] },
      ],
      gpus: [
        { total: [row(T0 - H, "24", gib())], other: [row(T0 - H, "1.5", gib())] },
        { total: [row(T0 - H, "12", gib())], other: [row(T0 - H, "0.5", gib())] },
      ],
      reserveBytes: 20 * GIB,
    });
    assert.deepEqual(result.edges, [T0, T0 + H, T0 + 2 * H, T0 + 3 * H, T0 + 4 * H]);
    const [llama, qwen, other] = result.layers;
    assert.deepEqual(
      result.layers.map((l) => [l.name, l.kind]),
      [
        ["llama3.2:3b", "model"],
        ["qwen3:8b", "model"],
        ["other processes", "other"],
      ],
    );
    assert.deepEqual(llama.values.map((v) => v / GIB), [0, 3, 3, 0]);
    assert.deepEqual(qwen.values.map((v) => v / GIB), [0, 0, 6, 6]); // unavailable: nothing drawn
    assert.deepEqual(qwen.lower, llama.upper);
    assert.deepEqual(other.values.map((v) => v / GIB), [2, 2, 2, 2]); // both GPUs
    assert.deepEqual(other.upper.map((v) => v / GIB), [2, 5, 11, 8]);
    assert.deepEqual(result.total.map((v) => v / GIB), [36, 36, 36, 36]);
    assert.equal(result.reserve, 20 * GIB);
    assert.equal(result.max, 36 * GIB);
  });

  it("draws no total where no GPU reports one, and models alone without a GPU source", () => {
    const result = memory({
      ...window,
      models: [{ name: "m", history: [row(T0, "2", gib())] }],
    });
    assert.deepEqual(result.total, [null]);
    assert.equal(result.layers.length, 1);
    assert.equal(result.max, 2 * GIB);
    const lost = memory({
      ...window,
      gpus: [{ total: [row(T0, "24", gib()), row(T0 + H, "unavailable")], other: [] }],
    });
    assert.deepEqual(lost.total, [24 * GIB, null]);
  });

  it("stops the stack and the scale at the GPU's memory, where it is known", () => {
    // The model's 6 GiB and "other processes" that still counted it (3.3 GiB) on an 8 GiB
    // GPU: 9.3 GiB stacked, more than the GPU holds. The axis reads 8.0 GiB.
    const result = memory({
      ...window,
      models: [{ name: "qwen3:8b", history: [row(T0 - H, "6", gib())] }],
      gpus: [{ total: [row(T0 - H, "8", gib())], other: [row(T0 - H, "3.3", gib())] }],
    });
    assert.equal(result.max, 8 * GIB);
    assert.deepEqual(result.layers.at(-1).upper, [8 * GIB]);
    assert.deepEqual(result.layers.at(-1).values.map((v) => v / GIB), [3.3]); // its figure
    const untold = memory({ ...window, models: [{ name: "m", history: [row(T0 - H, "9", gib())] }] });
    assert.equal(untold.max, 9 * GIB); // no GPU source: nothing to stop at
  });

  it("never stacks two models that took each other's place within one interval", () => {
    // An 8 GiB GPU: the 3 GiB model loaded, pushed out by the 6 GiB one a minute later,
    // back again; all within one interval of a six-hour chart.
    const six = { start: T0, end: T0 + 6 * H };
    const at = (minutes) => T0 + 5 * H + minutes * MIN;
    const result = memory({
      ...six,
      models: [
        {
          name: "llama3.2:3b",
          history: [row(T0, "0", gib()), row(at(1), "3", gib()), row(at(2), "0", gib()), row(at(4), "3", gib())],
        },
        { name: "qwen3:8b", history: [row(T0, "0", gib()), row(at(2), "6", gib()), row(at(4), "0", gib())] },
      ],
      gpus: [{ total: [row(T0, "8", gib())], other: [row(T0, "0.5", gib())] }],
      buckets: 3,
    });
    assert.equal(result.edges.length, 4); // sampled: more changes than intervals
    const peak = Math.max(...result.layers.at(-1).upper);
    assert.equal(peak, 6.5 * GIB); // the 6 GiB model and the other processes, at once
    assert.equal(result.max, 8 * GIB); // the axis: the GPU's total, not 9.5 GiB
    // Without a GPU source: the highest the models held at once.
    const modelsOnly = memory({
      ...six,
      models: [
        { name: "a", history: [row(T0, "0", gib()), row(at(1), "3", gib()), row(at(2), "0", gib())] },
        { name: "b", history: [row(T0, "0", gib()), row(at(2), "6", gib())] },
      ],
      buckets: 2,
    });
    assert.equal(modelsOnly.max, 6 * GIB);
  });

  it("samples several series at the moment their sum was highest", () => {
    const a = [{ t: T0, value: 3 }, { t: T0 + 10 * MIN, value: 0 }, { t: T0 + 70 * MIN, value: 1 }];
    const b = [{ t: T0 + 10 * MIN, value: 6 }, { t: T0 + 20 * MIN, value: null }];
    assert.deepEqual(peakSample([a, b], [T0, T0 + H, T0 + 2 * H]), [
      [0, 1],
      [6, null],
    ]);
    assert.deepEqual(peakSample([[]], [T0, T0 + H]), [[null]]);
  });

  it("keeps a month legible: at most `buckets` intervals, a short load still shows", () => {
    const month = { start: T0, end: T0 + 30 * 24 * H };
    const history = [row(T0, "0", gib())];
    for (let poll = 0; poll < 30 * 24 * 60; poll += 7) {
      // A load of ten minutes every day at eight, noise in between.
      const at = T0 + poll * MIN;
      const minuteOfDay = poll % (24 * 60);
      history.push(row(at, minuteOfDay < 10 ? "3" : String((poll % 3) / 100), gib()));
    }
    const result = memory({ ...month, models: [{ name: "m", history }], buckets: 200 });
    assert.equal(result.edges.length, 201);
    const peaks = result.layers[0].values.filter((v) => v === 3 * GIB).length;
    assert.ok(peaks >= 29, `${peaks} daily loads shown`);
  });
});

describe("the last probe's waterfall", () => {
  const state = (value, unit, at) => ({
    state: String(value),
    attributes: { unit_of_measurement: unit },
    last_updated: new Date(at).toISOString(),
  });

  it("splits the most recent probe into its stages, in order", () => {
    const result = waterfall([
      {
        model: "qwen3:8b",
        ttft: state(0.2, "s", T0),
        load: state(0.01, "s", T0),
        prefill: state(150, "ms", T0),
      },
      {
        model: "llama3.2:3b",
        ttft: state(9.5, "s", T0 + H),
        load: state(8, "s", T0 + H),
        queue: state(500, "ms", T0 + H),
        prefill: state(1200, "ms", T0 + H),
      },
    ]);
    assert.equal(result.model, "llama3.2:3b");
    assert.equal(result.ttftMs, 9500);
    assert.equal(result.updated, T0 + H);
    assert.deepEqual(result.stages, [
      { key: "queue", label: "queue", startMs: 0, ms: 500 },
      { key: "load", label: "load", startMs: 500, ms: 7500 },
      { key: "prefill", label: "prefill", startMs: 8000, ms: 1200 },
      // first decode and overhead: disabled sensors here; what is left is said as such
      { key: "unreported", label: "not reported", startMs: 9200, ms: 300 },
    ]);
  });

  it("names no remainder the chart would show as 0.0 s", () => {
    const stages = (ttft) =>
      waterfall([
        {
          model: "m",
          ttft: state(ttft, "ms", T0),
          load: state(3000, "ms", T0),
          prefill: state(970, "ms", T0),
        },
      ]).stages.map((s) => s.key);
    // 30 ms over 4 s is more than 0.5 % of it, but it would read "0.0 s": not a stage
    assert.deepEqual(stages(4000), ["load", "prefill"]);
    assert.deepEqual(stages(3970 + UNREPORTED_MIN_MS), ["load", "prefill", "unreported"]);
    assert.deepEqual(stages(3970 + UNREPORTED_MIN_MS - 1), ["load", "prefill"]);
  });

  it("names the load 'queue and load' when the server does not split them", () => {
    const result = waterfall([
      {
        model: "m",
        ttft: state(1000, "ms", T0),
        load: state(400, "ms", T0),
        prefill: state(350, "ms", T0),
        first_decode: state(50, "ms", T0),
        overhead: state(199.6, "ms", T0),
      },
    ]);
    assert.deepEqual(
      result.stages.map((s) => s.label),
      ["queue and load", "prefill", "first decode", "overhead"],
    );
  });

  it("keeps the last cold probe's stages once a warm probe came after it", () => {
    // The demo's morning: a cold probe at 06:50 (4 s of load), a warm one at 06:55.
    const cold = T0;
    const warm = T0 + 5 * MIN;
    const rows = {
      ttft: [row(T0 - H, "0.21"), row(cold + 12, "4.35"), row(warm + 3, "0.2")],
      load: [row(T0 - H, "0.01"), row(cold + 10, "4.0"), row(warm, "0.0")],
      // The same prefill at both probes: no row of its own at the cold one.
      prefill: [row(T0 - H, "150")],
    };
    const units = { ttft: "s", load: "s", prefill: "ms" };
    const result = coldProbe([
      { model: "llama3.2:3b", cold: state(4.35, "s", cold), rows, units },
    ]);
    assert.equal(result.model, "llama3.2:3b");
    assert.equal(result.ttftMs, 4350);
    assert.equal(result.updated, cold);
    assert.deepEqual(
      result.stages.map((s) => [s.label, s.ms]),
      [
        ["queue and load", 4000],
        ["prefill", 150],
        ["not reported", 200],
      ],
    );
    // History that does not reach back to it, or says another time to first token: none.
    assert.equal(coldProbe([{ model: "m", cold: state(4.35, "s", cold), rows: { ttft: [row(warm, "0.2")] }, units }]), null);
    assert.equal(
      coldProbe([{ model: "m", cold: state(9.9, "s", cold), rows, units }]),
      null,
    );
    assert.equal(coldProbe([{ model: "m", cold: state("unknown", "s", cold), rows, units }]), null);
    assert.equal(coldProbe([]), null);
    assert.equal(asOf(rows.ttft, cold)?.state, "0.21");
    assert.equal(asOf(rows.ttft, T0 - 2 * H), null);
  });

  it("is null before any probe, or while its figures are unavailable", () => {
    assert.equal(waterfall([]), null);
    assert.equal(waterfall([{ model: "m" }]), null);
    assert.equal(waterfall([{ model: "m", ttft: state("unavailable", "s", T0) }]), null);
  });
});

describe("time axis", () => {
  it("begins with the history on a new installation, never shorter than its least", () => {
    const window = { start: T0, end: T0 + 6 * H, minSpanMs: 10 * MIN };
    const young = [[row(T0 + 5 * H, "cold")], [row(T0 + 5 * H + MIN, "1.0")]];
    assert.equal(chartStart(young, window), T0 + 5 * H);
    assert.equal(chartStart([[row(T0 + 6 * H - MIN, "cold")]], window), T0 + 6 * H - 10 * MIN);
    assert.equal(chartStart([[row(T0 - H, "cold")], []], window), T0);
    assert.equal(chartStart([[row(T0 + 10 * MIN, "cold")]], window), T0);
    assert.equal(chartStart([], window), T0);
  });

  it("fills the chart with a demo's first minutes", () => {
    // The demo's morning: the entry added a minute and a half ago. Its rows span at
    // least half the chart, not the last tenth of a ten-minute one.
    const end = T0 + 6 * H;
    const window = { start: T0, end, minSpanMs: MIN_CHART_SPAN_MS };
    const first = end - 90 * S;
    assert.equal(chartStart([[row(first, "cold")]], window), end - MIN_CHART_SPAN_MS);
    assert.ok((end - first) / MIN_CHART_SPAN_MS >= 0.5);
    assert.equal(chartStart([[row(end - 5 * MIN, "cold")]], window), end - 5 * MIN);
  });

  it("picks round steps for spans from an hour to a month", () => {
    assert.equal(timeTicks(T0, T0 + H, 6).step, 10 * MIN);
    assert.equal(timeTicks(T0, T0 + 6 * H, 6).step, H);
    assert.equal(timeTicks(T0, T0 + 30 * 24 * H, 6).step, 7 * 24 * H);
    const { ticks } = timeTicks(T0 + 7 * MIN, T0 + 2 * H, 4);
    assert.deepEqual(ticks, [T0 + 30 * MIN, T0 + H, T0 + 90 * MIN, T0 + 2 * H]);
    // Round in local time: UTC+2 puts whole hours on the local clock's whole hours.
    const local = timeTicks(T0, T0 + 6 * H, 3, 2 * H).ticks;
    assert.ok(local.every((t) => (t + 2 * H) % (2 * H) === 0));
  });
});

describe("configuration", () => {
  const model = { name: "llama", warmth: "sensor.llama_warmth" };

  it("fills in the defaults and lists the entities", () => {
    const config = checkConfig({
      type: "custom:llm-warmth-card",
      models: [{ ...model, load: "sensor.llama_load", probe: { ttft: "sensor.llama_ttft" } }],
    });
    assert.equal(config.hours_to_show, 6);
    assert.deepEqual(config.gpus, []);
    assert.deepEqual(configEntities({ ...config, gpus: [{ total: "sensor.gpu_total" }] }), [
      "sensor.llama_warmth",
      "sensor.llama_load",
      "sensor.llama_ttft",
      "sensor.gpu_total",
    ]);
  });

  it("says what is wrong", () => {
    const cases = [
      [null, /Invalid configuration/],
      [{}, /models: list the models/],
      [{ models: [] }, /models: list the models/],
      [{ models: [{ name: "x" }] }, /models\[0\]: warmth/],
      [{ models: [model], hours_to_show: 0 }, /hours_to_show/],
      [{ models: [model], hours_to_show: "6" }, /hours_to_show/],
      [{ models: [{ ...model, vram: "not an id" }] }, /models\[0\]\.vram must be an entity id/],
      [{ models: [{ ...model, probe: { ttft: 3 } }] }, /models\[0\]\.probe\.ttft/],
      [{ models: [model], gpus: [{}] }, /gpus\[0\]: total/],
      [{ models: [model], gpus: [{ total: "sensor.t", other: "x" }] }, /gpus\[0\]\.other/],
    ];
    for (const [config, message] of cases) assert.throws(() => checkConfig(config), message);
  });

  it("names a model by its name, else its sensor's", () => {
    assert.equal(modelName(model, {}), "llama");
    const states = { "sensor.q": { attributes: { friendly_name: "Q warmth" } } };
    assert.equal(modelName({ warmth: "sensor.q" }, states), "Q warmth");
    assert.equal(modelName({ warmth: "sensor.r" }, states), "sensor.r");
  });

  it("says where a peer's model runs, and why its warmth is unknown", () => {
    const peer = (attributes) => ({ "sensor.m": { attributes } });
    const m = { warmth: "sensor.m" };
    assert.equal(modelHost(m, peer({})), "");
    assert.equal(modelHost(m, {}), "");
    assert.equal(
      modelHost(m, peer({ peer: "lab", peer_reading: "read", peer_server: "llama-swap lab" })),
      "on peer lab (shown by llama-swap lab)",
    );
    assert.equal(
      modelHost(m, peer({ peer: "lab", peer_reading: "not_added" })),
      "on peer lab (add it as an entry to see its warmth)",
    );
    assert.equal(
      modelHost(m, peer({ peer: "lab", peer_reading: "ambiguous" })),
      "on peer lab (several entries serve that model)",
    );
    assert.equal(
      modelHost(m, peer({ peer: "lab", peer_reading: "unreachable" })),
      "on peer lab (its entry cannot reach it)",
    );
    assert.equal(modelHost(m, peer({ peer: "lab", peer_reading: "read" })), "on peer lab");
  });
});

describe("the card's figures at their bounds", () => {
  it("reads every memory unit Home Assistant may give", () => {
    const cases = [
      ["B", 1],
      ["kB", 1e3],
      ["MB", 1e6],
      ["GB", 1e9],
      ["TB", 1e12],
      ["KiB", 1024],
      ["MiB", 1024 ** 2],
      ["GiB", 1024 ** 3],
      ["TiB", 1024 * 1024 * 1024 * 1024],
      [undefined, 1024 ** 3],
    ];
    for (const [unit, bytes] of cases) assert.equal(toBytes(3, unit), 3 * bytes, unit);
    assert.equal(toBytes(null, "GiB"), null);
  });

  it("writes seconds with a tenth below 10 s, whole below a minute, then minutes", () => {
    assert.equal(formatSeconds(9.94), "9.9 s");
    assert.equal(formatSeconds(10), "10 s");
    assert.equal(formatSeconds(10.4, false), "at least 10 s");
    assert.equal(formatSeconds(59.4), "59 s");
    assert.equal(formatSeconds(60), "1 min");
    assert.equal(formatSeconds(60.6), "1 min 1 s");
    assert.equal(formatSeconds(125), "2 min 5 s");
  });

  it("writes memory in GiB from one GiB on, in MiB below", () => {
    assert.equal(formatBytes(GIB), "1.0 GiB");
    assert.equal(formatBytes(GIB - 1024 ** 2), "1023 MiB");
    assert.equal(formatBytes(1.5 * GIB), "1.5 GiB");
  });

  it("takes the shortest round step that gives at most the ticks asked for", () => {
    const steps = [
      [1, MIN],
      [5, 5 * MIN],
      [10, 10 * MIN],
      [15, 15 * MIN],
      [30, 30 * MIN],
      [60, H],
      [120, 2 * H],
      [180, 3 * H],
      [360, 6 * H],
      [720, 12 * H],
      [1440, 24 * H],
      [2880, 48 * H],
      [10080, 7 * 24 * H],
    ];
    for (const [minutes, step] of steps) {
      // A span of exactly `count` steps takes that step; a minute more takes the next one.
      assert.equal(timeTicks(T0, T0 + 4 * minutes * MIN, 4).step, step, `${minutes} min`);
    }
    assert.equal(timeTicks(T0, T0 + 4 * MIN + 1, 4).step, 5 * MIN);
    // Past the longest step: the longest, however many ticks it gives.
    assert.equal(timeTicks(T0, T0 + 100 * 7 * 24 * H, 4).step, 7 * 24 * H);
    // A count below one is one.
    assert.equal(timeTicks(T0, T0 + 5 * MIN, 0).step, 5 * MIN);
    assert.equal(timeTicks(T0, T0 + 2 * MIN, 0).step, 5 * MIN);
  });

  it("puts ticks on the local clock's round times", () => {
    const offset = 2 * H; // a zone two hours ahead of UTC
    const start = Date.UTC(2026, 11, 1, 7, 20);
    const { step, ticks } = timeTicks(start, start + 4 * 3 * H, 4, offset);
    assert.equal(step, 3 * H);
    // 09:20 local: the first round three hours on the local clock is 12:00 local, 10:00 UTC.
    assert.equal(ticks[0], Date.UTC(2026, 11, 1, 10, 0));
    assert.ok(ticks.every((t) => (t + offset) % (3 * H) === 0));
  });

  it("accepts up to a year of hours", () => {
    const model = { warmth: "sensor.llama_warmth" };
    assert.equal(checkConfig({ models: [model], hours_to_show: 24 * 366 }).hours_to_show, 8784);
    assert.equal(checkConfig({ models: [model], hours_to_show: 0.5 }).hours_to_show, 0.5);
    assert.throws(() => checkConfig({ models: [model], hours_to_show: 24 * 366 + 0.5 }), /hours/);
    assert.throws(() => checkConfig({ models: [model], hours_to_show: -1 }), /hours/);
    assert.throws(() => checkConfig({ models: [null] }), /models\[0\]: warmth/);
    assert.throws(() => checkConfig({ models: ["sensor.x"] }), /models\[0\]: warmth/);
    assert.throws(() => checkConfig({ models: [model], gpus: [null] }), /gpus\[0\]: total/);
    assert.throws(() => checkConfig({ models: [model], gpus: ["sensor.t"] }), /gpus\[0\]: total/);
  });
});

describe("the waterfall's remainder", () => {
  const state = (value, unit) => ({
    state: String(value),
    attributes: { unit_of_measurement: unit },
    last_updated: new Date(T0).toISOString(),
  });
  const rest = (ttft, prefill) =>
    waterfall([{ model: "m", ttft: state(ttft, "ms"), prefill: state(prefill, "ms") }]).stages.find(
      (s) => s.key === "unreported",
    )?.ms ?? null;

  it("is a stage past half a percent of the time to first token, and from 50 ms", () => {
    assert.equal(rest(10000, 9930), 70); // 0.7 %
    assert.equal(rest(20000, 19900), null); // 0.5 %: rounding
    assert.equal(rest(1000, 950), 50); // it reads 0.1 s
    assert.equal(rest(1000, 994), null); // 0.6 %, but it would read 0.0 s
  });

  it("takes the queue out of the load only where both are told", () => {
    const result = waterfall([
      { model: "m", ttft: state(900, "ms"), load: state(800, "ms"), queue: state(900, "ms") },
    ]);
    // A queue longer than the load it is part of: no negative stage.
    assert.deepEqual(
      result.stages.map((s) => [s.key, s.ms]),
      [
        ["queue", 900],
        ["load", 0],
      ],
    );
    const queueOnly = waterfall([{ model: "m", ttft: state(900, "ms"), queue: state(300, "ms") }]);
    assert.deepEqual(
      queueOnly.stages.map((s) => s.key),
      ["queue", "unreported"],
    );
    const loadOnly = waterfall([{ model: "m", ttft: state(900, "ms"), load: state(800, "ms") }]);
    assert.deepEqual(loadOnly.stages[0], {
      key: "load",
      label: "queue and load",
      startMs: 0,
      ms: 800,
    });
  });

  it("dates a probe by its figures that carry a time only", () => {
    const result = waterfall([
      { model: "m", ttft: state(900, "ms"), name: "not a state", other: { state: "1" } },
    ]);
    assert.equal(result.updated, T0);
  });
});

describe("household", () => {
  const states = {
    "sensor.household_big_box": {
      state: "down",
      attributes: {
        friendly_name: "Household Big box",
        host: "gaming-pc",
        warm_models: [],
        models: { "qwen3:8b": { warmth: "cold", peer: null } },
        gpus: [{ name: "RTX 4090", total_gib: 24, used_gib: 3, headroom_gib: 19 }],
        agents: { "Big box": "qwen3:8b" },
      },
    },
    "sensor.household_nas": {
      state: "up",
      attributes: {
        friendly_name: "Household NAS",
        host: "nas",
        warm_models: ["llama3.2:3b"],
        models: {
          "llama3.2:3b": { warmth: "kept_warm", peer: null },
          "lab/tiny": { warmth: "warm", peer: "lab" },
        },
        gpus: [],
        agents: {},
      },
    },
    "conversation.house_assistant": {
      state: "2026-12-05T08:00:00+00:00",
      attributes: {
        friendly_name: "House assistant",
        primary_agent: "conversation.big_box",
        fallback_agents: ["conversation.nas"],
        agent: "conversation.nas",
        reason: "fallback_primary_down",
        agent_server: "NAS",
        agent_model: "llama3.2:3b",
        routed_at: "2026-12-05T08:00:00+00:00",
      },
    },
    "conversation.nas": { state: "unknown", attributes: { friendly_name: "NAS assistant" } },
  };
  const config = {
    household: {
      servers: ["sensor.household_nas", "sensor.household_big_box", "sensor.household_gone"],
      assistants: ["conversation.house_assistant", "conversation.gone"],
    },
  };

  it("groups the servers by host, each with its reach, models, GPUs and agents", () => {
    const view = household(config, states);
    assert.deepEqual(
      view.hosts.map((h) => [h.host, h.servers.map((s) => [s.name, s.up])]),
      [
        ["gaming-pc", [["Big box", false]]],
        ["nas", [["NAS", true]]],
        ["unknown host", [["sensor.household_gone", null]]],
      ],
    );
    const nas = view.hosts[1].servers[0];
    assert.deepEqual(nas.warm, ["llama3.2:3b"]);
    assert.deepEqual(nas.models[1], { name: "lab/tiny", warmth: "warm", peer: "lab" });
    const big = view.hosts[0].servers[0];
    assert.equal(big.gpus[0].headroom_gib, 19);
    assert.deepEqual(big.agents, [{ agent: "Big box", model: "qwen3:8b" }]);
  });

  it("says which agent answered each assistant's last turn, and why, in words", () => {
    const [house, gone] = household(config, states).assistants;
    // Agents by their names where their states are there, else by their entity ids.
    assert.equal(house.agent, "NAS assistant");
    assert.equal(house.primary, "conversation.big_box");
    assert.equal(house.reason, "fall-back: primary's server down");
    assert.equal(house.at, Date.UTC(2026, 11, 5, 8, 0, 0));
    assert.deepEqual(house.fallbacks, ["NAS assistant"]);
    assert.equal(gone.exists, false);
  });

  it("a household alone is a valid card; a household without entities is not", () => {
    const checked = checkConfig({ household: { servers: ["sensor.household_nas"] } });
    assert.deepEqual(checked.models, []);
    assert.deepEqual(configEntities(checked), ["sensor.household_nas"]);
    assert.throws(() => checkConfig({ household: {} }), /household: list the servers/);
    assert.throws(() => checkConfig({ household: "yes" }), /household: give servers/);
    assert.throws(
      () => checkConfig({ household: { servers: ["not an id"] } }),
      /household\[0\] must be an entity id/,
    );
    assert.throws(() => checkConfig({}), /models: list the models/);
  });
});

describe("hiddenChanges", () => {
  it("says one change in the singular", () => {
    assert.equal(hiddenChanges(1), "1 change too short to draw");
    assert.equal(hiddenChanges(3), "3 changes too short to draw");
  });
});
