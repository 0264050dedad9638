// A caller on the official MCP TypeScript SDK's client: lists tools (the
// SDK keeps each tool's output schema) and calls server-everything's
// get-structured-content as toolsearch lists it directly, which the SDK
// checks against that schema. Prints the schema's properties and the
// result's structured content.
// Usage: node structured-client.mjs URL   (exit 1 unless both are there)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);
const name = "everything__get-structured-content";
const client = new Client({ name: "e2e-structured", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const { tools } = await client.listTools();
const listed = tools.find((t) => t.name === name);
const props = Object.keys(listed?.outputSchema?.properties ?? {}).sort();
const res = await client.callTool({ name, arguments: { location: "Chicago" } });
console.log(`${name}: outputSchema properties ${props.join(", ") || "none"}; structuredContent ${JSON.stringify(res.structuredContent)}`);
await client.close();
process.exit(props.includes("temperature") && res.structuredContent?.temperature === 36 ? 0 : 1);
