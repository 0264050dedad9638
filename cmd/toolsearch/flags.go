package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/rank"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/snapshot"
	"github.com/toolsearch/toolsearch/pkg/tlsfiles"
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
		switch name {
		case "serve":
			fmt.Fprint(fs.Output(), "  TOOLSEARCH_API_KEYS                              comma-separated bearer keys for the search endpoints\n"+
				"  TOOLSEARCH_ADMIN_TOKEN                           bearer token for POST /mcp/tool-search/rebuild\n"+
				"  TOOLSEARCH_LEARNING_DSN                          PostgreSQL connection string for learning.store: postgres\n"+
				"  TOOLSEARCH_LEARNING_PATH                         the learning file (learning.store: file), over learning.path\n")
		case "eval":
			fmt.Fprint(fs.Output(), "  TOOLSEARCH_API_KEY                               the bearer key -url sends (one of the server's TOOLSEARCH_API_KEYS)\n")
		}
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
	return parseEnv(e, key, def, strconv.Atoi, "a whole number")
}

func (e *env) float(key string, def float64) float64 {
	return parseEnv(e, key, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number")
}

func (e *env) duration(key string, def time.Duration) time.Duration {
	return parseEnv(e, key, def, time.ParseDuration, "a duration such as 2s or 500ms")
}

func (e *env) boolean(key string, def bool) bool {
	return parseEnv(e, key, def, strconv.ParseBool, "true or false")
}

// parseEnv is key's value read by parse, or def when it is unset; a value
// parse refuses is noted (reported by err) and def used meanwhile.
func parseEnv[T any](e *env, key string, def T, parse func(string) (T, error), want string) T {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s=%q is not %s", key, v, want))
		return def
	}
	return x
}

// list is key's comma-separated entries (config.List): an empty one is
// noted, and none used meanwhile.
func (e *env) list(key, what string) []string {
	l, err := config.List(e.getenv, key, what)
	if err != nil {
		e.errs = append(e.errs, err.Error())
	}
	return l
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
	if strings.TrimSpace(v) == "" {
		return errors.New("an empty file name")
	}
	if !l.set {
		l.values, l.set = nil, true
	}
	l.values = append(l.values, v)
	return nil
}

// indexFlags are the catalog and embedder settings that serve, eval and
// query share.
type indexFlags struct {
	fs             *flag.FlagSet
	getenv         func(string) string
	config         string
	catalogs       listFlag
	server         string
	embedder       string
	baseURL        string
	model          string
	dimensions     int
	batchSize      int
	timeout        time.Duration
	queryTimeout   time.Duration
	apiType        string
	apiVersion     string
	fusion         string
	hybridAlpha    float64
	companionBoost float64
	quantization   string
	rescore        int
	snapshotPath   string
	qcacheSize     int
	qcacheTTL      time.Duration
	apiKey         string           // from the environment only, so -h never prints it
	providerTLS    *tlsfiles.Client // embedding.tls, once newEmbedder has read it
	// upstreamParts, when set, returns the live upstreams' tools; they join
	// the catalog files on every build.
	upstreamParts func() []catalog.Part
	// file is the config file as parsed at start-up; nil when none.
	file *config.File
	// ignored says which settings from the environment or the config
	// file nothing reads with the choices made (unread), to be warned of.
	ignored []string
}

