#!/usr/bin/env bash
# Checks the MCP Inspector transcript in docs/mcp.md (the block after the
# "make e2e-mcp runs these commands" directive) against what run.sh printed
# in this run, ports and times aside, so the documented output cannot go
# stale. UPDATE_DOCS=1 writes this run's transcript into the document.
# Usage: e2e/mcp/docs-check.sh TRANSCRIPT DOC
set -euo pipefail
transcript=$1 doc=$2
marker='make e2e-mcp runs these commands'
# The transcript as the document indents it: the commands and answers,
# without run.sh's leading blank line and its closing count.
sed -e '1{/^$/d}' -e '/^e2e-mcp: [0-9]* passed/d' "$transcript" | sed -e '${/^$/d}' -e 's/^/    /' -e 's/^    $/    /' >"$transcript.block"
# The document's block: indented or empty lines after the directive, up to
# the first line that is neither.
awk -v m="$marker" 'found==2 { if ($0 ~ /^    / || $0 == "") print; else exit } found==1 && $0=="" { found=2; next } index($0, m) { found=1 }' "$doc" |
	sed -e '${/^$/d}' >"$transcript.doc"
normalise() { sed -E -e 's/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' -e 's/"last_success":"[^"]*"/"last_success":"T"/g' -e 's/ +$//' "$1"; }
if diff <(normalise "$transcript.doc") <(normalise "$transcript.block") >"$transcript.diff"; then
	echo "e2e-mcp: docs/mcp.md's Inspector transcript matches this run"
	exit 0
fi
if [ -n "${UPDATE_DOCS:-}" ]; then
	awk -v m="$marker" -v block="$transcript.block" '
		found==2 { if ($0 ~ /^    / || $0 == "") next; while ((getline l < block) > 0) print l; print ""; found=3 }
		found==1 && $0=="" { print; found=2; next }
		index($0, m) { found=1 }
		{ print }
		END { if (found==2) while ((getline l < block) > 0) print l }' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
	echo "e2e-mcp: rewrote docs/mcp.md's Inspector transcript from this run"
	exit 0
fi
echo "e2e-mcp: FAIL: docs/mcp.md's Inspector transcript differs from this run (UPDATE_DOCS=1 make e2e-mcp rewrites it):" >&2
cat "$transcript.diff" >&2
exit 1
