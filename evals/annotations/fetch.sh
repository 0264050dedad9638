#!/usr/bin/env bash
# Regenerates servers.json: the tools/list answers of MCP servers from npm
# that declare safety annotations on their tools, versions pinned in
# package-lock.json. The hints test (pkg/hints) measures the inferred
# annotations against them. Needs node and npm (make node installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
m=node_modules
list() { node list.mjs "$@"; }
{
	echo '{"servers":['
	MEMORY_FILE_PATH="$work/memory.json" list memory node $m/@modelcontextprotocol/server-memory/dist/index.js
	echo ','
	list filesystem node $m/@modelcontextprotocol/server-filesystem/dist/index.js "$work"
	echo ','
	list everything node $m/@modelcontextprotocol/server-everything/dist/index.js stdio
	echo ','
	list notion node $m/@notionhq/notion-mcp-server/bin/cli.mjs
	echo ','
	list playwright node $m/@playwright/mcp/cli.js
	echo ']}'
} >"$work/servers.json"
# One server per line: reviewable diffs when a server's tools change.
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const out = d.servers.map(s => JSON.stringify({name: s.name, tools: s.tools.map(t => ({name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations}))}));
process.stdout.write("{\"servers\": [\n" + out.join(",\n") + "\n]}\n");
' "$work/servers.json" >servers.json
echo "servers.json: $(grep -o '"annotations"' servers.json | wc -l) tools with annotations"
