package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// environ is the process's environment; a test's stand-in.
var environ = os.Environ

// warnEnv writes envTypos' warnings, and the settings idx ignores, for a
// command that prints to w (serve logs them instead).
func warnEnv(w io.Writer, idx *indexFlags) {
	for _, t := range envTypos(environ()) {
		fmt.Fprintf(w, "toolsearch: warning: %s is set but no command reads it; did you mean %s?\n", t.name, t.known)
	}
	for _, s := range idx.ignored {
		fmt.Fprintf(w, "toolsearch: warning: %s\n", s)
	}
}

// envTypo is a variable set that no command reads, and the name it is
// likely a typo of.
type envTypo struct{ name, known string }

// envNames are the environment variables toolsearch reads, all commands'
// (TestEnvNamesMatchTheCode holds the list to the code).
var envNames = []string{
	"OPENAI_API_KEY",
	"TOOLSEARCH_ADDR", "TOOLSEARCH_ADMIN_TOKEN", "TOOLSEARCH_ALLOW_ANY_HOST", "TOOLSEARCH_API_KEY", "TOOLSEARCH_API_KEYS",
	"TOOLSEARCH_CATALOG", "TOOLSEARCH_COMPANION_BOOST", "TOOLSEARCH_CONFIG", "TOOLSEARCH_DRAIN_DELAY", "TOOLSEARCH_EMBEDDER",
	"TOOLSEARCH_EMBEDDING_API_KEY", "TOOLSEARCH_EMBEDDING_API_TYPE", "TOOLSEARCH_EMBEDDING_API_VERSION", "TOOLSEARCH_EMBEDDING_BASE_URL",
	"TOOLSEARCH_EMBEDDING_BATCH_SIZE", "TOOLSEARCH_EMBEDDING_DIMENSIONS", "TOOLSEARCH_EMBEDDING_MODEL", "TOOLSEARCH_EMBEDDING_TIMEOUT",
	"TOOLSEARCH_EVAL_CASES", "TOOLSEARCH_EVAL_K", "TOOLSEARCH_EVAL_URL", "TOOLSEARCH_EVAL_WAIT", "TOOLSEARCH_FUSION",
	"TOOLSEARCH_HYBRID_ALPHA", "TOOLSEARCH_INDEX_QUANTIZATION", "TOOLSEARCH_LEARNING_DSN", "TOOLSEARCH_LEARNING_PATH",
	"TOOLSEARCH_LOG_LEVEL", "TOOLSEARCH_METRICS_ADDR", "TOOLSEARCH_PEAK_PROFILE", "TOOLSEARCH_QUERY_CACHE_SIZE", "TOOLSEARCH_QUERY_CACHE_TTL",
	"TOOLSEARCH_QUERY_TIMEOUT", "TOOLSEARCH_RESCORE", "TOOLSEARCH_SERVER", "TOOLSEARCH_SHUTDOWN_TIMEOUT", "TOOLSEARCH_SNAPSHOT",
	"TOOLSEARCH_TLS_CERT_FILE", "TOOLSEARCH_TLS_KEY_FILE",
}

// envTypos warns of each variable of environ ("NAME=value") that no
// command reads but that is within two edits of one that is (the
// closest), or that is one with a part of its name left out (widened):
// set with a
// typo, a setting is read as unset, and TOOLSEARCH_EMBEDER=openai served
// with the local embedder, saying nothing. Names further from every
// known one are left alone: a deployment's environment holds other
// programs' settings, and a config's key_env may name any variable.
func envTypos(environ []string) []envTypo {
	var out []envTypo
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "TOOLSEARCH_") || slices.Contains(envNames, name) {
			continue
		}
		known := closest(name, envNames)
		if known == "" {
			known = widened(name)
		}
		if known != "" {
			out = append(out, envTypo{name, known})
		}
	}
	return out
}

// widened is the one known variable that name is with a part of its name
// left out before the rest (TOOLSEARCH_BASE_URL for
// TOOLSEARCH_EMBEDDING_BASE_URL, the flag's name without its section),
// or "" when none or several are (TOOLSEARCH_TIMEOUT: the embedding's,
// the query's or the shutdown's).
func widened(name string) string {
	rest := strings.TrimPrefix(name, "TOOLSEARCH_")
	found := ""
	for _, n := range envNames {
		if strings.HasSuffix(n, "_"+rest) && n != "TOOLSEARCH_"+rest {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

// closest is the one of names within two edits of name, the nearest
// (the first of equals), or "": a variable, command or flag typed with a
// slip is that close, and one further off is something else.
func closest(name string, names []string) string {
	best, near := 3, ""
	for _, n := range names {
		if d := edits(name, n); d < best {
			best, near = d, n
		}
	}
	return near
}

// edits is the Levenshtein distance between a and b, bytes each.
func edits(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
