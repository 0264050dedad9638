package hints

import "github.com/toolsearch/toolsearch/pkg/analysis"

// class is what a tool's action does to the world it touches.
type class int8

const (
	none     class = iota
	read           // changes nothing: readOnlyHint true
	additive       // adds, never overwrites: destructiveHint false, idempotentHint false
	update         // changes what exists: destructiveHint true
	remove         // destroys: destructiveHint true, idempotentHint true (twice is once)
	act            // acts with effects it cannot bound (runs code, clicks, deploys): destructiveHint true
)

// table is the verbs, in their base forms, by class; verbs holds them
// stemmed as the tool's words are. A word used as a noun ("list", "post")
// is listed by the use tool names make of it as their leading word.
// "query" is in no class: a query language (SQL, GraphQL, Cypher) can
// change data as well as read it.
var table = map[class][]string{
	read: {
		"get", "list", "read", "search", "find", "fetch", "retrieve", "describe", "show", "view",
		"lookup", "look", "check", "count", "inspect", "browse", "explore", "validate", "verify", "explain",
		"summarize", "analyze", "analyse", "compare", "calculate", "compute", "convert", "translate",
		"estimate", "predict", "recommend", "suggest", "detect", "identify", "recognize", "classify",
		"extract", "parse", "preview", "echo", "ping", "status", "stat", "info", "diff", "monitor",
		"measure", "scan", "tree", "snapshot", "screenshot", "wait", "download", "export", "resolve",
		"lint", "test", "print", "review", "examine", "load", "open", "see", "watch", "track", "poll",
		"sum", "forecast", "geocode", "locate", "filter", "sort", "rank", "match", "diagnose", "audit",
	},
	additive: {
		"create", "add", "insert", "append", "post", "send", "upload", "new", "register", "submit",
		"comment", "reply", "publish", "invite", "fork", "star", "copy", "clone", "generate", "make",
		"save", "store", "schedule", "book", "reserve", "subscribe", "follow", "share",
		"notify", "email", "message", "tag", "label", "attach", "import", "request",
	},
	update: {
		"update", "edit", "set", "modify", "patch", "put", "change", "rename", "replace", "write",
		"overwrite", "move", "merge", "apply", "configure", "toggle", "enable", "disable", "assign",
		"mark", "close", "lock", "unlock", "resize", "transition", "rotate", "restore", "sync", "upsert",
		"emulate", "handle", "transfer", "approve", "reject", "grant", "commit", "rebase", "checkout",
	},
	remove: {
		"delete", "remove", "drop", "purge", "terminate", "destroy", "erase", "wipe", "truncate",
		"clear", "reset", "kill", "revoke", "uninstall", "unregister", "cancel", "archive", "force",
		"discard", "evict", "flush", "rollback", "revert", "unpublish", "unsubscribe", "unfollow",
		"unstar", "detach", "deactivate", "shutdown", "stop", "abort", "empty", "prune", "rm", "del",
	},
	act: {
		"run", "execute", "exec", "eval", "evaluate", "invoke", "click", "type", "press", "fill",
		"navigate", "drag", "hover", "scroll", "trigger", "start", "restart", "deploy", "install",
		"push", "migrate", "pay", "buy", "order", "purchase", "sign", "charge", "refund", "call",
		"dial", "launch", "spawn", "build", "release", "provision", "scale", "upgrade",
	},
}

// openWorld are words that put a tool in touch with the world outside
// its server: the web, mail, other people's systems.
var openWorld = stems("web", "http", "https", "url", "internet", "browser", "email", "mail", "fetch",
	"navigate", "webhook", "tweet", "slack", "sms")

var verbs = func() map[string]class {
	m := map[string]class{}
	for c, words := range table {
		for _, w := range words {
			m[analysis.Stem(w)] = c
		}
	}
	return m
}()

func stems(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[analysis.Stem(w)] = true
	}
	return m
}
