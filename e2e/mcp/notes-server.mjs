// A small upstream for the end-to-end test: a notes server whose tools
// declare no annotations, so toolsearch must infer that delete_note is
// destructive and ask before calling it. Built on the official MCP
// TypeScript SDK, stateless Streamable HTTP at /mcp.
// Usage: PORT=N node notes-server.mjs
import http from "node:http";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const notes = new Map([["1", "buy milk"], ["2", "call the plumber"]]);

function server() {
	const s = new McpServer({ name: "notes", version: "1.0.0" });
	s.registerTool("list_notes", { description: "List every note with its id." }, async () => ({
		content: [{ type: "text", text: [...notes].map(([id, text]) => `${id}: ${text}`).join("\n") || "no notes" }],
	}));
	s.registerTool("delete_note", { description: "Delete a note for good.", inputSchema: { id: z.string() } }, async ({ id }) => {
		const had = notes.delete(id);
		return { content: [{ type: "text", text: had ? `deleted note ${id}` : `no note ${id}` }], isError: !had };
	});
	return s;
}

http.createServer(async (req, res) => {
	if (req.url !== "/mcp") {
		res.writeHead(404).end();
		return;
	}
	const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
	res.on("close", () => transport.close());
	await server().connect(transport);
	await transport.handleRequest(req, res);
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.log(`notes listening on port ${process.env.PORT}`));
