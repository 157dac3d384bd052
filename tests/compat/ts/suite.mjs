// Hindsight's published TypeScript client (@vectorize-io/hindsight-client
// 0.9.1) against a real `memstream serve`. tests/compat TestHindsightTSClient
// starts the server and runs this file with node:
//
//   HS_URL        base URL of the server
//   HS_LLM_URL    base URL of a second server whose LLM is a fake
//                 OpenAI-compatible one (the LLM-trace checks)
//   HS_ADMIN_KEY  a bearer key with admin scope on every bank
//   HS_BANK_KEY   a key with write scope on bank "scoped-bank" only
//   HS_RESULTS    where to write the per-method results (JSON)
//
// Every check names the client methods it covers: HindsightClient's
// methods (HindsightClient.retain) and the generated low-level functions
// (sdk.getGraph). The method list is read from the installed package, so a
// method nobody checks shows up as NOT TESTED. A check marked xfail must
// fail as its reason says (the client disagrees with Hindsight 1.1.0); if it
// passes, the suite fails. Any 5xx answer fails the check that got it.
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createHmac, randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  HindsightClient,
  HindsightError,
  createClient,
  createConfig,
  recallResponseToPromptString,
  sdk,
} from "@vectorize-io/hindsight-client";

const { HS_URL, HS_LLM_URL, HS_ADMIN_KEY, HS_BANK_KEY, HS_RESULTS } = process.env;

// --- what the installed client has --------------------------------------

// dist/index.js → the package's directory.
const pkgDir = dirname(dirname(createRequire(import.meta.url).resolve("@vectorize-io/hindsight-client")));
const sdkSource = readFileSync(join(pkgDir, "generated", "sdk.gen.ts"), "utf8");
const indexSource = readFileSync(join(pkgDir, "src", "index.ts"), "utf8");
const privateNames = new Set(
  [...readFileSync(join(pkgDir, "dist", "index.d.ts"), "utf8").matchAll(/^\s+private (\w+)/gm)].map((m) => m[1])
);

function sdkRoutes() {
  // One block per generated function, with the doc comment before it.
  const out = {};
  const starts = [...sdkSource.matchAll(/^export const (\w+) = /gm)];
  starts.forEach((m, i) => {
    const body = sdkSource.slice(m.index, starts[i + 1]?.index ?? sdkSource.length);
    const before = sdkSource.slice(starts[i - 1]?.index ?? 0, m.index);
    const doc = before.slice(before.lastIndexOf("/**"));
    const call = body.match(/\.(get|post|put|patch|delete)<\s*(\w+)Responses/);
    const url = body.match(/url: "([^"]+)"/);
    if (!call || !url) return;
    out[m[1]] = { route: `${call[1].toUpperCase()} ${url[1]}`, deprecated: doc.includes("@deprecated"), responses: `${call[2]}Responses` };
  });
  return out;
}

// The object types of generated/types.gen.ts: each field, whether it is
// required, and the named type it holds (X, Array<X>, either | null).
const objectTypes = {};
for (const m of readFileSync(join(pkgDir, "generated", "types.gen.ts"), "utf8").matchAll(/^export type (\w+) = \{\n([\s\S]*?)\n\};/gm)) {
  objectTypes[m[1]] = [...m[2].matchAll(/^  (\w+)(\??): ([^\n]*?);?$/gm)].map((f) => {
    const r = f[3].match(/^(?:Array<(\w+)>|(\w+))(?: \| null)?$/);
    return { name: f[1], required: f[2] === "", ref: r ? r[1] ?? r[2] : null, array: Boolean(r?.[1]) };
  });
}

// missingFields lists the required fields of typeName (and of the named
// types inside it) that value lacks: the client declares them, so code
// written against it reads them.
function missingFields(value, typeName, path, out, depth = 0) {
  const fields = objectTypes[typeName];
  if (!fields || value === null || typeof value !== "object" || Array.isArray(value) || depth > 4) return out;
  for (const f of fields) {
    if (f.required && !(f.name in value)) out.push(`${path}.${f.name}`);
    const v = value[f.name];
    if (!f.ref || v == null) continue;
    if (f.array && Array.isArray(v)) v.slice(0, 3).forEach((x, i) => missingFields(x, f.ref, `${path}.${f.name}[${i}]`, out, depth + 1));
    else if (!f.array) missingFields(v, f.ref, `${path}.${f.name}`, out, depth + 1);
  }
  return out;
}