// addIndexFlags adds the flags that load a catalog and embed it, and, for
// a command that ranks queries (ranking), those that shape ranking and
// query embedding; a command without ranking keeps their defaults (and
// their variables), and its -h does not list them.
func addIndexFlags(fs *flag.FlagSet, e *env, ranking bool) *indexFlags {
	f := &indexFlags{fs: fs, getenv: e.getenv}
	rfs := fs
	if !ranking {
		rfs = flag.NewFlagSet("unlisted", flag.ContinueOnError)
	}
	fs.StringVar(&f.config, "config", e.str("TOOLSEARCH_CONFIG", ""), "YAML config `file`: core, templates, auth, embedding, search [TOOLSEARCH_CONFIG]")
	f.catalogs.values = e.list("TOOLSEARCH_CATALOG", "files")
	fs.Var(&f.catalogs, "catalog", "catalog `file` (JSON or YAML), repeatable; the embedded default when none [TOOLSEARCH_CATALOG, comma-separated]")
	fs.StringVar(&f.server, "server", e.str("TOOLSEARCH_SERVER", ""), "server `name` for catalog files that are a bare tools/list result; default: the file's name [TOOLSEARCH_SERVER]")
	fs.StringVar(&f.embedder, "embedder", e.str("TOOLSEARCH_EMBEDDER", "local"), "embedder: local (offline) or openai (any OpenAI-compatible API) [TOOLSEARCH_EMBEDDER]")
	fs.StringVar(&f.baseURL, "embedding-base-url", e.str("TOOLSEARCH_EMBEDDING_BASE_URL", embedding.DefaultOpenAIBaseURL), "OpenAI-compatible API base `url` [TOOLSEARCH_EMBEDDING_BASE_URL]")
	fs.StringVar(&f.model, "embedding-model", e.str("TOOLSEARCH_EMBEDDING_MODEL", embedding.DefaultOpenAIModel), "embedding `model` for openai [TOOLSEARCH_EMBEDDING_MODEL]")
	fs.IntVar(&f.dimensions, "embedding-dimensions", e.int("TOOLSEARCH_EMBEDDING_DIMENSIONS", 0), "vector width, at most 8192; 0: the model's own (openai) or 1024 (local) [TOOLSEARCH_EMBEDDING_DIMENSIONS]")
	fs.IntVar(&f.batchSize, "embedding-batch-size", e.int("TOOLSEARCH_EMBEDDING_BATCH_SIZE", embedding.DefaultBatchSize), "inputs per embeddings request, at most 2048 (Hugging Face TEI: its --max-client-batch-size, 32 by default) [TOOLSEARCH_EMBEDDING_BATCH_SIZE]")
	fs.DurationVar(&f.timeout, "embedding-timeout", e.duration("TOOLSEARCH_EMBEDDING_TIMEOUT", embedding.DefaultTimeout), "timeout of one embeddings request at build time [TOOLSEARCH_EMBEDDING_TIMEOUT]")
	rfs.DurationVar(&f.queryTimeout, "query-timeout", e.duration("TOOLSEARCH_QUERY_TIMEOUT", search.DefaultQueryTimeout), "timeout for embedding one query [TOOLSEARCH_QUERY_TIMEOUT]")
	fs.StringVar(&f.apiType, "embedding-api-type", e.str("TOOLSEARCH_EMBEDDING_API_TYPE", "openai"), "API flavour for -embedder openai: openai (OpenAI, Ollama, vLLM, LocalAI, ...) or azure (Azure OpenAI deployments) [TOOLSEARCH_EMBEDDING_API_TYPE]")
	fs.StringVar(&f.apiVersion, "embedding-api-version", e.str("TOOLSEARCH_EMBEDDING_API_VERSION", ""), "Azure OpenAI api-version, such as 2024-10-21 [TOOLSEARCH_EMBEDDING_API_VERSION]")
	rfs.StringVar(&f.snapshotPath, "snapshot", e.str("TOOLSEARCH_SNAPSHOT", ""), "index snapshot `file` from toolsearch index: its vectors are used when catalog and model match, so the provider is not called [TOOLSEARCH_SNAPSHOT]")
	rfs.IntVar(&f.qcacheSize, "query-cache-size", e.int("TOOLSEARCH_QUERY_CACHE_SIZE", search.DefaultQueryCacheSize), "query vectors kept from a remote embedder (LRU); 0: the default; -1 turns the cache off [TOOLSEARCH_QUERY_CACHE_SIZE]")
	rfs.DurationVar(&f.qcacheTTL, "query-cache-ttl", e.duration("TOOLSEARCH_QUERY_CACHE_TTL", search.DefaultQueryCacheTTL), "how long a cached query vector is kept; 0: the default [TOOLSEARCH_QUERY_CACHE_TTL]")
	rfs.StringVar(&f.fusion, "fusion", e.str("TOOLSEARCH_FUSION", rank.FusionConvex), "hybrid fusion: convex (normalised scores, weighted) or rrf (reciprocal rank) [TOOLSEARCH_FUSION]")
	rfs.Float64Var(&f.hybridAlpha, "hybrid-alpha", e.float("TOOLSEARCH_HYBRID_ALPHA", rank.DefaultHybridAlpha), "dense weight in convex fusion, above 0 and at most 1 [TOOLSEARCH_HYBRID_ALPHA]")
	rfs.Float64Var(&f.companionBoost, "companion-boost", e.float("TOOLSEARCH_COMPANION_BOOST", rank.DefaultCompanionBoost), "how much a tool callers used with one of the best tools gains, 0-4; 0: off (learning still learns and shows companions) [TOOLSEARCH_COMPANION_BOOST]")
	rfs.StringVar(&f.quantization, "index-quantization", e.str("TOOLSEARCH_INDEX_QUANTIZATION", index.QuantNone), "dense index first pass: none (exact float32) or binary (bit codes, then the best rescored exactly; faster on large catalogs, some recall lost: BENCHMARKS.md) [TOOLSEARCH_INDEX_QUANTIZATION]")
	rfs.IntVar(&f.rescore, "rescore", e.int("TOOLSEARCH_RESCORE", index.DefaultRescore), "with -index-quantization binary, how many candidates at least are rescored exactly [TOOLSEARCH_RESCORE]")
	// Trimmed as every secret from the environment is (config.Secret): a
	// key file's trailing newline made every provider request fail.
	f.apiKey = strings.TrimSpace(e.str("TOOLSEARCH_EMBEDDING_API_KEY", e.getenv("OPENAI_API_KEY")))
	return f
}

