#!/usr/bin/env bash
# End-to-end: toolsearch as an MCP server, driven by a real third-party MCP
# client (the MCP Inspector CLI), with a real third-party upstream
# (@modelcontextprotocol/server-everything over Streamable HTTP).
# Usage: e2e/mcp/run.sh [path/to/toolsearch]   (make e2e-mcp builds it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-"$here/../../bin/toolsearch"}
. "$here/common.sh"
# The Inspector declares node >=22.7.5; Node 20 runs its CLI (every answer
# below is checked, so a real incompatibility fails the test), but say so
# rather than hide npm's warning.
want=$(node -p 'require("./node_modules/@modelcontextprotocol/inspector/package.json").engines.node')
echo "e2e-mcp: Node $(node --version); the MCP Inspector declares node $want"

start_node everything up_port node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp
start_node notes notes_port notes-server.mjs
# toolsearch reaches slow-server (the TypeScript SDK's, keeping its
# streams' events) through a proxy that drops, once, the connection
# carrying a call of wait_seconds (relay-resume-client.mjs).
start_node slow slow_port slow-server.mjs
start_node cut cut_port cut-proxy.mjs "$slow_port" '"wait_seconds"' 1000

# get-sum and get-structured-content are core and listed as themselves
# (expose: core_and_meta); the notes server declares no annotations, so
# delete_note is destructive by inference.
cat >"$work/config.yaml" <<YAML
core: [everything/get-sum, everything/get-structured-content]
mcp:
  expose: core_and_meta
upstreams:
  - name: everything
    url: http://127.0.0.1:$up_port/mcp
    refresh: 1m
  - name: notes
    url: http://127.0.0.1:$notes_port/mcp
    refresh: 1m
  - name: slow
    url: http://127.0.0.1:$cut_port/mcp
    refresh: 1m
YAML
start_toolsearch "$work/config.yaml"

inspector() {
	npx --no-install @modelcontextprotocol/inspector --cli "http://127.0.0.1:$ts_port/mcp" --transport http "$@" 2>/dev/null
}
fail() {
	echo "e2e-mcp: FAIL: $*" >&2
	echo "--- toolsearch log" >&2; tail -20 "$work/toolsearch.log" >&2
	exit 1
}
step() { echo; echo "\$ inspector --cli .../mcp $*"; }
# client SCRIPT WHAT FAILURE: a step run by a Node client of /mcp (on the
# official TypeScript SDK), its output shown; FAILURE unless it exits 0.
client() {
	echo; echo "\$ node $1 .../mcp   ($2)"
	out=$(node "$1" "http://127.0.0.1:$ts_port/mcp") || fail "$3: $out"
	echo "$out"
}
passed=0

step "--method tools/list"
out=$(inspector --method tools/list) || fail "tools/list"
echo "$out" | grep -o '"name": "[a-z_-]*"' | sort | tr '\n' ' '; echo
for t in search_tools search_tools_regex get_tool_schema list_servers call_tool everything__get-sum; do
	grep -q "\"name\": \"$t\"" <<<"$out" || fail "tools/list lacks $t"
done
passed=$((passed + 1))

step "--method tools/call --tool-name search_tools --tool-arg query='add two numbers' --tool-arg limit=3"
out=$(inspector --method tools/call --tool-name search_tools --tool-arg "query=add two numbers" --tool-arg limit=3) || fail "search_tools"
grep -m1 '"text": ' <<<"$out"
grep -q 'everything/get-sum' <<<"$out" || fail "search_tools did not find everything/get-sum"
passed=$((passed + 1))

step "--method tools/call --tool-name get_tool_schema --tool-arg name=get-sum"
out=$(inspector --method tools/call --tool-name get_tool_schema --tool-arg name=get-sum) || fail "get_tool_schema"
grep -q '"callable": true' <<<"$out" || fail "get_tool_schema: not callable"
grep -q '"required"' <<<"$out" || fail "get_tool_schema: no input schema"
echo "inputSchema has a, b; callable: true"
passed=$((passed + 1))

step "--method tools/call --tool-name call_tool --tool-arg name=get-sum --tool-arg 'arguments={\"a\":2,\"b\":3}'"
out=$(inspector --method tools/call --tool-name call_tool --tool-arg name=get-sum --tool-arg 'arguments={"a":2,"b":3}') || fail "call_tool"
echo "$out" | grep '"text": '
grep -q 'The sum of 2 and 3 is 5' <<<"$out" || fail "call_tool did not return the upstream's result"
passed=$((passed + 1))

step "--method tools/call --tool-name call_tool --tool-arg name=get-sum --tool-arg 'arguments={\"a\":\"two\"}'"
out=$(inspector --method tools/call --tool-name call_tool --tool-arg name=get-sum --tool-arg 'arguments={"a":"two"}') || fail "call_tool (bad arguments)"
echo "$out" | grep '"text": '
grep -q '"isError": true' <<<"$out" || fail "bad arguments were not an isError result"
passed=$((passed + 1))

step "--method tools/call --tool-name search_tools_regex --tool-arg pattern='^get-s' --tool-arg servers='[\"everything\"]'"
out=$(inspector --method tools/call --tool-name search_tools_regex --tool-arg "pattern=^get-s" --tool-arg 'servers=["everything"]') || fail "search_tools_regex"
grep -m1 '"text": ' <<<"$out"
grep -q 'everything/get-structured-content' <<<"$out" && grep -q 'everything/get-sum' <<<"$out" || fail "search_tools_regex did not list get-structured-content and get-sum"
grep -q 'everything/get-env' <<<"$out" && fail "search_tools_regex listed get-env, which does not match ^get-s"
passed=$((passed + 1))