function clientMethods(routes) {
  // Each method's block of src/index.ts names the generated function it
  // calls, or the method it delegates to (setMission → createBank).
  const blocks = {};
  const parts = indexSource.split(/\n  async (?=\w+\()/);
  for (const p of parts.slice(1)) blocks[p.match(/^(\w+)/)[1]] = p;
  const routeOf = (name, depth = 0) => {
    const b = blocks[name] ?? "";
    const s = b.match(/sdk\.(\w+)\(/);
    if (s) return routes[s[1]]?.route ?? "";
    const d = b.match(/this\.(\w+)\(/);
    return d && depth < 3 ? routeOf(d[1], depth + 1) : "";
  };
  const out = {};
  for (const name of Object.getOwnPropertyNames(HindsightClient.prototype)) {
    if (name === "constructor" || privateNames.has(name)) continue;
    out[`HindsightClient.${name}`] = {
      route: routeOf(name),
      deprecated: new RegExp(`@deprecated[^\\n]*\\n(?:\\s*\\*[^\\n]*\\n)*\\s*\\*/\\n  async ${name}\\(`).test(indexSource),
    };
  }
  return out;
}

const routes = sdkRoutes();
const unparsed = Object.keys(sdk).filter((n) => !routes[n]);
if (unparsed.length) {
  console.log(`FAIL reading generated/sdk.gen.ts: no route for ${unparsed.join(", ")}`);
  process.exit(1);
}
const methods = { ...clientMethods(routes) };
for (const name of Object.keys(sdk)) {
  methods[`sdk.${name}`] = routes[name] ?? { route: "", deprecated: false };
}
// The package's one helper function: it formats a recall answer, no route.
methods.recallResponseToPromptString = { route: "", deprecated: false };

// --- the harness ----------------------------------------------------------

// Each generated function's route as a pattern, literal segments first
// (…/memories/list before …/memories/{memory_id}), with its success type.
const routePatterns = Object.entries(routes)
  .map(([name, r]) => {
    const [method, path] = r.route.split(" ");
    const success = objectTypes[r.responses]?.find((f) => /^20\d$/.test(f.name))?.ref;
    return { name, method, re: new RegExp("^" + path.replace(/\{[^}]+\}/g, "[^/]+") + "$"), params: (path.match(/\{/g) ?? []).length, success };
  })
  .sort((a, b) => a.params - b.params);

// Required fields the client declares that Hindsight 1.1.0 itself does not
// send: the client (0.9.1) is older there, and memstream answers as 1.1.0.
const declaredButNotSent = {
  "AuditLogListResponse.items[].request": "client 0.9.1 types list items as full entries; Hindsight 1.1.0 lists AuditLogSummary (no request/response bodies; get one entry for them), as memstream does",
  "AuditLogListResponse.items[].response": "client 0.9.1 types list items as full entries; Hindsight 1.1.0 lists AuditLogSummary (no request/response bodies; get one entry for them), as memstream does",
};
const excused = {}; // sdk function -> why a declared field is absent

let serverErrors = [];
let shapeErrors = [];
let shapesChecked = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const resp = await realFetch(input, init);
  const req = input instanceof Request ? input : new Request(input, init);
  const path = new URL(req.url).pathname;
  if (resp.status >= 500) {
    serverErrors.push(`${req.method} ${path}: ${resp.status} ${await resp.clone().text()}`.slice(0, 300));
  }
  const route = routePatterns.find((p) => p.method === req.method && p.re.test(path));
  if (resp.ok && route?.success && (resp.headers.get("content-type") ?? "").includes("json")) {
    shapesChecked++;
    const gaps = missingFields(await resp.clone().json(), route.success, route.success, []).filter((g) => {
      const why = declaredButNotSent[g.replace(/\[\d+\]/g, "[]")];
      if (why) excused[`sdk.${route.name}`] = why;
      return !why;
    });
    if (gaps.length) shapeErrors.push(`sdk.${route.name} answer lacks required ${gaps.join(", ")}`);
  }
  return resp;
};

const checks = [];
const check = (name, covers, fn, opts = {}) => checks.push({ name, covers, fn, ...opts });

class AssertionError extends Error {}
function ok(cond, msg, detail) {
  if (!cond) throw new AssertionError(msg + (detail === undefined ? "" : `: ${JSON.stringify(detail)?.slice(0, 300)}`));
}
function eq(got, want, msg) {
  ok(JSON.stringify(got) === JSON.stringify(want), `${msg}: got ${JSON.stringify(got)?.slice(0, 200)}, want ${JSON.stringify(want)}`);
}

// rejects runs fn and returns the HindsightError it throws.
async function rejects(fn, msg) {
  try {
    await fn();
  } catch (e) {
    ok(e instanceof HindsightError || e instanceof Error, `${msg}: not an error`, String(e));
    return e;
  }
  throw new AssertionError(`${msg}: no error`);
}

const hs = new HindsightClient({ baseUrl: HS_URL, apiKey: HS_ADMIN_KEY });
// The generated functions take a client of their own (the package exports
// createClient/createConfig for that).
const low = createClient(createConfig({ baseUrl: HS_URL, headers: { Authorization: `Bearer ${HS_ADMIN_KEY}` } }));

// call runs a generated function and returns what it parsed, or throws
// with the status and error body.
async function call(fn, opts = {}) {
  const r = await fn({ client: low, ...opts });
  if (r.error !== undefined || !r.response?.ok) {
    const e = new AssertionError(`sdk.${fn.name}: ${r.response?.status} ${JSON.stringify(r.error)?.slice(0, 300)}`);
    e.status = r.response?.status;
    throw e;
  }
  return r.data;
}

// status runs a generated function that must fail, and returns its status.
async function status(fn, opts = {}) {
  const r = await fn({ client: low, ...opts });
  ok(r.error !== undefined, `sdk.${fn.name} should have failed`, r.data);
  return r.response.status;
}

const fresh = (prefix = "ts") => `${prefix}-${randomUUID().slice(0, 10)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitUntil(fn, ms = 60000, every = 200) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await sleep(every);
  }
  return last;
}
async function waitOp(bank, id, ms = 60000) {
  const op = await waitUntil(async () => {
    const s = await call(sdk.getOperationStatus, { path: { bank_id: bank, operation_id: id } });
    return ["completed", "failed", "cancelled"].includes(s.status) && s;
  }, ms);
  ok(op && op.status === "completed", `operation ${id} did not complete`, op);
  return op;
}

// --- the seeded bank --------------------------------------------------------

const seeded = fresh("seeded");
async function seed() {
  await hs.createBank(seeded, { name: "Seeded bank", reflectMission: "Remember what Alice says." });
  const r = await hs.retainBatch(seeded, [
    {
      content: "Alice moved to Lisbon in March 2024 and works at Acme as a data engineer.",
      context: "profile", tags: ["user:alice"], timestamp: "2024-03-02T10:00:00Z",
      metadata: { source: "chat" }, document_id: "doc-alice",
    },
    {
      content: "Alice prefers green tea over coffee, especially in the morning.",
      tags: ["user:alice"], timestamp: new Date("2024-03-05T08:00:00Z"), document_id: "doc-alice",
    },
    { content: "Bob fixed the outage ticket INC-48213 on the payments cluster with Alice.", tags: ["team:ops"], document_id: "doc-bob" },
  ]);
  ok(r.success && r.items_count === 3 && r.async === false, "seed retainBatch", r);
}

// --- monitoring --------------------------------------------------------------

check("health", ["sdk.healthEndpointHealthGet", "sdk.getReadiness", "sdk.getLiveness"], async () => {
  const h = await call(sdk.healthEndpointHealthGet);
  ok(["ok", "healthy"].includes(h.status), "health status", h);
  eq((await call(sdk.getReadiness)).ready, true, "ready");
  const live = await call(sdk.getLiveness);
  ok(live.status === "alive" && live.version && live.uptime_seconds >= 0, "liveness", live);
});

check("version", ["HindsightClient.getVersion", "sdk.getVersion"], async () => {
  const v = await hs.getVersion();
  ok(v.api_version && v.features?.bank_config_api === true && typeof v.features.observations === "boolean", "version", v);
  eq((await call(sdk.getVersion)).api_version, v.api_version, "sdk version");
});

check("metrics", ["sdk.metricsEndpointMetricsGet"], async () => {
  const text = await call(sdk.metricsEndpointMetricsGet, { parseAs: "text" });
  ok(typeof text === "string" && text.includes("memstream_api_request_seconds"), "metrics text");
});

// --- banks ------------------------------------------------------------------------

check("createBank", ["HindsightClient.createBank", "sdk.createOrUpdateBank"], async () => {
  const bank = fresh();
  const p = await hs.createBank(bank, {
    name: "Compat", reflectMission: "Help Alice.", dispositionSkepticism: 4, dispositionLiteralism: 2,
    dispositionEmpathy: 5, retainMission: "Only facts about people.", enableObservations: true,
    retainExtractionMode: "concise", retainCustomInstructions: "Keep names.", retainChunkSize: 3000,
    retainStructuredChunkSize: 2000, observationsMission: "Track preferences.", enableTemporalRetrieval: true,
    enableGraphRetrieval: true, enableReranking: false,
  });
  ok(p.bank_id === bank && p.name === "Compat" && p.mission === "Help Alice.", "profile", p);
  eq([p.disposition.skepticism, p.disposition.literalism, p.disposition.empathy], [4, 2, 5], "disposition");
  const again = await hs.createBank(bank, { mission: "Answer briefly.", background: "A test bank.", disposition: { skepticism: 1, literalism: 5, empathy: 3 } });
  ok(again.mission === "Answer briefly." && again.disposition.skepticism === 1, "update through createBank", again);
  const cfg = await hs.getBankConfig(bank);
  eq(cfg.config.retain_mission, "Only facts about people.", "retain_mission stored");
  eq([cfg.config.retain_chunk_size, cfg.config.enable_reranking, cfg.config.observations_mission], [3000, false, "Track preferences."], "options stored");
});

check("setMission", ["HindsightClient.setMission"], async () => {
  const bank = fresh();
  await hs.createBank(bank);
  const p = await hs.setMission(bank, "New mission");
  eq(p.mission, "New mission", "mission");
  eq((await hs.getBankConfig(bank)).config.reflect_mission, "New mission", "config reflect_mission");
});

check("getBankProfile", ["HindsightClient.getBankProfile", "sdk.getBankProfile"], async () => {
  const p = await hs.getBankProfile(seeded);
  ok(p.bank_id === seeded && p.name === "Seeded bank", "profile", p);
}, { xfail: "Hindsight 1.1.0 removed GET …/profile (410, as memstream answers); client 0.9.1 still calls it: use getBankConfig", xfailStatus: 410 });

check("bank config", ["HindsightClient.getBankConfig", "HindsightClient.updateBankConfig", "HindsightClient.resetBankConfig",
  "sdk.getBankConfig", "sdk.updateBankConfig", "sdk.resetBankConfig"], async () => {
  const bank = fresh();
  await hs.createBank(bank);
  const cfg = await hs.getBankConfig(bank);
  ok(cfg.bank_id === bank && cfg.config && JSON.stringify(cfg.overrides) === "{}", "fresh config", cfg);
  const upd = await hs.updateBankConfig(bank, {
    reflectMission: "Answer as a colleague.", retainMission: "Only facts about work.", retainExtractionMode: "verbose",
    retainCustomInstructions: "Keep dates.", retainChunkSize: 2500, retainStructuredChunkSize: 1500,
    enableObservations: true, observationsMission: "Track preferences.", enableTemporalRetrieval: false,
    enableGraphRetrieval: true, enableReranking: true, dispositionSkepticism: 5, dispositionLiteralism: 1, dispositionEmpathy: 2,
  });
  ok(upd.overrides.retain_mission === "Only facts about work." && upd.config.disposition_skepticism === 5, "updated", upd);
  eq([upd.config.reflect_mission, upd.config.retain_chunk_size, upd.config.disposition_empathy, upd.config.enable_temporal_retrieval],
    ["Answer as a colleague.", 2500, 2, false], "every option stored");
  const e = await rejects(() => hs.updateBankConfig(bank, { dispositionSkepticism: 9 }), "out of range");
  ok([400, 422].includes(e.statusCode), "bad value is a client error", e.statusCode);
  const reset = await hs.resetBankConfig(bank);
  eq(reset.overrides, {}, "reset overrides");
});

check("deleteBank", ["HindsightClient.deleteBank", "sdk.deleteBank"], async () => {
  const bank = fresh();
  await hs.createBank(bank);
  await hs.deleteBank(bank);
  const e = await rejects(() => hs.getBankConfig(bank), "deleted bank");
  eq(e.statusCode, 404, "status");
  // Hindsight's error body carries `detail`, which the client reports.
  ok(typeof e.details === "string" && e.details.length > 0 && e.message === `getBankConfig failed: ${JSON.stringify(e.details)}`, "error detail", e.message);
  await rejects(() => hs.deleteBank(bank), "deleting it again");
});

check("list and update banks", ["sdk.listBanks", "sdk.updateBank"], async () => {
  const out = await call(sdk.listBanks, { query: { limit: 1000 } });
  const item = out.banks.find((b) => b.bank_id === seeded);
  ok(item && item.name === "Seeded bank", "seeded bank listed", out.banks.length);
  const bank = fresh();
  await hs.createBank(bank);
  const p = await call(sdk.updateBank, { path: { bank_id: bank }, body: { name: "Renamed" } });
  eq(p.name, "Renamed", "renamed");
});

check("stats and timeseries", ["sdk.getAgentStats", "sdk.getMemoriesTimeseries"], async () => {
  const st = await call(sdk.getAgentStats, { path: { bank_id: seeded } });
  ok(st.bank_id === seeded && st.total_nodes >= 3 && st.total_documents === 2, "stats", st);
  const ts = await call(sdk.getMemoriesTimeseries, { path: { bank_id: seeded }, query: { period: "30d" } });
  ok(ts.bank_id === seeded && ts.period === "30d", "timeseries", ts);
  ok(ts.buckets.reduce((n, b) => n + b.world + b.experience + b.observation, 0) >= 3, "timeseries counts", ts.buckets);
});

check("bank LLM health", ["sdk.testBankLlm"], async () => {
  const out = await call(sdk.testBankLlm, { path: { bank_id: seeded } });
  ok(out.bank_id === seeded && out.operations.every((o) => ["connected", "not_configured"].includes(o.status)), "llm health", out);
});

check("consolidation", ["sdk.triggerConsolidation", "sdk.recoverConsolidation", "sdk.clearObservations"], async () => {
  const out = await call(sdk.triggerConsolidation, { path: { bank_id: seeded } });
  ok(out.operation_id, "operation id", out);
  await waitOp(seeded, out.operation_id);
  const rec = await call(sdk.recoverConsolidation, { path: { bank_id: seeded } });
  ok(rec.retried_count >= 0, "recover", rec);
  const bank = fresh();
  await hs.retain(bank, "Carol runs the Berlin office and likes hiking.");
  const cl = await call(sdk.clearObservations, { path: { bank_id: bank } });
  ok(cl.success === true, "clear observations", cl);
  eq((await hs.listMemories(bank, { type: "observation" })).total, 0, "no observations left");
});

check("retired bank routes", ["sdk.updateBankDisposition", "sdk.addBankBackground", "sdk.regenerateEntityObservations", "sdk.exportDocumentsSyncRemoved"], async () => {
  // Deprecated in the client; Hindsight 1.1.0 answers 410 to each.
  eq(await status(sdk.updateBankDisposition, { path: { bank_id: seeded }, body: { disposition: { skepticism: 3, literalism: 3, empathy: 3 } } }), 410, "profile PUT");
  eq(await status(sdk.addBankBackground, { path: { bank_id: seeded }, body: { content: "x" } }), 410, "background");
  eq(await status(sdk.regenerateEntityObservations, { path: { bank_id: seeded, entity_id: randomUUID() } }), 410, "regenerate");
  eq(await status(sdk.exportDocumentsSyncRemoved, { path: { bank_id: seeded } }), 410, "sync export");
});

// --- retain --------------------------------------------------------------------------

check("retain", ["HindsightClient.retain", "sdk.retainMemories"], async () => {
  const bank = fresh();
  const r = await hs.retain(bank, "Dana adopted a cat named Miso in June.", {
    context: "pets", timestamp: new Date("2024-06-10T12:00:00Z"), documentId: "doc-dana", metadata: { k: "v" },
    tags: ["user:dana"], entities: [{ text: "Dana", type: "PERSON" }], updateMode: "append",
    observationScopes: "per_tag", strategy: "default",
  });
  ok(r.success === true && r.bank_id === bank && r.items_count === 1 && r.async === false, "retain answer", r);
  const lst = await hs.listMemories(bank);
  ok(lst.total >= 1 && lst.items.some((m) => m.text.includes("Miso")), "stored at once", lst.items);
  const e = await rejects(() => hs.retain(bank, "bad time", { timestamp: "next tuesday-ish" }), "bad timestamp");
  ok([400, 422].includes(e.statusCode) && JSON.stringify(e.details).includes("timestamp"), "names the field", e.details);
});

check("retainBatch async, idempotent", ["HindsightClient.retainBatch", "sdk.getOperationStatus"], async () => {
  const bank = fresh();
  const opId = randomUUID();
  const items = [0, 1, 2, 3, 4].map((i) => ({ content: `Fact number ${i} about Frank's garden.`, observation_scopes: [["home"]], update_mode: "append" }));
  const r = await hs.retainBatch(bank, items, { documentId: "garden", documentTags: ["home"], async: true, operationId: opId });
  ok(r.success && r.async === true && r.items_count === 5 && r.operation_id, "async answer", r);
  const again = await hs.retainBatch(bank, items, { documentId: "garden", documentTags: ["home"], async: true, operationId: opId });
  eq(again.operation_id, r.operation_id, "a retry answers the first operation");
  await waitOp(bank, r.operation_id);
  const docs = await hs.listDocuments(bank);
  ok(docs.items.length === 1 && docs.items[0].id === "garden" && docs.items[0].tags.includes("home"), "one document", docs.items);
  eq((await hs.listMemories(bank, { documentId: "garden" })).items.filter((m) => m.text.includes("garden")).length >= 5, true, "five facts once");
});