// maxQueryCacheSize bounds -query-cache-size.
const maxQueryCacheSize = 1_000_000

// searchConfig is the part of search.Config the flags decide.
func (f *indexFlags) searchConfig(emb search.Embedder) (search.Config, error) {
	if f.fusion != rank.FusionConvex && f.fusion != rank.FusionRRF {
		return search.Config{}, fmt.Errorf("-fusion must be convex or rrf, got %q", f.fusion)
	}
	if f.hybridAlpha <= 0 || f.hybridAlpha > 1 {
		return search.Config{}, fmt.Errorf("-hybrid-alpha must be in (0, 1], got %v", f.hybridAlpha)
	}
	if f.quantization != index.QuantNone && f.quantization != index.QuantBinary {
		return search.Config{}, fmt.Errorf("-index-quantization must be none or binary, got %q", f.quantization)
	}
	if f.companionBoost < 0 || f.companionBoost > 4 {
		return search.Config{}, fmt.Errorf("-companion-boost must be in [0, 4], got %v", f.companionBoost)
	}
	if f.rescore < 1 {
		return search.Config{}, fmt.Errorf("-rescore must be at least 1, got %d", f.rescore)
	}
	if f.qcacheSize < -1 || f.qcacheSize > maxQueryCacheSize {
		// Each entry is a query's vector (6 KiB at 1,536 wide): past a
		// million, the cache alone could hold more than any pod.
		return search.Config{}, fmt.Errorf("-query-cache-size must be -1 (off) to %d, got %d", maxQueryCacheSize, f.qcacheSize)
	}
	if f.queryTimeout <= 0 {
		return search.Config{}, fmt.Errorf("-query-timeout must be positive, got %v", f.queryTimeout)
	}
	cfg := search.Config{Embedder: emb, QueryTimeout: f.queryTimeout, Rank: rank.Config{Fusion: f.fusion, Alpha: f.hybridAlpha, CompanionBoost: f.companionBoost},
		Quantization: f.quantization, Rescore: f.rescore,
		Load: f.loader(), Version: versionString(), QueryCacheSize: f.qcacheSize, QueryCacheTTL: f.qcacheTTL}
	if f.snapshotPath != "" {
		// A damaged file stops start-up: it is a broken deploy artifact,
		// and an index built from it could be silently wrong.
		h, mx, err := snapshot.ReadFile(f.snapshotPath)
		if err != nil {
			return search.Config{}, err
		}
		cfg.Preload = &search.Preload{Source: f.snapshotPath, Header: h, Matrix: mx}
	}
	return cfg, nil
}

