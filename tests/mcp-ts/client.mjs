// The official TypeScript MCP SDK's client (the one Claude Code, Claude
// Desktop and Cursor build on) against memstream's /mcp over Streamable
// HTTP. cmd/memstream's TestMCPOverHTTP runs it against an in-process
// memstream; it prints one line per check and exits 1 if any failed.
//
//   MCP_BASE   http://host:port of the API
//   MCP_BANK   the bank MCP_KEY may use; MCP_OTHER a bank it may not
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { MCP_BASE, MCP_BANK, MCP_OTHER, MCP_KEY } = process.env;
let failed = 0;
const check = (name, ok, detail) => {
  console.log(`${ok ? "PASS" : "FAIL"} ${name}${detail ? ": " + detail : ""}`);
  if (!ok) failed++;
};

async function connect(path) {
  const client = new Client({ name: "memstream-ts-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_BASE + path), {
    requestInit: { headers: { Authorization: `Bearer ${MCP_KEY}` } },
  });
  await client.connect(transport);
  return client;
}

const answer = (res) => JSON.parse(res.content[0].text);

const single = await connect(`/mcp/${MCP_BANK}/`);
const { tools } = await single.listTools();
const names = tools.map((t) => t.name);
check("single-bank tools listed", names.includes("recall") && names.includes("sync_retain") && !names.includes("list_banks"), `${names.length} tools`);
const recallTool = tools.find((t) => t.name === "recall");
check("recall's schema requires query", recallTool?.inputSchema?.required?.includes("query"));

let res = await single.callTool({ name: "sync_retain", arguments: { content: "Erin keeps bees on a rooftop in Oslo.", tags: ["person:erin"] } });
let out = answer(res);
check("sync_retain stores", !res.isError && out.status === "completed" && out.memory_ids.length > 0, JSON.stringify(out).slice(0, 200));

res = await single.callTool({ name: "recall", arguments: { query: "Who keeps bees?" } });
out = answer(res);
check("recall finds it", !res.isError && JSON.stringify(out.results).includes("Oslo"), `${out.results?.length} results`);
check("recall has structuredContent", res.structuredContent && Array.isArray(res.structuredContent.results));

res = await single.callTool({ name: "reflect", arguments: { query: "Who keeps bees, and where?" } });
out = answer(res);
check("reflect answers from it", !res.isError && String(out.text).includes("Oslo"), String(out.text).slice(0, 200));

const multi = await connect("/mcp");
res = await multi.callTool({ name: "recall", arguments: { query: "anything", bank_id: MCP_OTHER } });
out = answer(res);
check("another bank is refused", res.isError === true && out.status === 403 && out.code === "forbidden", JSON.stringify(out));

await single.close();
await multi.close();
console.log(`${failed === 0 ? "ok" : "FAILED"}: ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
