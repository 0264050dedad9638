#!/usr/bin/env bash
# Builds the toolsearch image with podman from deploy/image/Containerfile
# and the binary at $1, with no network, then runs it: with podman when this
# machine can run containers, else from the image's exported filesystem
# under chroot as the image's user. Either way: /readyz, then one search.
set -euo pipefail
bin=${1:?usage: offline.sh path/to/toolsearch}
tag=${TAG:-toolsearch:offline}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; podman rm -f toolsearch-offline-check >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

if ! command -v podman >/dev/null; then
	echo "installing Debian's podman"
	sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get install -y -q --no-install-recommends podman || { $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends podman; }
fi
mkdir "$work/ctx"
cp "$bin" "$work/ctx/toolsearch"
cp /etc/ssl/certs/ca-certificates.crt "$work/ctx/"
podman build --pull=never -q -t "$tag" -f "$here/Containerfile" "$work/ctx" >/dev/null
podman image inspect "$tag" --format 'built {{.RepoTags}}: user {{.Config.User}}, {{.Config.Entrypoint}} {{.Config.Cmd}}, {{.Size}} bytes'

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if podman run -d --name toolsearch-offline-check -p "127.0.0.1:$port:8080" "$tag" >"$work/run.log" 2>&1; then
	how="podman run"
elif [ "$(id -u)" = 0 ]; then
	# This machine cannot run containers (seen: crun may not set rlimits
	# here). Run what the image holds, as its user, in its filesystem.
	how="chroot into the exported image as 65532 (podman run: $(tail -1 "$work/run.log"))"
	podman rm -f toolsearch-offline-check >/dev/null 2>&1 || true
	mkdir "$work/rootfs"
	podman create --name toolsearch-offline-check "$tag" >/dev/null
	podman export toolsearch-offline-check | tar -x -C "$work/rootfs"
	chroot --userspec=65532:65532 "$work/rootfs" /toolsearch serve -addr "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
	pid=$!
else
	echo "image-offline: built, but not run: podman run failed ($(tail -1 "$work/run.log")) and chroot needs root" >&2
	exit 1
fi
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "image-offline: FAIL: not ready ($how)" >&2; cat "$work/serve.log" 2>/dev/null >&2; exit 1; }
top=$(curl -s "http://127.0.0.1:$port/mcp/tool-search" -H 'Content-Type: application/json' \
	-d '{"query":"merge a pull request","top_k":1,"include_core":false}' | grep -o '"name":"[a-z_]*"' | head -1)
[ "$top" = '"name":"merge_pull_request"' ] || { echo "image-offline: FAIL: search answered $top ($how)" >&2; exit 1; }
echo "image-offline: ran the image ($how): ready, and the search answered $top"