// newEmbedder builds the configured embedder; logger hears of its client
// certificate's rotations (embedding.tls).
func (f *indexFlags) newEmbedder(logger *slog.Logger) (search.Embedder, error) {
	if f.dimensions < 0 || f.dimensions > embedding.MaxDimensions {
		// 2,000,000,000 made the local embedder's first vector a fatal
		// out of memory; no provider answer may be wider anyway.
		return nil, fmt.Errorf("-embedding-dimensions must be 0-%d, got %d", embedding.MaxDimensions, f.dimensions)
	}
	if f.timeout <= 0 {
		return nil, fmt.Errorf("-embedding-timeout must be positive, got %v", f.timeout)
	}
	if f.batchSize < 1 || f.batchSize > embedding.DefaultBatchSize {
		return nil, fmt.Errorf("-embedding-batch-size must be 1-%d, got %d", embedding.DefaultBatchSize, f.batchSize)
	}
	switch f.embedder {
	case "local":
		return embedding.NewLocal(f.dimensions), nil
	case "openai":
		if f.apiType != "openai" && f.apiType != "azure" {
			return nil, fmt.Errorf("-embedding-api-type must be openai or azure, got %q", f.apiType)
		}
		if err := embedding.CheckBaseURL(f.baseURL); err != nil {
			return nil, fmt.Errorf("-embedding-base-url: %w", err)
		}
		if strings.TrimSpace(f.model) == "" {
			// Every request would be refused; the index would stay keyword-only.
			return nil, errors.New("-embedding-model must name a model (with -embedding-api-type azure, the deployment)")
		}
		// A key file of two lines: every request would fail on its header,
		// the service serving by keyword for good. The key is never quoted.
		if !httpguts.ValidHeaderFieldValue(f.apiKey) {
			return nil, errors.New("the embedding API key (TOOLSEARCH_EMBEDDING_API_KEY or OPENAI_API_KEY) holds a newline or a control character: no request could carry it")
		}
		hc := &http.Client{}
		if f.file != nil && f.file.Embedding.TLS != nil {
			cl, err := tlsfiles.NewClient(f.baseURL, tlsConfig(f.file.Embedding.TLS), logger.With("component", "embedding"))
			if err != nil {
				return nil, fmt.Errorf("config %s: embedding.%w", f.config, err)
			}
			hc.Transport = cl.Transport(http.DefaultTransport.(*http.Transport))
			f.providerTLS = cl
		}
		return embedding.NewOpenAI(embedding.OpenAIConfig{
			APIType:    f.apiType,
			APIVersion: f.apiVersion,
			BaseURL:    f.baseURL,
			APIKey:     f.apiKey,
			Model:      f.model,
			Dimensions: f.dimensions,
			BatchSize:  f.batchSize,
			Timeout:    f.timeout,
			HTTPClient: hc,
		}), nil
	}
	return nil, fmt.Errorf("-embedder must be local or openai, got %q", f.embedder)
}

// flagNotKey says where a setting goes when a config file's unknown
// top-level key is a flag's name ("addr", "hybrid_alpha"): a flag and its
// variable, which the file cannot set, rather than the keys it takes.
func flagNotKey(err error, path string, fs *flag.FlagSet) error {
	var ke *jsonkeys.Error
	if !errors.As(err, &ke) || ke.Problem != "unknown" || ke.Path != "" || ke.Hint != "" {
		return err
	}
	fl := fs.Lookup(strings.ReplaceAll(strings.ToLower(ke.Key), "_", "-"))
	if fl == nil || fl.Name == "config" {
		return err
	}
	where := "-" + fl.Name
	if m := usageEnv.FindStringSubmatch(fl.Usage); m != nil {
		where += " or " + m[1]
	}
	if key, ok := fileKeyOf[fl.Name]; ok {
		return fmt.Errorf("config %s: key %q is unknown: in the config file it is %s (else %s)", path, ke.Key, key, where)
	}
	return fmt.Errorf("config %s: key %q is not a config file key: it is set by %s", path, ke.Key, where)
}

// fileKeyOf is the config file's key for each flag a file may set, as
// applyConfig reads them.
var fileKeyOf = map[string]string{
	"embedder": "embedding.provider", "embedding-base-url": "embedding.base_url", "embedding-model": "embedding.model",
	"embedding-api-type": "embedding.api_type", "embedding-api-version": "embedding.api_version",
	"embedding-dimensions": "embedding.dimensions", "embedding-batch-size": "embedding.batch_size",
	"embedding-timeout": "embedding.timeout", "query-timeout": "search.query_timeout",
}

// usageEnv finds the variable a flag's usage names.
var usageEnv = regexp.MustCompile(`\[(TOOLSEARCH_[A-Z0-9_]+)`)

