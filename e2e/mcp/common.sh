# Shared by run.sh and conformance.sh (sourced, not run): a work directory
# and the processes to stop when the script exits, free ports, starting a
# Node MCP server or toolsearch and waiting until it is up, and the npm
# install.
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# free_port: a port free at this moment, never one already handed out in
# this run. A port found free is free only until something binds it, and
# before that, two calls could name the same one: a node server started
# on the port that toolsearch had been given, toolsearch failed to bind,
# and the client talked to the wrong server.
free_port() {
	local p
	for _ in $(seq 20); do
		p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
			shuf -i 20000-60000 -n 1)
		grep -qx "$p" "$work/ports" 2>/dev/null && continue
		echo "$p" >>"$work/ports"
		echo "$p"
		return
	done
	echo "free_port: no port free" >&2
	return 1
}

# serve VAR LOG READY COMMAND...: starts COMMAND (which reads its port from
# $PORT) on a free port, sets VAR to that port and waits until READY (a
# command given the port) succeeds while the process runs. When VAR already
# holds a port (a server started again where it was), that one is used.
# A free port another process took since free_port found it is tried
# again with another; any other failure to start ends the script with
# LOG's last lines.
serve() {
	local var=$1 log=$2 ready=$3 pid port
	shift 3
	for _ in 1 2 3 4 5; do
		port=${!var:-$(free_port)}
		PORT=$port "$@" >>"$log" 2>&1 &
		pid=$!
		pids+=("$pid")
		for _ in $(seq 200); do
			kill -0 "$pid" 2>/dev/null || break
			if "$ready" "$port" && kill -0 "$pid" 2>/dev/null; then
				printf -v "$var" '%s' "$port"
				return
			fi
			sleep 0.1
		done
		[ -z "${!var:-}" ] && ! kill -0 "$pid" 2>/dev/null && tail -3 "$log" | grep -q "address already in use" || break
		unset 'pids[-1]'
	done
	echo "FAIL: $(basename "$log" .log) did not start on port $port:" >&2
	tail -20 "$log" >&2
	exit 1
}

# start_node NAME VAR SCRIPT ARGS...: runs a Node MCP server on a free
# port (or VAR's, when set), which VAR is set to, its log in
# $work/NAME.log, and waits until it says it listens.
start_node() {
	local name=$1
	node_log=$work/$name.log
	shift
	serve "$1" "$node_log" node_listening node "${@:2}"
}
node_listening() { grep -q "listening on port $1" "$node_log" 2>/dev/null; }

# start_toolsearch CONFIG: serves toolsearch with CONFIG on a free port,
# ts_port, its log appended to $work/toolsearch.log, and waits until it is
# ready.
start_toolsearch() {
	serve ts_port "$work/toolsearch.log" toolsearch_ready sh -c 'TOOLSEARCH_LEARNING_PATH="$1/learned-$PORT.db" exec "$2" serve -addr "127.0.0.1:$PORT" -metrics-addr off -config "$3"' sh "$work" "$bin" "$1"
}
toolsearch_ready() { curl -sf "http://127.0.0.1:$1/readyz" >/dev/null; }

cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