check("retainFiles", ["HindsightClient.retainFiles", "sdk.fileRetain"], async () => {
  const bank = fresh();
  const file = new File(["# Notes\n\nJulia's passport expires in 2031.\n"], "notes.md", { type: "text/markdown" });
  const out = await hs.retainFiles(bank, [file], { context: "uploads" });
  ok(out.operation_ids?.length === 1, "one operation", out);
  await waitOp(bank, out.operation_ids[0]);
  const docs = await hs.listDocuments(bank);
  eq(docs.items.length, 1, "one document");
  const lst = await hs.listMemories(bank, { q: "passport" });
  ok(lst.total >= 1, "the file's fact is stored", lst);
  const meta = await hs.retainFiles(bank, [new Blob(["Julia renews it in Porto."], { type: "text/plain" })], {
    filesMetadata: [{ context: "travel", document_id: "julia-travel", tags: ["user:julia"], metadata: { src: "upload" } }],
  });
  await waitOp(bank, meta.operation_ids[0]);
  const d = await hs.getDocument(bank, "julia-travel");
  ok(d && d.tags.includes("user:julia"), "files_metadata applied", d);
});

// --- recall and reflect ---------------------------------------------------------------

check("recall", ["HindsightClient.recall", "sdk.recallMemories", "recallResponseToPromptString"], async () => {
  const r = await hs.recall(seeded, "Where does Alice live?");
  ok(r.results.length && r.results.some((x) => x.text.includes("Lisbon")), "Lisbon recalled", r.results);
  const top = r.results[0];
  ok(top.id && ["world", "experience", "observation"].includes(top.type), "result shape", top);
  const full = await hs.recall(seeded, "What does Alice drink?", {
    types: ["world", "experience"], maxTokens: 2000, budget: "high", trace: true, queryTimestamp: "2024-04-01T00:00:00",
    includeEntities: true, maxEntityTokens: 300, includeChunks: true, maxChunkTokens: 2000, includeSourceFacts: true, maxSourceFactsTokens: 1000,
    tags: ["user:alice"], tagsMatch: "any_strict", preferObservations: false, minScores: { final: 0 },
  });
  ok(full.results.length && full.results.every((x) => (x.tags ?? []).includes("user:alice")), "tag filter", full.results);
  ok(full.results.some((x) => x.text.includes("tea")), "tea recalled", full.results);
  ok(full.trace != null, "trace");
  ok(full.entities && Object.entries(full.entities).every(([k, v]) => k === v.canonical_name && v.entity_id), "entities map", full.entities);
  ok(full.chunks && Object.values(full.chunks).every((c) => c.text), "chunks", full.chunks);
  const prompt = recallResponseToPromptString(full);
  ok(prompt.startsWith("FACTS:") && prompt.includes("tea") && prompt.includes("source_chunk"), "prompt string", prompt.slice(0, 300));
  const noEnt = await hs.recall(seeded, "Alice", { includeEntities: false });
  ok(noEnt.results.length && noEnt.entities == null, "entities off", noEnt.entities);
  const grouped = await hs.recall(seeded, "ticket outage", { tagGroups: [{ tags: ["team:ops"], match: "any_strict" }] });
  ok(grouped.results.length && grouped.results.every((x) => (x.tags ?? []).includes("team:ops")), "tag group", grouped.results);
  const not = await hs.recall(seeded, "ticket outage", { tagGroups: [{ not: { tags: ["team:ops"], match: "any_strict" } }] });
  ok(not.results.every((x) => !(x.tags ?? []).includes("team:ops")), "not group", not.results);
});

