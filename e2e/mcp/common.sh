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

# serve VAR PORT LOG READY COMMAND...: starts COMMAND (which reads its port
# from $PORT) on PORT, or on a free port when PORT is empty, sets VAR to
# that port and waits until READY (a command given the port) succeeds
# while the process runs. A free port another process took since
# free_port found it is tried again with another; any other failure to
# start ends the script with LOG's last lines.
serve() {
	local var=$1 fixed=$2 log=$3 ready=$4 pid port
	shift 4
	for _ in 1 2 3 4 5; do
		port=${fixed:-$(free_port)}
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
		[ -z "$fixed" ] && ! kill -0 "$pid" 2>/dev/null && tail -3 "$log" | grep -q "address already in use" || break
		unset 'pids[-1]'
	done
	echo "FAIL: $(basename "$log" .log) did not start on port $port:" >&2
	tail -20 "$log" >&2
	exit 1
}

# start_node NAME VAR SCRIPT ARGS...: runs a Node MCP server on a free
# port, which VAR is set to, its log in $work/NAME.log, and waits until it
# says it listens. restart_node NAME PORT SCRIPT ARGS... runs one on PORT
# (a server started again where it was).
start_node() { node_log=$work/$1.log serve "$2" "" "$work/$1.log" node_listening node "${@:3}"; }
restart_node() { node_log=$work/$1.log serve restarted_port "$2" "$work/$1.log" node_listening node "${@:3}"; }
node_listening() { grep -q "listening on port $1" "$node_log" 2>/dev/null; }

# start_toolsearch CONFIG: serves toolsearch with CONFIG on a free port,
# ts_port, its log appended to $work/toolsearch.log, and waits until it is
# ready. Each call is a new server on a new port.
start_toolsearch() {
	serve ts_port "" "$work/toolsearch.log" toolsearch_ready sh -c 'TOOLSEARCH_LEARNING_PATH="$1/learned-$PORT.db" exec "$2" serve -addr "127.0.0.1:$PORT" -metrics-addr off -config "$3"' sh "$work" "$bin" "$1"
}

# Ready, and this run's server: no port is handed out twice in a run, so
# only the server started on it logs that it listens there.
toolsearch_ready() {
	grep -q "\"msg\":\"listening\",\"addr\":\"127.0.0.1:$1\"" "$work/toolsearch.log" && curl -sf "http://127.0.0.1:$1/readyz" >/dev/null
}

cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
