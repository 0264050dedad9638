// A call relayed to slow-server.mjs whose connection from toolsearch
// breaks mid-call: cut-proxy.mjs, between the two, drops it 1 s into a
// 3 s wait_seconds. slow-server keeps its streams' events; toolsearch
// resumes the call's stream with Last-Event-ID and relays the result to
// this client (the official MCP TypeScript SDK's), which prints it.
// Usage: node relay-resume-client.mjs URL   (exit 1 unless the result arrived)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "e2e-relay-resume", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
let text = "";
try {
	const res = await client.callTool(
		{ name: "call_tool", arguments: { name: "wait_seconds", arguments: { seconds: 3 } } },
		undefined,
		{ timeout: 20000 },
	);
	text = res.content[0].text;
} catch (err) {
	text = `error: ${err.message}`;
}
console.log(`result: ${text}`);
await client.close();
process.exit(text === "waited 3 s" ? 0 : 1);