check("reflect", ["HindsightClient.reflect", "sdk.reflect"], async () => {
  const r = await hs.reflect(seeded, "Where does Alice live and what does she drink?", {
    budget: "mid", context: "a quiz", tags: ["user:alice"], includeFacts: true, includeToolCalls: true,
    includeToolCallOutput: false, factTypes: ["world", "experience", "observation"], excludeMentalModels: true,
  });
  ok(r.text, "text", r);
  ok(r.based_on?.memories?.length && r.based_on.memories.every((m) => m.text), "based_on", r.based_on);
  ok(r.trace && Array.isArray(r.trace.tool_calls), "trace", r.trace);
  const grouped = await hs.reflect(seeded, "What ticket did Bob fix?", {
    tagGroups: [{ tags: ["team:ops"], match: "any_strict" }], excludeMentalModelIds: [randomUUID()], includeFacts: true,
  });
  ok(grouped.text && grouped.based_on.memories.every((m) => (m.tags ?? ["team:ops"]).includes("team:ops")), "tag groups", grouped.based_on);
  const strict = await hs.reflect(seeded, "What does Alice drink?", { tags: ["user:alice"], tagsMatch: "all_strict" });
  ok(strict.text, "tags_match", strict);
  const plain = await hs.reflect(seeded, "Where does Alice live?");
  ok(plain.text && plain.based_on == null, "plain reflect", plain);
  const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
  const s = await hs.reflect(seeded, "Which city does Alice live in?", { responseSchema: schema });
  ok(typeof s.structured_output?.city === "string", "structured output", s.structured_output);
});

// --- memories ---------------------------------------------------------------------------

check("listMemories", ["HindsightClient.listMemories", "sdk.listMemories"], async () => {
  const out = await hs.listMemories(seeded, { limit: 2 });
  ok(out.total >= 3 && out.limit === 2 && out.offset === 0 && out.items.length === 2, "page", out);
  const m = out.items[0];
  ok(m.id && m.text && ["world", "experience", "observation"].includes(m.fact_type) && Array.isArray(m.tags), "item", m);
  const q = await hs.listMemories(seeded, { q: "inc-48213" });
  ok(q.total >= 1 && q.items.every((x) => x.text.includes("INC-48213")), "search", q.items);
  const doc = await hs.listMemories(seeded, { documentId: "doc-alice", type: "world", state: "valid", offset: 0 });
  ok(doc.total >= 1 && doc.items.every((x) => x.document_id === "doc-alice" && x.fact_type === "world"), "by document", doc.items);
  const alice = (await call(sdk.listEntities, { path: { bank_id: seeded } })).items.find((e) => e.canonical_name === "Alice");
  const byEntity = await hs.listMemories(seeded, { entityId: alice.id });
  ok(byEntity.total >= 2 && byEntity.items.every((x) => x.text.includes("Alice")), "by entity", byEntity.items);
  const pending = await hs.listMemories(seeded, { consolidationState: "done" });
  ok(pending.total >= 0 && Array.isArray(pending.items), "consolidation_state", pending);
});

