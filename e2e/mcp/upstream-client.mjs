// toolsearch as the client under test of the official MCP conformance
// suite's client scenarios: the suite serves a scenario's MCP server and
// runs this script with its URL; the script serves toolsearch with that
// server as its one upstream, waits until it is connected, and calls each
// tool it lists through toolsearch's call_tool, so every request the
// suite's server sees is toolsearch's own upstream client's.
// Usage: node upstream-client.mjs path/to/toolsearch URL   (conformance.sh runs it through the suite)
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [bin, url] = process.argv.slice(2);
// Arguments for the suite's tools that need some; any other is called with none.
const args = { add_numbers: { a: 5, b: 3 } };

const port = await new Promise((ok) => {
	const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); });
});
const dir = mkdtempSync(path.join(os.tmpdir(), "upstream-client-"));
writeFileSync(path.join(dir, "config.yaml"), `upstreams:\n  - name: conformance\n    url: ${url}\n`);
const ts = spawn(bin, ["serve", "-addr", `127.0.0.1:${port}`, "-metrics-addr", "off", "-config", path.join(dir, "config.yaml")], {
	env: { ...process.env, TOOLSEARCH_LEARNING_PATH: path.join(dir, "learned.db") },
	stdio: ["ignore", "ignore", "pipe"],
});
let log = "";
ts.stderr.on("data", (d) => { log += d; });
const base = `http://127.0.0.1:${port}`;
let code = 1;
try {
	// Ready, and the upstream connected (or refusing toolsearch: a failure).
	let up = {};
	for (let i = 0; i < 200 && up.state !== "connected" && up.state !== "failing"; i++) {
		await new Promise((ok) => setTimeout(ok, 100));
		try {
			up = (await (await fetch(`${base}/mcp/tool-search/status`)).json()).upstreams?.[0] ?? {};
		} catch { /* not serving yet */ }
	}
	if (up.state !== "connected") throw new Error(`the upstream is not connected: ${JSON.stringify(up)}`);
	// Each of its tools, called through toolsearch's call_tool.
	const list = await (await fetch(`${base}/mcp/tool-search`, {
		method: "POST", headers: { "Content-Type": "application/json" },
		body: JSON.stringify({ operation: "list", servers: ["conformance"] }),
	})).json();
	const client = new Client({ name: "upstream-client", version: "1.0.0" });
	await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
	for (const { name } of list.tools.filter((t) => t.source === "list")) {
		const res = await client.callTool({ name: "call_tool", arguments: { name, arguments: args[name] ?? {} } }, undefined, { timeout: 20000 });
		console.log(`${name}: ${JSON.stringify(res.content)}${res.isError ? " (error)" : ""}`);
		if (res.isError) throw new Error(`${name} failed through toolsearch`);
	}
	await client.close();
	code = 0;
} catch (err) {
	console.error(`upstream-client: ${err.message}\n--- toolsearch log\n${log.split("\n").slice(-15).join("\n")}`);
} finally {
	ts.kill("SIGTERM");
	await new Promise((ok) => ts.on("exit", ok));
	rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
