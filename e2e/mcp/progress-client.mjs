// A caller on the official MCP TypeScript SDK's client: calls
// server-everything's trigger-long-running-operation through toolsearch's
// call_tool with a progress handler, and prints how many of its steps'
// notices had arrived when the result did. The last is sent in the same
// instant as the result, and toolsearch once relayed it after.
// Usage: node progress-client.mjs URL STEPS   (exit 1 unless all arrived)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, stepsArg] = process.argv.slice(2);
const steps = Number(stepsArg);
const client = new Client({ name: "e2e-progress", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
let seen = 0;
const res = await client.callTool(
	{ name: "call_tool", arguments: { name: "trigger-long-running-operation", arguments: { duration: 0.5, steps } } },
	undefined,
	{ onprogress: () => { seen++; } },
);
const atResult = seen;
console.log(`${atResult} of ${steps} progress notices before the result: ${res.content[0].text}`);
await client.close();
process.exit(atResult === steps ? 0 : 1);