step "--method tools/call --tool-name everything__get-sum --tool-arg a=4 --tool-arg b=5   (a core tool, called directly)"
out=$(inspector --method tools/call --tool-name everything__get-sum --tool-arg a=4 --tool-arg b=5) || fail "everything__get-sum"
echo "$out" | grep '"text": '
grep -q 'The sum of 4 and 5 is 9' <<<"$out" || fail "the directly listed core tool did not reach its upstream"
passed=$((passed + 1))

step "--method tools/call --tool-name call_tool --tool-arg name=delete_note --tool-arg 'arguments={\"id\":\"1\"}'   (no elicitation: refused)"
out=$(inspector --method tools/call --tool-name call_tool --tool-arg name=delete_note --tool-arg 'arguments={"id":"1"}') || fail "call_tool delete_note"
echo "$out" | grep '"text": '
grep -q '"isError": true' <<<"$out" && grep -q 'confirm' <<<"$out" || fail "a destructive call was not refused with how to confirm"
passed=$((passed + 1))

step "--method tools/call --tool-name call_tool --tool-arg name=delete_note --tool-arg 'arguments={\"id\":\"1\"}' --tool-arg confirm=true"
out=$(inspector --method tools/call --tool-name call_tool --tool-arg name=delete_note --tool-arg 'arguments={"id":"1"}' --tool-arg confirm=true) || fail "call_tool delete_note confirmed"
echo "$out" | grep '"text": '
grep -q 'deleted note 1' <<<"$out" || fail "the confirmed destructive call did not reach its upstream"
passed=$((passed + 1))

step "--method tools/call --tool-name get_tool_schema --tool-arg name=simulate-research-query   (a tool that runs only as a task)"
out=$(inspector --method tools/call --tool-name get_tool_schema --tool-arg name=simulate-research-query) || fail "get_tool_schema simulate-research-query"
grep -E '^    "callable"|^      "taskSupport"' <<<"$out"
grep -q '"callable": false' <<<"$out" && grep -q '"taskSupport": "required"' <<<"$out" || fail "get_tool_schema did not say a task-only tool is not callable"
passed=$((passed + 1))

step "--method tools/call --tool-name call_tool --tool-arg name=simulate-research-query --tool-arg 'arguments={\"topic\":\"tasks\"}'   (refused before it is sent)"
out=$(inspector --method tools/call --tool-name call_tool --tool-arg name=simulate-research-query --tool-arg 'arguments={"topic":"tasks"}') || fail "call_tool simulate-research-query"
echo "$out" | grep '"text": '
grep -q '"isError": true' <<<"$out" && grep -q 'runs only as an MCP task' <<<"$out" || fail "a task-only tool's call was not refused with why"
passed=$((passed + 1))

# The official TypeScript SDK's client checks a directly listed tool's
# structured result against the output schema the listing gave it.
client structured-client.mjs "everything__get-structured-content, called directly" "a directly listed tool's output schema or structured result"
passed=$((passed + 1))

# The official TypeScript SDK's client, with a progress handler: each of
# five steps' notices arrives before the result, the last one too.
echo
echo "\$ node progress-client.mjs .../mcp 5   (call_tool trigger-long-running-operation, three times)"
for _ in 1 2 3; do
	out=$(node progress-client.mjs "http://127.0.0.1:$ts_port/mcp" 5) || fail "progress notices lost: $out"
	echo "$out"
done
passed=$((passed + 1))

# The same client, its connection cut mid-call: it resumes the call's
# event stream with Last-Event-ID and reads the result it missed.
client resume-client.mjs "call_tool trigger-long-running-operation for 3 s, the connection cut 1 s in" "a call whose connection broke was not resumed"
passed=$((passed + 1))

# toolsearch's own connection to an upstream cut mid-call: it resumes
# the call's stream with Last-Event-ID and relays the result.
client relay-resume-client.mjs "call_tool wait_seconds 3; the proxy before slow-server cuts toolsearch's connection 1 s in" "a relayed call whose upstream connection broke was not resumed"
grep -q '^cut$' "$work/cut.log" && grep -q '^resume$' "$work/cut.log" || fail "the proxy did not cut toolsearch's connection, or toolsearch did not resume: $(cat "$work/cut.log")"
echo "the proxy cut the connection, toolsearch resumed with Last-Event-ID"
passed=$((passed + 1))

# A real upstream that dies: server-everything killed and started again
# on its port (a deploy). Its express front answers the session it forgot
# 400, not 404; the first call after the restart is answered all the same.
echo
echo "\$ kill server-everything; start it again; inspector --cli .../mcp --method tools/call --tool-name everything__get-sum --tool-arg a=6 --tool-arg b=7"
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
restart_node everything-again "$up_port" node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp
out=$(inspector --method tools/call --tool-name everything__get-sum --tool-arg a=6 --tool-arg b=7) || fail "the first call after the upstream restarted"
echo "$out" | grep '"text": '
grep -q 'The sum of 6 and 7 is 13' <<<"$out" || fail "the first call after the upstream restarted was not answered: $out"
passed=$((passed + 1))

echo
echo "\$ curl -s .../mcp/tool-search/status   (upstreams)"
status=$(curl -s "http://127.0.0.1:$ts_port/mcp/tool-search/status")
echo "$status" | grep -o '"upstreams":\[.*\]'
grep -q '"state":"connected"' <<<"$status" || fail "status does not show the upstream connected"
# Each is the TypeScript SDK's, which offers list_changed on the session
# stream it serves: a change shows at once.
[ "$(grep -o '"list_changed":"heard"' <<<"$status" | wc -l)" = 3 ] || fail "status does not show every upstream's changes heard"
passed=$((passed + 1))

echo
echo "e2e-mcp: $passed passed, 0 failed"
