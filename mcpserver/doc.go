// Package mcpserver serves memstream's memory as an MCP server (SPEC §5):
// Streamable HTTP at /mcp on the API's address, and stdio for local clients
// (memstream mcp). It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// The tools are Hindsight 1.1.0's MCP tools, with its names and argument
// shapes (retain, sync_retain, recall, reflect, banks, mental models,
// directives, memories, documents, operations, tags, knowledge base), so an
// agent configured for Hindsight's MCP server works unchanged. As in
// Hindsight there are two modes: /mcp/{bank_id}/ is single-bank (the tools
// take no bank_id; bank management tools are left out), and /mcp is
// multi-bank (every tool takes an optional bank_id; the default bank is the
// X-Bank-Id header, else Config.DefaultBank).
//
// A tool is a thin adapter: it calls the HTTP API's own route
// (recallapi's Handler, in process) with the caller's bearer key and shapes
// the answer as Hindsight's tool does. So a tool call is authorized,
// bank-scoped, validated, timed out and audited exactly as the same call
// over HTTP is, and the two cannot drift apart; a key for bank A gets the
// API's 403 for bank B as a tool error. Over HTTP the key is also checked
// when the session starts, so /mcp without a valid key answers 401, and a
// session is bound to the key that opened it.
//
// Arguments are taken as tolerantly as Hindsight takes them: unknown
// arguments (an LLM's "explanation") are dropped, nulls mean "not given",
// and a list or object sent as a JSON string is decoded.
package mcpserver
