#!/bin/bash
# The caller-side probes of RELIABILITY.md ("No caller past its limits or
# its key"), against one toolsearch binary, one line each.
# Usage: e2e/hostile/probes.sh BIN [serve flags...]
set -u
bin=$1; shift
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
work=$(mktemp -d)
pid=
# The server goes with the script, however it ends (a reader that stops
# early, as head does, ends it with SIGPIPE before its last line).
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 1' PIPE INT TERM HUP
big=$work/big.json
{ printf '{"query":"'; head -c 10000000 /dev/zero | tr '\0' q; printf '"}'; } >"$big"
TOOLSEARCH_API_KEYS=key-a $bin serve -addr 127.0.0.1:$port -metrics-addr off -drain-delay 0s "$@" > "$work/serve.log" 2>&1 &
pid=$!
for i in $(seq 100); do curl -sf localhost:$port/readyz >/dev/null && break; sleep 0.1; done
kill -0 $pid 2>/dev/null && curl -sf localhost:$port/readyz >/dev/null || { echo "probes: toolsearch did not become ready on port $port:" >&2; cat "$work/serve.log" >&2; exit 1; }
b=http://127.0.0.1:$port
echo "status keys: $(curl -s $b/mcp/tool-search/status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted(d.keys())[:8], "size" in d)')"
echo "metrics on API port: $(curl -s -o /dev/null -w '%{http_code}' $b/metrics)"
echo "catalog ?server=%zz: $(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer key-a' "$b/mcp/tool-search/catalog?server=%zz")"
echo "HEAD /readyz: $(curl -s -o /dev/null -w '%{http_code}' -I $b/readyz)"
echo "console 404 type: $(curl -s -o /dev/null -w '%{http_code} %{content_type}' $b/console/nope)"
echo "30 KB template answer bytes: $(curl -s -H 'Authorization: Bearer key-a' --json "{\"template\":\"$(head -c 30000 /dev/zero | tr '\0' t)\"}" $b/mcp/tool-search | wc -c)"
echo "10 MB body: $(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer key-a' -H 'Content-Type: application/json' --data-binary @"$big" $b/mcp/tool-search; echo " exit $?")"
sid=$(curl -s -i -H 'Authorization: Bearer key-a' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}' $b/mcp | grep -i mcp-session-id | awk '{print $2}' | tr -d '\r')
python3 - "$b" "$sid" <<'PY'
import json,sys,urllib.request
b,sid=sys.argv[1],sys.argv[2]
calls=[{"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"issue %d"%i}}} for i in range(400)]
req=urllib.request.Request(b+"/mcp",data=json.dumps(calls).encode(),headers={"Authorization":"Bearer key-a","Content-Type":"application/json","Accept":"application/json, text/event-stream","Mcp-Session-Id":sid,"Mcp-Protocol-Version":"2025-03-26"})
try:
    r=urllib.request.urlopen(req); body=r.read(); print("batch of 400 search calls:", r.status, body.count(b'"result"'), "answered")
except urllib.error.HTTPError as e:
    print("batch of 400 search calls:", e.code, e.read()[:120])
PY
kill $pid; wait $pid 2>/dev/null
