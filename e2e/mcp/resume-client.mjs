// A caller on the official MCP TypeScript SDK's client whose connection
// breaks mid-call: a TCP proxy in front of toolsearch aborts the
// connection that carries call_tool 1 s after it does, while
// server-everything's trigger-long-running-operation runs for 3 s. The
// client resumes the call's event stream with Last-Event-ID and prints
// the result; before toolsearch kept its events, the call was lost.
// Usage: node resume-client.mjs URL   (exit 1 unless the result arrived after a cut and a resume)
import net from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const target = new URL(process.argv[2]);
let cut = false;
let resumed = false;
const proxy = net.createServer((client) => {
	const server = net.connect(Number(target.port), target.hostname);
	client.on("data", (chunk) => {
		const text = chunk.toString("latin1");
		if (/^last-event-id:/im.test(text)) resumed = true;
		if (!cut && text.includes('"call_tool"')) {
			setTimeout(() => { cut = true; client.destroy(); server.destroy(); }, 1000);
		}
		server.write(chunk);
	});
	server.on("data", (chunk) => client.write(chunk));
	for (const s of [client, server]) {
		s.on("error", () => {});
		s.on("close", () => { client.destroy(); server.destroy(); });
	}
});
await new Promise((ok) => proxy.listen(0, "127.0.0.1", ok));
const via = new URL(target);
via.port = String(proxy.address().port);

const client = new Client({ name: "e2e-resume", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(via));
let text = "";
try {
	const res = await client.callTool(
		{ name: "call_tool", arguments: { name: "trigger-long-running-operation", arguments: { duration: 3, steps: 3 } } },
		undefined,
		{ timeout: 20000 },
	);
	text = res.content[0].text;
} catch (err) {
	text = `error: ${err.message}`;
}
console.log(`connection cut mid-call: ${cut}; resumed with Last-Event-ID: ${resumed}; result: ${text}`);
await client.close();
proxy.close();
process.exit(cut && resumed && text.startsWith("Long running operation completed") ? 0 : 1);
