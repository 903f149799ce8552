// The card's words in every language the integration speaks: `node --test tests/frontend/`.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";

import {
  EN,
  LANGUAGES,
  decimal,
  setLanguage,
  t,
} from "../../custom_components/llm_warmth/frontend/llm-warmth-card-words.js";
import {
  coldStartWords,
  formatBytes,
  formatSeconds,
  hiddenChanges,
  household,
  loadWords,
  modelHost,
} from "../../custom_components/llm_warmth/frontend/llm-warmth-card-data.js";
import { waterfall } from "../../custom_components/llm_warmth/frontend/llm-warmth-card-charts.js";
import { signalsView } from "../../custom_components/llm_warmth/frontend/llm-warmth-card-signals.js";
import { stateLabel } from "../../custom_components/llm_warmth/frontend/llm-warmth-card-style.js";

// The integration's languages (custom_components/llm_warmth/translations/): the card's too.
const SPOKEN = ["de", "en", "es", "fr", "nl"];
const placeholders = (text) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

afterEach(() => setLanguage("en"));

describe("the card's words", () => {
  it("come in each language of the integration, with English's keys", () => {
    assert.deepEqual(Object.keys(LANGUAGES).sort(), SPOKEN);
    for (const [language, words] of Object.entries(LANGUAGES)) {
      assert.deepEqual(Object.keys(words).sort(), Object.keys(EN).sort(), language);
    }
  });

  it("keep English's placeholders, and no word is empty or left in English", () => {
    for (const [language, words] of Object.entries(LANGUAGES)) {
      for (const [key, english] of Object.entries(EN)) {
        assert.deepEqual(placeholders(words[key]), placeholders(english), `${language}.${key}`);
        assert.ok(words[key].trim(), `${language}.${key} is empty`);
      }
      if (language === "en") continue;
      // Words a language shares with English ("warm", "total", "Host {host}"...) are few.
      const same = Object.keys(EN).filter((key) => words[key] === EN[key]);
      assert.ok(same.length <= 8, `${language}: ${same.length} words as in English: ${same}`);
    }
  });

  it("follow Home Assistant's language, its region aside; English where none fits", () => {
    setLanguage("de");
    assert.equal(t("legend_cold_start"), "Kaltstart");
    setLanguage("nl-BE");
    assert.equal(t("legend_cold_start"), "koude start");
    setLanguage("pt-BR");
    assert.equal(t("legend_cold_start"), "cold start");
    setLanguage(undefined);
    assert.equal(t("legend_cold_start"), "cold start");
  });

  it("fill their placeholders, and leave one without a value as written", () => {
    assert.equal(t("host", { host: "gpu-box" }), "Host gpu-box");
    assert.equal(t("host"), "Host {host}");
    assert.equal(t("no_such_key"), "no_such_key");
  });

  it("write figures as the language does", () => {
    setLanguage("de");
    assert.equal(formatSeconds(7.5, false), "mindestens 7,5 s");
    assert.equal(formatSeconds(75), "1 min 15 s");
    assert.equal(formatBytes(6 * 1024 ** 3), "6,0 GiB");
    assert.equal(decimal(0.25, 1), "0,3");
    // No thousands separator: "1234,0 GiB", never "1.234,0 GiB".
    assert.equal(formatBytes(1234 * 1024 ** 3), "1234,0 GiB");
    setLanguage("en");
    assert.equal(formatSeconds(7.5, false), "at least 7.5 s");
    assert.equal(formatBytes(1.5 * 1024 ** 3), "1.5 GiB");
  });

  it("say the timeline, the loads and the cold starts in the language", () => {
    setLanguage("fr");
    assert.equal(hiddenChanges(1), "1 changement trop court pour être dessiné");
    assert.equal(hiddenChanges(3), "3 changements trop courts pour être dessinés");
    assert.equal(stateLabel("kept_warm"), "chaud, sans échéance");
    assert.equal(stateLabel("asleep"), "asleep"); // a state the card does not know: as is
    assert.deepEqual(loadWords({ seconds: 3, exact: false }), {
      before: "dernier chargement",
      figure: "au moins 3,0 s",
      after: "(les interrogations en ont vu une partie)",
    });
    // The span agrees with its heading: one hour, several, days.
    assert.equal(t("warmth_last", { span: t("span_hour") }), "Chaleur sur la dernière heure");
    assert.equal(t("warmth_last", { span: t("span_days", { count: 7 }) }), "Chaleur sur les 7 derniers jours");
    setLanguage("es");
    assert.equal(t("warmth_last", { span: t("span_hour") }), "Calor en la última hora");
    assert.equal(coldStartWords({ seconds: 7.8, exact: true, waitedBy: "la prueba" }).before, "la prueba esperó");
  });

  it("say a peer, an assistant's route and the probe's stages in the language", () => {
    setLanguage("nl");
    const states = { "sensor.m": { attributes: { peer: "lab", peer_reading: "not_added" } } };
    assert.equal(modelHost({ warmth: "sensor.m" }, states), "op peer lab (voeg het toe als item om zijn warmte te zien)");
    const view = household(
      { household: { servers: [], assistants: ["conversation.house"] } },
      {
        "conversation.house": {
          state: "2026-01-01T00:00:00+00:00",
          attributes: { friendly_name: "House", primary: "a", fallbacks: [], reason: "fallback_primary_cold", agent: "b" },
        },
      },
    );
    assert.equal(view.assistants[0].reason, "reserve: hoofdagent koud");
    const probe = {
      model: "m",
      ttft: { state: "1000", attributes: { unit_of_measurement: "ms" }, last_updated: "2026-01-01T00:00:00Z" },
      load: { state: "600", attributes: { unit_of_measurement: "ms" }, last_updated: "2026-01-01T00:00:00Z" },
      prefill: { state: "300", attributes: { unit_of_measurement: "ms" }, last_updated: "2026-01-01T00:00:00Z" },
    };
    const labels = waterfall([probe]).stages.map((s) => s.label);
    assert.deepEqual(labels, ["wachtrij en laden", "prompt lezen", "niet gemeld"]);
  });

  it("say the warming signals in the language", () => {
    setLanguage("de");
    const [model] = signalsView([{ warmth: "sensor.m", signals: "sensor.s" }], {
      "sensor.m": { attributes: {} },
      "sensor.s": { state: "0", attributes: { reason: "learning", warmed_by: "clock", signals: [] } },
    });
    assert.equal(model.reason, "lernt noch: noch kein Signal geht seinen Nutzungen voraus");
    assert.equal(model.warmedBy, "nach der Uhr");
  });
});