check("memory detail, edit, history", ["sdk.getMemory", "sdk.updateMemory", "sdk.getObservationHistory", "sdk.clearMemoryObservations"], async () => {
  const bank = fresh();
  await hs.retain(bank, "Gina's favourite colour is teal.");
  const m = (await hs.listMemories(bank)).items[0];
  const got = await call(sdk.getMemory, { path: { bank_id: bank, memory_id: m.id } });
  ok(got.id === m.id && got.text === m.text, "get", got);
  const upd = await call(sdk.updateMemory, { path: { bank_id: bank, memory_id: m.id }, body: { text: "Gina's favourite colour is navy.", context: "corrected" } });
  ok(upd.text === "Gina's favourite colour is navy." && upd.context === "corrected", "update", upd);
  const hist = await call(sdk.getObservationHistory, { path: { bank_id: bank, memory_id: m.id } });
  ok(Array.isArray(hist) && hist[0]?.new_text === "Gina's favourite colour is navy.", "history", hist);
  const cl = await call(sdk.clearMemoryObservations, { path: { bank_id: bank, memory_id: m.id } });
  ok(cl.deleted_count >= 0, "clear its observations", cl);
});

check("clear bank memories", ["sdk.clearBankMemories"], async () => {
  const bank = fresh();
  await hs.retain(bank, "Hugo plays the cello on Sundays.");
  const out = await call(sdk.clearBankMemories, { path: { bank_id: bank } });
  ok(out.success === true, "cleared", out);
  eq((await hs.listMemories(bank)).total, 0, "empty");
});

check("tags, graph, scopes", ["sdk.listTags", "sdk.getGraph", "sdk.listObservationScopes"], async () => {
  const tags = await call(sdk.listTags, { path: { bank_id: seeded } });
  const counts = Object.fromEntries(tags.items.map((t) => [t.tag, t.count]));
  ok(counts["user:alice"] >= 2 && counts["team:ops"] >= 1 && tags.total === tags.items.length, "tags", tags);
  const q = await call(sdk.listTags, { path: { bank_id: seeded }, query: { q: "user*" } });
  eq(q.items.map((t) => t.tag), ["user:alice"], "tag search");
  const g = await call(sdk.getGraph, { path: { bank_id: seeded }, query: { limit: 50 } });
  ok(g.total_units >= 3 && g.nodes.length && g.nodes.every((n) => n.data.id), "graph", g);
  const sc = await call(sdk.listObservationScopes, { path: { bank_id: seeded } });
  ok(sc.total === sc.scopes.length && sc.scopes.every((s) => Array.isArray(s.tags)), "scopes", sc);
});

check("dry-run extract", ["sdk.dryRunExtractMemories"], async () => {
  const out = await call(sdk.dryRunExtractMemories, { path: { bank_id: seeded }, body: { content: "Ivan moved to Oslo in 2023. He works at Fjord Labs." } });
  ok(out.facts.length && out.facts.every((f) => f.text && f.fact_type), "facts", out);
  eq((await hs.listMemories(seeded, { q: "Fjord" })).total, 0, "nothing stored");
});

check("entities", ["sdk.listEntities", "sdk.getEntity", "sdk.getEntityGraph"], async () => {
  const out = await call(sdk.listEntities, { path: { bank_id: seeded } });
  const alice = out.items.find((e) => e.canonical_name === "Alice");
  ok(alice && alice.mention_count >= 1, "Alice listed", out.items.map((e) => e.canonical_name));
  const det = await call(sdk.getEntity, { path: { bank_id: seeded, entity_id: alice.id } });
  ok(det.canonical_name === "Alice" && Array.isArray(det.observations), "detail", det);
  const g = await call(sdk.getEntityGraph, { path: { bank_id: seeded }, query: { limit: 100 } });
  ok(g.total_entities >= 1 && g.nodes.every((n) => n.data.id && n.data.label), "entity graph", g);
});

// --- documents ----------------------------------------------------------------------------

check("documents", ["HindsightClient.listDocuments", "HindsightClient.getDocument", "sdk.listDocuments", "sdk.getDocument",
  "sdk.listDocumentChunks", "sdk.getChunk"], async () => {
  const out = await hs.listDocuments(seeded, { limit: 10, offset: 0 });
  eq(out.items.map((d) => d.id).sort(), ["doc-alice", "doc-bob"], "documents");
  ok(out.total === 2, "total", out);
  const d = await hs.getDocument(seeded, "doc-alice");
  ok(d.id === "doc-alice" && d.bank_id === seeded && d.memory_unit_count >= 2, "document", d);
  eq(await hs.getDocument(seeded, "no-such-doc"), null, "missing document is null");
  const ch = await call(sdk.listDocumentChunks, { path: { bank_id: seeded, document_id: "doc-alice" } });
  ok(ch.items[0]?.chunk_text && ch.items[0].document_id === "doc-alice", "chunks", ch);
  const one = await call(sdk.getChunk, { path: { chunk_id: ch.items[0].chunk_id } });
  ok(one.chunk_id === ch.items[0].chunk_id && one.bank_id === seeded, "chunk", one);
});

check("updateDocument", ["HindsightClient.updateDocument", "sdk.updateDocument"], async () => {
  const bank = fresh();
  await hs.retain(bank, "Kai's bike is red.", { documentId: "kai" });
  const out = await hs.updateDocument(bank, "kai", { tags: ["people"] });
  ok(out.success === true, "update", out);
  eq((await hs.getDocument(bank, "kai")).tags, ["people"], "tags");
});

check("deleteDocument", ["HindsightClient.deleteDocument", "sdk.deleteDocument"], async () => {
  const bank = fresh();
  await hs.retain(bank, "Lena owns two kayaks.", { documentId: "lena" });
  await hs.deleteDocument(bank, "lena");
  eq(await hs.getDocument(bank, "lena"), null, "gone");
  await rejects(() => hs.deleteDocument(bank, "lena"), "deleting it again");
});

check("reprocessDocument", ["sdk.reprocessDocument"], async () => {
  const bank = fresh();
  await hs.retain(bank, "Milo teaches chemistry.", { documentId: "milo" });
  const out = await call(sdk.reprocessDocument, { path: { bank_id: bank, document_id: "milo" } });
  ok(out.success === true && out.operation_id, "reprocess", out);
  await waitOp(bank, out.operation_id);
});

