#!/usr/bin/env bash
# The official MCP conformance suite against toolsearch: once alone, once
# with @modelcontextprotocol/server-everything as a live upstream (its
# tools searchable, one listed directly), and its client scenarios against
# toolsearch as the client of its upstreams (upstream-client.mjs). Scenarios that do not apply to a
# tool-search server are in conformance-expected.yaml with their reasons;
# the suite fails on any other failure and on a listed scenario that
# passes. The suite needs Node 22: the `node` package from npm provides it
# (node_modules/.bin/node), whatever Node the machine has.
# Usage: e2e/mcp/conformance.sh [path/to/toolsearch]   (make conformance builds it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-"$here/../../bin/toolsearch"}")
. "$here/common.sh"
node22="$here/node_modules/.bin/node"
echo "conformance: @modelcontextprotocol/conformance $("$node22" -p 'require("./node_modules/@modelcontextprotocol/conformance/package.json").version') on Node $("$node22" --version)"

# suite NAME PORT: the active suite against toolsearch on PORT.
suite() {
	echo; echo "conformance: $1"
	if ! "$node22" node_modules/.bin/conformance server --url "http://127.0.0.1:$2/mcp" \
		--expected-failures conformance-expected.yaml -o "$work/out-$1" >"$work/$1.log" 2>&1; then
		sed -n '/=== SUMMARY ===/,$p' "$work/$1.log"
		echo "--- toolsearch log"; tail -20 "$work/toolsearch.log"
		echo "conformance: FAIL ($1)"; exit 1
	fi
	sed -n '/=== SUMMARY ===/,$p' "$work/$1.log" | grep -E '✓|Total|Baseline'
}

# The suite sends dozens of requests a second from one address: the
# search rate limit (a cost bound, tested on its own) is off here.
cat >"$work/alone.yaml" <<YAML
limits:
  search_rate: -1
YAML
start_toolsearch "$work/alone.yaml"
suite alone "$ts_port"

start_node everything up_port node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp
cat >"$work/upstream.yaml" <<YAML
limits:
  search_rate: -1
core: [everything/get-sum]
mcp:
  expose: core_and_meta
upstreams:
  - name: everything
    url: http://127.0.0.1:$up_port/mcp
YAML
start_toolsearch "$work/upstream.yaml"
suite with-upstream "$ts_port"

# The client scenarios: each scenario's server is toolsearch's upstream,
# and upstream-client.mjs calls its tools through toolsearch.
echo; echo "conformance: client (toolsearch's client of its upstreams)"
if ! "$node22" node_modules/.bin/conformance client --command "$node22 $here/upstream-client.mjs $bin" --suite core \
	--expected-failures conformance-expected.yaml -o "$work/out-client" >"$work/client.log" 2>&1; then
	sed -n '/=== SUITE SUMMARY ===/,$p' "$work/client.log"
	echo "conformance: FAIL (client)"; exit 1
fi
sed -n '/=== SUITE SUMMARY ===/,$p' "$work/client.log" | grep -E '✓|Total|Baseline'
echo; echo "conformance: passed, alone, with a live upstream, and as its upstreams' client"
