#!/usr/bin/env bash
# Start-up at scale, as BENCHMARKS.md reports it: toolsearch serves a
# catalog, and this prints the seconds from start to /readyz answering 200,
# the resident set a second later, and the peak resident set, from /proc.
# Usage: e2e/scale/startup.sh BIN CATALOG [serve flags...]
# Catalogs of any size: go run ./cmd/catgen -tools 100000 -out /tmp/cat-100k.json
set -euo pipefail
bin=$1 cat=$2
shift 2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
log=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
start=$(date +%s.%N)
"$bin" serve -addr "127.0.0.1:$port" -metrics-addr off -catalog "$cat" "$@" >"$log" 2>&1 &
pid=$!
until curl -sf "localhost:$port/readyz" >/dev/null 2>&1; do
	kill -0 "$pid" 2>/dev/null || { echo "toolsearch exited:"; tail -5 "$log"; exit 1; }
	sleep 0.02
done
end=$(date +%s.%N)
sleep 1
rss=$(awk '/VmRSS/{printf "%.0f", $2/1024}' "/proc/$pid/status")
hwm=$(awk '/VmHWM/{printf "%.0f", $2/1024}' "/proc/$pid/status")
echo "ready $(python3 -c "print(round($end-$start, 2))") s, RSS $rss MiB, peak $hwm MiB"