check("exportDocuments, importDocuments", ["HindsightClient.exportDocuments", "sdk.exportDocuments", "sdk.downloadFile", "sdk.importDocuments"], async () => {
  const zip = await hs.exportDocuments(seeded, { pollIntervalMs: 200, timeoutMs: 60000 });
  ok(zip instanceof Uint8Array && zip.length > 100 && zip[0] === 0x50 && zip[1] === 0x4b, "a ZIP archive", zip.length);
  const withObs = await hs.exportDocuments(seeded, { includeObservations: true, pollIntervalMs: 200 });
  ok(withObs.length > 100, "include_observations", withObs.length);
  const one = await hs.exportDocuments(seeded, { documentIds: ["doc-bob"], pollIntervalMs: 200 });
  ok(one.length > 0 && one.length < zip.length, "a one-document archive is smaller", [one.length, zip.length]);
  const sub = await call(sdk.exportDocuments, { path: { bank_id: seeded } });
  const op = await waitOp(seeded, sub.operation_id);
  const key = op.result_metadata.download_url.split("/files/download/")[1];
  const bytes = await call(sdk.downloadFile, { path: { key }, parseAs: "arrayBuffer" });
  ok(bytes.byteLength > 100, "downloaded", bytes.byteLength);
  // Import into another bank: its documents merge in, an existing id is skipped.
  const target = fresh("imp");
  await hs.retain(target, "Zed already lives here.", { documentId: "doc-bob" });
  const imp = await call(sdk.importDocuments, {
    path: { bank_id: target }, body: { file: new Blob([zip], { type: "application/zip" }) },
  });
  ok(imp.operation_id, "import submitted", imp);
  await waitOp(target, imp.operation_id);
  const docs = (await hs.listDocuments(target)).items.map((d) => d.id).sort();
  eq(docs, ["doc-alice", "doc-bob"], "documents after import");
  ok((await hs.listMemories(target, { q: "Lisbon" })).total >= 1, "imported facts");
  eq((await hs.listMemories(target, { q: "INC-48213" })).total, 0, "doc-bob skipped (on_conflict skip)");
  const rep = await call(sdk.importDocuments, {
    path: { bank_id: target }, query: { on_conflict: "replace" }, body: { file: new Blob([one], { type: "application/zip" }) },
  });
  await waitOp(target, rep.operation_id);
  ok((await hs.listMemories(target, { q: "INC-48213" })).total >= 1, "doc-bob replaced (on_conflict replace)");
  eq((await hs.listMemories(target, { q: "Zed" })).total, 0, "the old doc-bob is gone");
  const e = await status(sdk.importDocuments, { path: { bank_id: target }, body: { file: new Blob(["not a zip"]) } });
  eq(e, 400, "a file that is no archive");
});

// --- mental models ---------------------------------------------------------------------------

check("mental models", ["HindsightClient.createMentalModel", "HindsightClient.getMentalModel", "HindsightClient.listMentalModels",
  "HindsightClient.refreshMentalModel", "HindsightClient.getMentalModelHistory", "sdk.createMentalModel", "sdk.getMentalModel",
  "sdk.listMentalModels", "sdk.refreshMentalModel", "sdk.getMentalModelHistory"], async () => {
  const created = await hs.createMentalModel(seeded, `Alice profile ${randomUUID().slice(0, 6)}`, "Where does Alice live?", {
    tags: ["user:alice"], maxTokens: 1024,
    trigger: { refreshAfterConsolidation: true, tagsMatch: "any", tagGroups: [{ tags: ["user:alice"], match: "any" }] },
  });
  ok(created.operation_id && created.mental_model_id, "created", created);
  const id = created.mental_model_id;
  await waitOp(seeded, created.operation_id);
  const mm = await hs.getMentalModel(seeded, id);
  ok(mm.id === id && mm.bank_id === seeded && mm.source_query === "Where does Alice live?" && mm.content, "model", mm);
  eq(mm.tags, ["user:alice"], "tags");
  const meta = await hs.getMentalModel(seeded, id, { detail: "metadata" });
  ok(meta.id === id && !meta.content, "detail metadata drops the content", meta);
  const lst = await hs.listMentalModels(seeded, { tags: ["user:alice"], tagsMatch: "any", detail: "content", limit: 10, offset: 0 });
  ok(lst.items.some((x) => x.id === id), "listed", lst);
  const ref = await hs.refreshMentalModel(seeded, id);
  ok(ref.operation_id && ref.status, "refresh", ref);
  await waitOp(seeded, ref.operation_id);
  const hist = await hs.getMentalModelHistory(seeded, id);
  ok(Array.isArray(hist) && hist.length >= 1, "history", hist);
});

check("mental model edit, clear, delete", ["HindsightClient.updateMentalModel", "HindsightClient.clearMentalModel",
  "HindsightClient.deleteMentalModel", "sdk.updateMentalModel", "sdk.clearMentalModel", "sdk.deleteMentalModel"], async () => {
  const id = randomUUID();
  const created = await hs.createMentalModel(seeded, `Edit me ${id.slice(0, 6)}`, "What about Bob?", { id });
  eq(created.mental_model_id, id, "the caller's id");
  const upd = await hs.updateMentalModel(seeded, id, {
    name: `Edited ${id.slice(0, 6)}`, sourceQuery: "What did Bob fix?", tags: ["team:ops"], maxTokens: 512, trigger: { refreshAfterConsolidation: false },
  });
  ok(upd.name.startsWith("Edited") && upd.source_query === "What did Bob fix?" && upd.max_tokens === 512 && JSON.stringify(upd.tags) === '["team:ops"]', "updated", upd);
  const cleared = await hs.clearMentalModel(seeded, id);
  ok(cleared.id === id && !cleared.content, "cleared", cleared);
  await hs.deleteMentalModel(seeded, id);
  const e = await rejects(() => hs.getMentalModel(seeded, id), "deleted model");
  eq(e.statusCode, 404, "status");
});

check("dryRunRefreshMentalModel", ["HindsightClient.dryRunRefreshMentalModel", "sdk.dryRunRefreshMentalModel"], async () => {
  const created = await hs.createMentalModel(seeded, `Dry ${randomUUID().slice(0, 6)}`, "What does Alice drink?");
  const out = await hs.dryRunRefreshMentalModel(seeded, created.mental_model_id);
  ok(out.mental_model_id === created.mental_model_id && out.candidate_content && typeof out.would_persist === "boolean", "dry run", out);
});

// --- directives ---------------------------------------------------------------------------------

check("directives", ["HindsightClient.createDirective", "HindsightClient.listDirectives", "HindsightClient.getDirective",
  "HindsightClient.updateDirective", "HindsightClient.deleteDirective", "sdk.createDirective", "sdk.listDirectives",
  "sdk.getDirective", "sdk.updateDirective", "sdk.deleteDirective"], async () => {
  const bank = fresh();
  await hs.createBank(bank);
  const d = await hs.createDirective(bank, "Tone", "Be brief.", { priority: 3, tags: ["style"] });
  ok(d.id && d.bank_id === bank && d.priority === 3 && d.is_active === true && JSON.stringify(d.tags) === '["style"]', "created", d);
  eq((await hs.getDirective(bank, d.id)).content, "Be brief.", "content");
  const lst = await hs.listDirectives(bank, { tags: ["style"] });
  ok(lst.items.length === 1 && lst.items[0].id === d.id, "listed", lst);
  const off = await hs.createDirective(bank, "Off", "Never shown.", { isActive: false });
  eq(off.is_active, false, "created inactive");
  await hs.deleteDirective(bank, off.id);
  const upd = await hs.updateDirective(bank, d.id, { content: "Be very brief.", isActive: false });
  ok(upd.content === "Be very brief." && upd.is_active === false && upd.name === "Tone", "updated", upd);
  await hs.deleteDirective(bank, d.id);
  const e = await rejects(() => hs.getDirective(bank, d.id), "deleted directive");
  eq(e.statusCode, 404, "status");
});

// --- operations ---------------------------------------------------------------------------------------