// envOf maps each flag that a config file may set, or that one choice
// alone reads (modal), to its variable.
var envOf = map[string]string{
	"embedder":              "TOOLSEARCH_EMBEDDER",
	"embedding-base-url":    "TOOLSEARCH_EMBEDDING_BASE_URL",
	"embedding-model":       "TOOLSEARCH_EMBEDDING_MODEL",
	"embedding-dimensions":  "TOOLSEARCH_EMBEDDING_DIMENSIONS",
	"embedding-batch-size":  "TOOLSEARCH_EMBEDDING_BATCH_SIZE",
	"embedding-api-type":    "TOOLSEARCH_EMBEDDING_API_TYPE",
	"embedding-api-version": "TOOLSEARCH_EMBEDDING_API_VERSION",
	"embedding-timeout":     "TOOLSEARCH_EMBEDDING_TIMEOUT",
	"query-timeout":         "TOOLSEARCH_QUERY_TIMEOUT",
	"query-cache-size":      "TOOLSEARCH_QUERY_CACHE_SIZE",
	"query-cache-ttl":       "TOOLSEARCH_QUERY_CACHE_TTL",
	"rescore":               "TOOLSEARCH_RESCORE",
	"hybrid-alpha":          "TOOLSEARCH_HYBRID_ALPHA",
}

// applyConfig reads the config file, if any, once: its settings fill the
// flags that neither the command line nor the environment set (flags beat
// the environment, which beats the file, which beats the defaults), and
// the parsed file serves serve's limits and upstreams and the first build.
// Each rebuild reads it afresh: picking up an edit is what a rebuild is for.
func (f *indexFlags) applyConfig() error {
	if f.config == "" {
		return nil
	}
	c, err := config.Load(f.config)
	if err != nil {
		return flagNotKey(err, f.config, f.fs)
	}
	f.file = c
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	e := c.Embedding
	values := map[string]string{
		"embedder": e.Provider, "embedding-base-url": e.BaseURL, "embedding-model": e.Model,
		"embedding-api-type": e.APIType, "embedding-api-version": e.APIVersion,
	}
	if e.Dimensions > 0 {
		values["embedding-dimensions"] = strconv.Itoa(e.Dimensions)
	}
	if e.BatchSize > 0 {
		values["embedding-batch-size"] = strconv.Itoa(e.BatchSize)
	}
	if e.Timeout > 0 {
		values["embedding-timeout"] = time.Duration(e.Timeout).String()
	}
	if c.Search.QueryTimeout > 0 {
		values["query-timeout"] = time.Duration(c.Search.QueryTimeout).String()
	}
	for name, v := range values {
		if v == "" || set[name] || f.getenv(envOf[name]) != "" {
			continue
		}
		if err := f.fs.Set(name, v); err != nil {
			return fmt.Errorf("config %s: %s: %w", f.config, name, err)
		}
	}
	return nil
}

// loader returns the function that reads catalog and config for each build
// (start-up and every rebuild).
func (f *indexFlags) loader() func(context.Context) (*search.Setup, error) {
	src := &config.Source{Catalogs: f.catalogs.values, Server: f.server, Path: f.config, Parsed: f.file,
		Getenv: f.getenv, Upstreams: f.upstreamParts}
	return func(context.Context) (*search.Setup, error) {
		p, err := src.Load()
		if err != nil {
			return nil, err
		}
		if err := search.Check(p); err != nil {
			return nil, fmt.Errorf("config %s: %w", src.Where(), err)
		}
		return p, nil
	}
}

// suggestFlag follows the flag package's "flag provided but not defined"
// and the usage it prints with the flag within two edits of it, if any,
// where the eye lands last.
func suggestFlag(fs *flag.FlagSet, err error) {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return
	}
	name = strings.TrimPrefix(name, "-")
	var names []string
	fs.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	if near := closest(strings.ToLower(name), names); near != "" {
		fmt.Fprintf(fs.Output(), "%s: -%s is not a flag; did you mean -%s?\n", fs.Name(), name, near)
	}
}

// parse parses args, then reports any environment variable that did not
// parse: a typo in a deployment's environment should stop it, not be ignored.
// Flags may follow positional arguments (`query "text" -k 3`), which the
// flag package alone would take as more text; after "--" everything is
// positional. fs.Args() is the positional arguments, in order.
func parse(fs *flag.FlagSet, e *env, args []string) error {
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if err == flag.ErrHelp {
				return exitCode(0)
			}
			suggestFlag(fs, err)
			return exitCode(2)
		}
		left := fs.Args()
		if used := len(rest) - len(left); used > 0 && rest[used-1] == "--" {
			positional = append(positional, left...)
			break
		}
		if len(left) == 0 {
			break
		}
		positional, rest = append(positional, left[0]), left[1:]
	}
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return exitCode(2)
	}
	if err := e.err(); err != nil {
		fmt.Fprintln(fs.Output(), "toolsearch:", err)
		return exitCode(2)
	}
	return nil
}

