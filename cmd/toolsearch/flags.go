package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embed"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// newFlagSet returns a flag set whose -h lists each flag with its variable.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("toolsearch "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: toolsearch %s [flags]\n\nflags (each with its environment variable):\n", name)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nsecrets come from the environment only, never flags:\n"+
			"  OPENAI_API_KEY or TOOLSEARCH_EMBEDDING_API_KEY   key for -embedder openai\n")
	}
	return fs
}

// env reads flag defaults from the environment. Errors in a variable's
// value are collected and reported once, after parsing, naming the variable.
type env struct {
	getenv func(string) string
	errs   []string
}

func (e *env) str(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

func (e *env) int(key string, def int) int {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q is not a whole number", key, v))
		return def
	}
	return n
}

func (e *env) duration(key string, def time.Duration) time.Duration {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q is not a duration such as 2s or 500ms", key, v))
		return def
	}
	return d
}

func (e *env) err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return fmt.Errorf("bad environment: %s", strings.Join(e.errs, "; "))
}

// listFlag is a repeatable flag whose default comes from a comma-separated
// environment variable; the first -flag on the command line replaces it.
type listFlag struct {
	values []string
	set    bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }
func (l *listFlag) Set(v string) error {
	if !l.set {
		l.values, l.set = nil, true
	}
	l.values = append(l.values, v)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// indexFlags are the catalog and embedder settings that serve, eval and
// query share.
type indexFlags struct {
	catalogs     listFlag
	server       string
	embedder     string
	baseURL      string
	model        string
	dimensions   int
	timeout      time.Duration
	queryTimeout time.Duration
	apiType      string
	apiVersion   string
	apiKey       string // from the environment only, so -h never prints it
}

func addIndexFlags(fs *flag.FlagSet, e *env) *indexFlags {
	f := &indexFlags{}
	f.catalogs.values = splitList(e.getenv("TOOLSEARCH_CATALOG"))
	fs.Var(&f.catalogs, "catalog", "catalog `file` (JSON or YAML), repeatable; the embedded default when none [TOOLSEARCH_CATALOG, comma-separated]")
	fs.StringVar(&f.server, "server", e.str("TOOLSEARCH_SERVER", ""), "server `name` for catalog files that are a bare tools/list result; default: the file's name [TOOLSEARCH_SERVER]")
	fs.StringVar(&f.embedder, "embedder", e.str("TOOLSEARCH_EMBEDDER", "local"), "embedder: local (offline) or openai (any OpenAI-compatible API) [TOOLSEARCH_EMBEDDER]")
	fs.StringVar(&f.baseURL, "embedding-base-url", e.str("TOOLSEARCH_EMBEDDING_BASE_URL", embed.DefaultOpenAIBaseURL), "OpenAI-compatible API base `url` [TOOLSEARCH_EMBEDDING_BASE_URL]")
	fs.StringVar(&f.model, "embedding-model", e.str("TOOLSEARCH_EMBEDDING_MODEL", embed.DefaultOpenAIModel), "embedding `model` for openai [TOOLSEARCH_EMBEDDING_MODEL]")
	fs.IntVar(&f.dimensions, "embedding-dimensions", e.int("TOOLSEARCH_EMBEDDING_DIMENSIONS", 0), "vector width; 0: the model's own (openai) or 1024 (local) [TOOLSEARCH_EMBEDDING_DIMENSIONS]")
	fs.DurationVar(&f.timeout, "embedding-timeout", e.duration("TOOLSEARCH_EMBEDDING_TIMEOUT", embed.DefaultTimeout), "timeout of one embeddings request at build time [TOOLSEARCH_EMBEDDING_TIMEOUT]")
	fs.DurationVar(&f.queryTimeout, "query-timeout", e.duration("TOOLSEARCH_QUERY_TIMEOUT", search.DefaultQueryTimeout), "timeout for embedding one query [TOOLSEARCH_QUERY_TIMEOUT]")
	fs.StringVar(&f.apiType, "embedding-api-type", e.str("TOOLSEARCH_EMBEDDING_API_TYPE", "openai"), "API flavour for -embedder openai: openai (OpenAI, Ollama, vLLM, LocalAI, ...) or azure (Azure OpenAI deployments) [TOOLSEARCH_EMBEDDING_API_TYPE]")
	fs.StringVar(&f.apiVersion, "embedding-api-version", e.str("TOOLSEARCH_EMBEDDING_API_VERSION", ""), "Azure OpenAI api-version, such as 2024-10-21 [TOOLSEARCH_EMBEDDING_API_VERSION]")
	f.apiKey = e.str("TOOLSEARCH_EMBEDDING_API_KEY", e.getenv("OPENAI_API_KEY"))
	return f
}

// newEmbedder builds the configured embedder.
func (f *indexFlags) newEmbedder() (search.Embedder, error) {
	if f.dimensions < 0 {
		return nil, fmt.Errorf("-embedding-dimensions must not be negative, got %d", f.dimensions)
	}
	switch f.embedder {
	case "local":
		return embed.NewLocal(f.dimensions), nil
	case "openai":
		if f.apiType != "openai" && f.apiType != "azure" {
			return nil, fmt.Errorf("-embedding-api-type must be openai or azure, got %q", f.apiType)
		}
		return embed.NewOpenAI(embed.OpenAIConfig{
			APIType:    f.apiType,
			APIVersion: f.apiVersion,
			BaseURL:    f.baseURL,
			APIKey:     f.apiKey,
			Model:      f.model,
			Dimensions: f.dimensions,
			Timeout:    f.timeout,
			HTTPClient: &http.Client{},
		}), nil
	}
	return nil, fmt.Errorf("-embedder must be local or openai, got %q", f.embedder)
}

// loader returns the function that reads the catalog for each build.
func (f *indexFlags) loader() func(context.Context) (*catalog.Catalog, error) {
	paths := f.catalogs.values
	server := f.server
	return func(context.Context) (*catalog.Catalog, error) {
		if len(paths) == 0 {
			return catalog.Default()
		}
		return catalog.Load(paths, server)
	}
}

// parse parses args, then reports any environment variable that did not
// parse: a typo in a deployment's environment should stop it, not be ignored.
func parse(fs *flag.FlagSet, e *env, args []string) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitCode(0)
		}
		return exitCode(2)
	}
	if err := e.err(); err != nil {
		fmt.Fprintln(fs.Output(), "toolsearch:", err)
		return exitCode(2)
	}
	return nil
}