check("operations", ["sdk.listOperations", "sdk.cancelOperation", "sdk.retryOperation", "sdk.deleteOperation"], async () => {
  const bank = fresh();
  const r = await hs.retain(bank, "Nora sails on Lake Geneva.", { async: true });
  await waitOp(bank, r.operation_id);
  const lst = await call(sdk.listOperations, { path: { bank_id: bank } });
  const item = lst.operations.find((o) => o.id === r.operation_id);
  ok(lst.bank_id === bank && item?.task_type === "retain" && item.status === "completed", "listed", lst);
  eq(await status(sdk.cancelOperation, { path: { bank_id: bank, operation_id: r.operation_id } }), 409, "a finished retain cannot be cancelled");
  // Consolidation paused (memstream's bank field), so the run stays pending.
  const pause = (state) => realFetch(`${HS_URL}/v1/default/banks/${bank}`, {
    method: "PATCH", headers: { Authorization: `Bearer ${HS_ADMIN_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ consolidation: state }),
  });
  eq((await pause("paused")).status, 200, "paused");
  await hs.retain(bank, "Nora also restores old boats.");
  const pending = await call(sdk.triggerConsolidation, { path: { bank_id: bank } });
  const c = await call(sdk.cancelOperation, { path: { bank_id: bank, operation_id: pending.operation_id } });
  ok(c.success === true && c.operation_id === pending.operation_id, "cancelled", c);
  const retry = await call(sdk.retryOperation, { path: { bank_id: bank, operation_id: pending.operation_id } });
  ok(retry.success === true, "retried", retry);
  eq((await pause("running")).status, 200, "running");
  await waitOp(bank, pending.operation_id);
  const d = await call(sdk.deleteOperation, { path: { bank_id: bank, operation_id: pending.operation_id } });
  ok(d.success === true, "deleted", d);
});

// --- webhooks --------------------------------------------------------------------------------------------

check("webhooks", ["sdk.createWebhook", "sdk.listWebhooks", "sdk.updateWebhook", "sdk.listWebhookDeliveries", "sdk.deleteWebhook"], async () => {
  const received = [];
  const sink = createServer((req, res) => {
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", () => {
      received.push({ body: Buffer.concat(parts), sig: req.headers["x-hindsight-signature"] });
      res.end("ok");
    });
  });
  await new Promise((r) => sink.listen(0, "127.0.0.1", r));
  try {
    const bank = fresh();
    await hs.createBank(bank);
    const url = `http://127.0.0.1:${sink.address().port}/hook`;
    const wh = await call(sdk.createWebhook, { path: { bank_id: bank }, body: { url, secret: "s3cret", event_types: ["retain.completed"] } });
    ok(wh.id && wh.bank_id === bank && wh.enabled === true, "created", wh);
    const lst = await call(sdk.listWebhooks, { path: { bank_id: bank } });
    ok(lst.items.length === 1 && lst.items[0].id === wh.id, "listed", lst);
    await hs.retain(bank, "Oscar's train leaves at 9.");
    ok(await waitUntil(() => received.length > 0, 30000), "no delivery");
    const { body, sig } = received[0];
    eq(JSON.parse(body).event, "retain.completed", "event");
    eq(sig, "sha256=" + createHmac("sha256", "s3cret").update(body).digest("hex"), "signature");
    const dl = await waitUntil(async () => {
      const d = await call(sdk.listWebhookDeliveries, { path: { bank_id: bank, webhook_id: wh.id } });
      return d.items[0]?.status === "delivered" && d;
    }, 10000);
    ok(dl && dl.items[0].event_type === "retain.completed", "delivery marked", dl);
    const upd = await call(sdk.updateWebhook, { path: { bank_id: bank, webhook_id: wh.id }, body: { enabled: false } });
    eq(upd.enabled, false, "disabled");
    eq((await call(sdk.deleteWebhook, { path: { bank_id: bank, webhook_id: wh.id } })).success, true, "deleted");
  } finally {
    sink.close();
  }
});

// --- bank templates ------------------------------------------------------------------------------------

check("bank templates", ["sdk.getBankTemplateSchema", "sdk.exportBankTemplate", "sdk.importBankTemplate"], async () => {
  const schema = await call(sdk.getBankTemplateSchema);
  ok(schema.properties, "schema", schema);
  const bank = fresh();
  await hs.createBank(bank, { reflectMission: "Template me." });
  await hs.createDirective(bank, "Export me", "Cite sources.");
  const man = await call(sdk.exportBankTemplate, { path: { bank_id: bank } });
  ok(man.version && man.directives?.some((d) => d.name === "Export me"), "manifest", man);
  const target = fresh("tpl");
  const out = await call(sdk.importBankTemplate, { path: { bank_id: target }, body: man });
  ok(out.bank_id === target && out.directives_created?.length === 1, "imported", out);
  const dry = await call(sdk.importBankTemplate, { path: { bank_id: fresh("tpl") }, body: man, query: { dry_run: true } });
  eq(dry.dry_run, true, "dry run");
});

// --- knowledge base -----------------------------------------------------------------------------------------

check("knowledge base", ["HindsightClient.createKnowledgeFolder", "HindsightClient.createKnowledgePage", "HindsightClient.getKnowledgeBaseTree",
  "HindsightClient.getKnowledgePage", "HindsightClient.searchKnowledgeBase", "HindsightClient.updateKnowledgeNode",
  "HindsightClient.exportKnowledgeBase", "HindsightClient.deleteKnowledgeNode", "sdk.createKnowledgeFolder", "sdk.createKnowledgePage",
  "sdk.getKnowledgeBaseTree", "sdk.getKnowledgePage", "sdk.searchKnowledgeBase", "sdk.updateKnowledgeNode", "sdk.exportKnowledgeBase",
  "sdk.deleteKnowledgeNode"], async () => {
  const folder = await hs.createKnowledgeFolder(seeded, `People ${randomUUID().slice(0, 6)}`);
  ok(folder.kind === "folder" && folder.id, "folder", folder);
  const sub = await hs.createKnowledgeFolder(seeded, "Sub", { parentId: folder.id });
  ok(sub.parent_id === folder.id, "sub folder", sub);
  const page = await hs.createKnowledgePage(seeded, `Alice ${randomUUID().slice(0, 6)}`, "Where does Alice live?", {
    parentId: folder.id, tags: ["user:alice"], maxTokens: 1024,
    trigger: {
      mode: "full", refreshAfterConsolidation: true, refreshCron: null, factTypes: ["world", "observation"], excludeMentalModels: false,
      excludeMentalModelIds: [], tagsMatch: "any", tagGroups: [{ tags: ["user:alice"], match: "any" }], includeChunks: true,
      recallMaxTokens: 2048, recallChunksMaxTokens: 1024,
    },
  });
  ok(page.page_id && page.mental_model_id, "page", page);
  const tree = await hs.getKnowledgeBaseTree(seeded);
  const f = tree.roots.find((n) => n.id === folder.id);
  ok(f && f.children.some((c) => c.id === page.page_id && c.kind === "page"), "tree", tree);
  ok(await waitUntil(async () => (await hs.getKnowledgePage(seeded, page.page_id)).body), "page built");
  const p = await hs.getKnowledgePage(seeded, page.page_id);
  ok(p.id === page.page_id && p.markdown.includes("Lisbon"), "page markdown", p);
  const hits = await hs.searchKnowledgeBase(seeded, "Lisbon", { limit: 5 });
  ok(hits.results.length >= 1 && hits.results[0].snippet, "search", hits);
  const node = await hs.updateKnowledgeNode(seeded, page.page_id, { name: `Alice renamed ${randomUUID().slice(0, 6)}`, maxTokens: 800 });
  ok(node.name.startsWith("Alice renamed"), "renamed", node);
  const requery = await hs.updateKnowledgeNode(seeded, page.page_id, { sourceQuery: "Where does Alice work?", tags: ["user:alice", "work"] });
  ok(requery.id === page.page_id, "page query and tags changed", requery);
  const moved = await hs.updateKnowledgeNode(seeded, sub.id, { parentId: null });
  ok(moved.parent_id == null, "moved to the root", moved);
  const bundle = await hs.exportKnowledgeBase(seeded);
  ok(bundle.files.some((fi) => fi.path.endsWith(".md")), "bundle", bundle);
  await hs.deleteKnowledgeNode(seeded, folder.id);
  await hs.deleteKnowledgeNode(seeded, sub.id);
  const after = await hs.getKnowledgeBaseTree(seeded);
  ok(after.roots.every((n) => n.id !== folder.id && n.id !== sub.id), "deleted", after);
});

// --- audit and LLM traces -------------------------------------------------------------------------------------

check("audit logs", ["sdk.listAuditLogs", "sdk.auditLogStats"], async () => {
  const bank = fresh();
  await hs.retain(bank, "Pia bakes sourdough.");
  const lst = await call(sdk.listAuditLogs, { path: { bank_id: bank } });
  ok(lst.bank_id === bank && lst.items.some((e) => e.action === "retain" && e.transport === "http"), "audit", lst);
  const st = await call(sdk.auditLogStats, { path: { bank_id: bank }, query: { period: "1d" } });
  ok(st.bank_id === bank && st.buckets.reduce((n, b) => n + b.total, 0) >= 1, "stats", st);
});

check("LLM traces", ["sdk.listLlmRequests", "sdk.llmRequestStats"], async () => {
  // The second server's LLM is a fake: the first one's offline providers
  // make no LLM calls to trace.
  const hsLLM = new HindsightClient({ baseUrl: HS_LLM_URL, apiKey: HS_ADMIN_KEY });
  const lowLLM = createClient(createConfig({ baseUrl: HS_LLM_URL, headers: { Authorization: `Bearer ${HS_ADMIN_KEY}` } }));
  const bank = fresh("llm");
  ok((await hsLLM.retain(bank, "Rosa moved to Porto in May. She teaches chemistry.")).success, "retain");
  await hsLLM.reflect(bank, "Where does Rosa live?");
  // Rows are written in batches, within half a second.
  const lst = await waitUntil(async () => {
    const l = await call(sdk.listLlmRequests, { client: lowLLM, path: { bank_id: bank } });
    return l.items.some((e) => e.operation === "retain") && l.items.some((e) => e.operation === "reflect") && l;
  }, 20000);
  ok(lst && lst.bank_id === bank && lst.total === lst.items.length && lst.limit === 50, "requests", lst);
  const ex = lst.items.find((e) => e.operation === "retain");
  ok(ex.scope === "retain_extract_facts" && ex.status === "success" && ex.input_tokens > 0 && ex.input == null, "extraction request", ex);
  const only = await call(sdk.listLlmRequests, { client: lowLLM, path: { bank_id: bank }, query: { operation: "reflect", limit: 1 } });
  ok(only.items.length === 1 && only.items[0].operation === "reflect", "filtered", only);
  const st = await call(sdk.llmRequestStats, { client: lowLLM, path: { bank_id: bank }, query: { period: "1d" } });
  ok(st.bank_id === bank && st.period === "1d" && st.buckets.reduce((n, b) => n + b.total, 0) >= lst.total, "stats", st);
});

// --- access control through the client ---------------------------------------------------------

check("scoped key", [], async () => {
  const scoped = new HindsightClient({ baseUrl: HS_URL, apiKey: HS_BANK_KEY });
  ok((await scoped.retain("scoped-bank", "Quinn keeps bees.")).success, "own bank");
  eq((await rejects(() => scoped.retain("other-bank", "not allowed"), "other bank")).statusCode, 403, "retain elsewhere");
  eq((await rejects(() => scoped.listDirectives("other-bank"), "other bank")).statusCode, 403, "directives elsewhere");
  const anon = new HindsightClient({ baseUrl: HS_URL });
  eq((await rejects(() => anon.listDocuments("scoped-bank"), "no key")).statusCode, 401, "no key");
});

// --- run -----------------------------------------------------------------------------------------

const outcomes = [];
let failed = 0;
try {
  await seed();
  // The 5xx watch must see what the client's requests get: a local server
  // that answers 503 is one.
  const down = createServer((req, res) => res.writeHead(503).end("down"));
  await new Promise((r) => down.listen(0, "127.0.0.1", r));
  try {
    await fetch(`http://127.0.0.1:${down.address().port}/health`);
  } finally {
    down.close();
  }
  ok(serverErrors.length === 1 && serverErrors[0].includes(": 503 "), "the 5xx watch saw no 503", serverErrors);
  serverErrors = [];
} catch (e) {
  console.log(`FAIL seed: ${e.stack ?? e}`);
  process.exit(1);
}
for (const c of checks) {
  serverErrors = [];
  shapeErrors = [];
  let err = null;
  try {
    await c.fn();
  } catch (e) {
    err = e;
  }
  // An xfail must fail the way its reason says: with that status.
  const errStatus = err?.statusCode ?? err?.status;
  const fives = serverErrors.filter((s) => !(c.xfailStatus >= 500 && s.includes(`: ${c.xfailStatus} `)));
  let outcome;
  let reason = "";
  if (fives.length) {
    outcome = "failed";
    reason = `server error: ${fives[0]}`;
  } else if (shapeErrors.length) {
    outcome = "failed";
    reason = [...new Set(shapeErrors)].join("; ").slice(0, 600);
  } else if (c.xfail && err && errStatus !== c.xfailStatus) {
    outcome = "failed";
    reason = `expected a ${c.xfailStatus}, got: ${String(err.message ?? err).slice(0, 250)}`;
  } else if (c.xfail) {
    outcome = err ? "xfailed" : "xpassed";
    reason = c.xfail;
  } else {
    outcome = err ? "failed" : "passed";
    reason = err ? String(err.message ?? err).split("\n")[0].slice(0, 300) : "";
  }
  if (outcome === "failed" || outcome === "xpassed") failed++;
  console.log(`${outcome.toUpperCase()} ${c.name}${outcome === "passed" ? "" : ": " + (outcome === "xfailed" ? `${reason} (${err?.message ?? err})` : reason)}`);
  if (outcome === "failed" && err?.stack && !(err instanceof AssertionError)) console.log(err.stack);
  outcomes.push({ check: c.name, covers: c.covers, outcome, reason });
}

const results = {};
for (const o of outcomes) {
  for (const name of o.covers) {
    const prev = results[name];
    // A method checked by several checks works only if all of them pass.
    if (!prev || prev.outcome === "passed") results[name] = { outcome: o.outcome, reason: o.reason, test: o.check };
  }
}
for (const [name, why] of Object.entries(excused)) {
  if (results[name]?.outcome === "passed") results[name].reason = why;
}
if (HS_RESULTS) writeFileSync(HS_RESULTS, JSON.stringify({ methods, results }, null, 1));
console.log(`${shapesChecked} answers held to the client's declared types`);
console.log(`${checks.length - failed} of ${checks.length} checks as expected`);
process.exit(failed ? 1 : 0);