// checkValues refuses, for every flag however it was set (command line,
// environment, config file, default), a number that is not finite and a negative
// duration: strconv reads "NaN", and -hybrid-alpha NaN slipped past its
// range check (every comparison with NaN is false) and scored every tool
// NaN; a negative timeout fails every call it bounds.
func checkValues(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		switch v := g.Get().(type) {
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				err = fmt.Errorf("-%s must be a finite number, got %v", f.Name, v)
			}
		case time.Duration:
			if v < 0 {
				err = fmt.Errorf("-%s must not be negative, got %v", f.Name, v)
			}
		}
	})
	return err
}

// parseIndex parses args for a command with index flags, then applies the
// config file. Only a command that takes arguments (query's text) gets
// any: `toolsearch lint catalog.json` linted the embedded catalog and
// passed, the file never read.
func parseIndex(fs *flag.FlagSet, e *env, idx *indexFlags, args []string, takesArgs bool) error {
	if err := parse(fs, e, args); err != nil {
		return err
	}
	if !takesArgs && fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q: this command takes flags only (a catalog file is -catalog FILE)\n", fs.Name(), fs.Arg(0))
		return exitCode(2)
	}
	typed := map[string]bool{} // before the config file, whose values set flags too
	fs.Visit(func(f *flag.Flag) { typed[f.Name] = true })
	if err := idx.applyConfig(); err != nil {
		fmt.Fprintln(fs.Output(), "toolsearch:", err)
		return exitCode(2)
	}
	if err := checkValues(fs); err != nil {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return exitCode(2)
	}
	var err error
	if idx.ignored, err = idx.unread(typed); err != nil {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return exitCode(2)
	}
	return nil
}

// modal are the flags that one choice alone reads: -embedding-model is
// the provider's, so with the local embedder it does nothing.
var modal = []struct {
	name   string
	on, is string // read only when flag on is set to is
}{
	{"embedding-base-url", "embedder", "openai"},
	{"embedding-model", "embedder", "openai"},
	{"embedding-api-type", "embedder", "openai"},
	{"embedding-api-version", "embedding-api-type", "azure"},
	{"embedding-batch-size", "embedder", "openai"},
	{"embedding-timeout", "embedder", "openai"},
	{"query-cache-size", "embedder", "openai"},
	{"query-cache-ttl", "embedder", "openai"},
	{"rescore", "index-quantization", "binary"},
	{"hybrid-alpha", "fusion", "convex"},
}

// unread refuses a flag typed on the command line (typed) that nothing
// reads with the choices made: -embedding-base-url without -embedder
// openai served the local embedder, saying nothing. Set by the
// environment or the config file, such a setting is returned to be warned
// of instead: one environment or config serves several commands, and
// `eval -embedder local -config prod.yaml` compares embedders on purpose.
func (f *indexFlags) unread(typed map[string]bool) ([]string, error) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var ignored []string
	for _, m := range modal {
		fl, on := f.fs.Lookup(m.name), f.fs.Lookup(m.on)
		if fl == nil || on == nil || on.Value.String() == m.is {
			continue // a command without the flag, or one that reads it
		}
		why := fmt.Sprintf("only -%s %s reads it, and -%s is %s", m.on, m.is, m.on, on.Value.String())
		switch {
		case typed[m.name]:
			return nil, fmt.Errorf("-%s does nothing here: %s", m.name, why)
		case f.getenv(envOf[m.name]) != "":
			ignored = append(ignored, fmt.Sprintf("%s is set, but %s", envOf[m.name], why))
		case set[m.name]:
			ignored = append(ignored, fmt.Sprintf("config %s sets -%s, but %s", f.config, m.name, why))
		}
	}
	if f.file != nil && f.file.Embedding.TLS != nil && f.embedder != "openai" {
		ignored = append(ignored, fmt.Sprintf("config %s sets embedding.tls, but only -embedder openai reads it, and -embedder is %s", f.config, f.embedder))
	}
	return ignored, nil
}

// tlsConfig is a config file's tls block as tlsfiles reads it.
func tlsConfig(t *config.TLS) tlsfiles.Config {
	return tlsfiles.Config{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName}
}
