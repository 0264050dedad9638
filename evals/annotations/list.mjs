// Lists one stdio MCP server's tools as {"name", "tools"} on stdout.
// Usage: node list.mjs NAME COMMAND [ARGS...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [name, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "ignore", env: { ...process.env } });
const client = new Client({ name: "toolsearch-annotation-truth", version: "1" });
await client.connect(transport);
const { tools } = await client.listTools();
console.log(JSON.stringify({ name, tools }));
await client.close();
