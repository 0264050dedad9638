// A small upstream for the end-to-end test whose call streams can be
// resumed: the official MCP TypeScript SDK's stateful Streamable HTTP
// transport with the SDK's own example event store (stream-scoped: a
// resume replays that stream's events and carries its later ones), and
// one tool that takes a while. server-everything keeps events too, but
// its store replays every stream's events and names the resumed stream
// by an event id, so the answer to a resumed call is stored and never
// sent (docs/mcp.md).
// Usage: PORT=N node slow-server.mjs
import http from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";

function server() {
	const s = new McpServer({ name: "slow", version: "1.0.0" });
	s.registerTool("wait_seconds", { description: "Pause for the given seconds, then answer.", inputSchema: { seconds: z.number() } }, async ({ seconds }) => {
		await new Promise((ok) => setTimeout(ok, seconds * 1000));
		return { content: [{ type: "text", text: `waited ${seconds} s` }] };
	});
	return s;
}

const sessions = new Map();
http.createServer(async (req, res) => {
	if (req.url !== "/mcp") {
		res.writeHead(404).end();
		return;
	}
	let body;
	if (req.method === "POST") {
		const chunks = [];
		for await (const c of req) chunks.push(c);
		body = JSON.parse(Buffer.concat(chunks).toString());
	}
	const id = req.headers["mcp-session-id"];
	let transport = id && sessions.get(id);
	if (!transport && !id && req.method === "POST" && isInitializeRequest(body)) {
		transport = new StreamableHTTPServerTransport({
			sessionIdGenerator: () => randomUUID(),
			eventStore: new InMemoryEventStore(),
			onsessioninitialized: (sid) => sessions.set(sid, transport),
		});
		transport.onclose = () => sessions.delete(transport.sessionId);
		await server().connect(transport);
	}
	if (!transport) {
		res.writeHead(id ? 404 : 400, { "Content-Type": "application/json" })
			.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: id ? "Session not found" : "Bad Request: no session" }, id: null }));
		return;
	}
	await transport.handleRequest(req, res, body);
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.log(`slow listening on port ${process.env.PORT}`));
