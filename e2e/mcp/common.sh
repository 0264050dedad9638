# Shared by run.sh and conformance.sh (sourced, not run): a work directory
# and the processes to stop when the script exits, free ports, starting a
# Node MCP server and waiting until it listens, and the npm install.
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
	shuf -i 20000-60000 -n 1; }

# start_node NAME PORT SCRIPT ARGS...: runs a Node MCP server on PORT, its
# log in $work/NAME.log, and waits until it says it listens.
start_node() {
	local name=$1 port=$2
	shift 2
	PORT=$port node "$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		grep -q "listening on port" "$work/$name.log" 2>/dev/null && return
		sleep 0.1
	done
}

cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
