package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/net/netutil"

	"github.com/toolsearch/toolsearch/cmd/internal/peakmem"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/mcpserver"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/tlsfiles"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("serve", stderr)
	addr := fs.String("addr", e.str("TOOLSEARCH_ADDR", ":8080"), "listen `address` [TOOLSEARCH_ADDR]")
	metricsAddr := fs.String("metrics-addr", e.str("TOOLSEARCH_METRICS_ADDR", ":9090"), "listen `address` of /metrics, apart from the API: index size and upstream health are operators' figures; \"off\" serves none [TOOLSEARCH_METRICS_ADDR]")
	logLevel := fs.String("log-level", e.str("TOOLSEARCH_LOG_LEVEL", "info"), "log level: debug, info, warn, error [TOOLSEARCH_LOG_LEVEL]")
	shutdownTimeout := fs.Duration("shutdown-timeout", e.duration("TOOLSEARCH_SHUTDOWN_TIMEOUT", 10*time.Second), "how long in-flight requests may finish after SIGTERM [TOOLSEARCH_SHUTDOWN_TIMEOUT]")
	anyHost := fs.Bool("allow-any-host", e.boolean("TOOLSEARCH_ALLOW_ANY_HOST", false), "serve a request that reached a loopback address whatever Host it names, for a proxy or port forwarder that connects over loopback; turns off the protection against DNS rebinding [TOOLSEARCH_ALLOW_ANY_HOST]")
	drainDelay := fs.Duration("drain-delay", e.duration("TOOLSEARCH_DRAIN_DELAY", 5*time.Second), "after SIGTERM, how long /readyz fails before the listener closes, so load balancers stop sending traffic [TOOLSEARCH_DRAIN_DELAY]")
	peakDir := fs.String("peak-profile", e.str("TOOLSEARCH_PEAK_PROFILE", ""), "a diagnostic: each time the resident set reaches a new high, write what the process holds into `dir` (peak.txt, heap.pprof, goroutines.txt), to find where a build's peak goes; it costs a little CPU [TOOLSEARCH_PEAK_PROFILE]")
	certFile := fs.String("tls-cert-file", e.str("TOOLSEARCH_TLS_CERT_FILE", ""), "serve the API over TLS (HTTPS, HTTP/1.1) with this PEM certificate and any intermediates, read again when it changes; with -tls-key-file [TOOLSEARCH_TLS_CERT_FILE]")
	keyFile := fs.String("tls-key-file", e.str("TOOLSEARCH_TLS_KEY_FILE", ""), "the PEM key of -tls-cert-file [TOOLSEARCH_TLS_KEY_FILE]")
	idx := addIndexFlags(fs, e, true)
	if err := parseIndex(fs, e, idx, args, false); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	if _, port, _ := net.SplitHostPort(*addr); *metricsAddr == *addr && port != "0" {
		// The second listener failed "address already in use", naming
		// neither flag. Port 0 is a free port each, so two of them differ.
		return fmt.Errorf("-metrics-addr is -addr's %q: give it another port, or \"off\"", *addr)
	}
	admin, err := config.Secret(getenv, "TOOLSEARCH_ADMIN_TOKEN")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	var serving *tlsfiles.Server
	if *certFile != "" || *keyFile != "" {
		if serving, err = tlsfiles.NewServer(*certFile, *keyFile, logger.With("component", "tls")); err != nil {
			return err
		}
	}
	for _, t := range envTypos(environ()) {
		logger.Warn("an environment variable no command reads is set", "name", t.name, "did_you_mean", t.known)
	}
	for _, s := range idx.ignored {
		logger.Warn("a setting does nothing here", "setting", s)
	}
	// The Go heap's limit follows the container's: near 90 % of its
	// cgroup's memory limit the GC works harder instead of letting the
	// pod be OOM-killed mid-build. GOMEMLIMIT, when set, wins.
	if limit, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithLogger(logger.With("component", "memlimit"))); err == nil && limit < math.MaxInt64 {
		logger.Info("go memory limit", "bytes", limit)
	}
	emb, err := idx.newEmbedder(logger)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP re-reads catalog and config, as a change does (paced, and
	// retried while it fails). Unhandled, it ended the process at once,
	// undrained, losing the searches learning held unreported: a terminal
	// closing, or an operator used to SIGHUP reloading a server.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if *peakDir != "" {
		// Before the catalog is read, so that the start-up's peak is seen
		// as well as a rebuild's.
		w, err := peakmem.New(*peakDir)
		if err != nil {
			return err
		}
		logger.Info("peak profile on", "dir", *peakDir)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			if err := w.Run(ctx, 5*time.Millisecond, 1<<20); err != nil {
				logger.Error("peak profile stopped", "err", err)
			}
		}()
		// A write under way at shutdown finishes, rather than leaving its
		// file half made beside the last whole one.
		defer func() { <-watched }()
	}

	var file config.File // the config file's, or zero values: defaults
	if idx.file != nil {
		file = *idx.file
	}
	// Objects are built in dependency order: upstreams, the service (which
	// reads their tools), the MCP server (which announces its snapshots).
	// An upstream's change reaches the service through changed, read once
	// the service exists.
	changed := make(chan struct{}, 1)
	ups, err := newUpstreams(idx, file, getenv, changed, logger)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cl := idx.providerTLS; cl != nil {
		if _, ok := cl.Expiry(); ok {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: tlsfiles.ExpiryMetric, Help: tlsfiles.ExpiryHelp, ConstLabels: prometheus.Labels{"server": "embedding"}},
				func() float64 { exp, _ := cl.Expiry(); return float64(exp.Unix()) }))
		}
	}
	if serving != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: tlsfiles.ServingExpiryMetric, Help: tlsfiles.ServingExpiryHelp},
			func() float64 { return float64(serving.Expiry().Unix()) }))
	}
	if ups != nil {
		reg.MustRegister(ups)
	}
	cfg, err := idx.searchConfig(emb)
	if err != nil {
		return err
	}
	cfg.Registerer, cfg.Logger = reg, logger
	// What the catalog needs at its peak is compared with the container's
	// limit on each publish (package sizing), since live upstreams decide
	// the catalog's size after the pod was sized.
	if limit, err := memlimit.FromCgroup(); err == nil && limit > 0 && limit < math.MaxInt64 {
		cfg.MemoryLimit = int64(limit)
	}
	cfg.Connections = max(file.Limits.ConnectionBound(), 0)
	cfg.TLS = serving != nil
	cfg.BodyBudget = max(cmp.Or(file.Limits.RequestBodyBudgetBytes, httpapi.DefaultBodyBudgetBytes), 0)
	// Catalog and config are read before anything is opened, created or
	// listened on (the learning file, the port): a bad file stops start-up
	// with a message naming the file, server and tool, and leaves nothing
	// behind. With live upstreams, no tools yet is not fatal: the service
	// is unready until an upstream delivers some.
	setup, err := cfg.Load(ctx)
	if err != nil && !(ups != nil && errors.Is(err, catalog.ErrNoTools)) {
		return err
	}
	if cfg.Learning, cfg.LearningOff, err = openLearning(ctx, file.Learning, getenv, logger); err != nil {
		return err
	}
	if cfg.Learning != nil {
		defer cfg.Learning.Store.Close()
	}
	svc := search.New(cfg)
	mcpOpts := mcpserver.Options{Logger: logger, Version: versionString(), Sessions: mcpserver.SessionLimits{
		Idle: time.Duration(file.Limits.MCPSessionIdle), Max: file.Limits.MCPMaxSessions, MaxPerKey: file.Limits.MCPMaxSessionsPerKey},
		Confirm: file.MCP.ConfirmDestructive, ConfirmTimeout: time.Duration(file.MCP.ConfirmTimeout), KeyConfirm: svc.KeyConfirm,
		Expose: file.MCP.Expose, Registerer: reg, AnyHost: *anyHost}
	if ups != nil {
		mcpOpts.Upstreams = ups
	}
	mcpSrv := mcpserver.New(svc, mcpOpts)
	svc.OnPublish(func(snap *search.Snapshot) {
		mcpSrv.Announce(snap)
		// A build allocates several times what its snapshot keeps (the
		// analysis, the counts, the old snapshot until now); give the
		// freed memory back, so the pod's RSS is what it holds. Not in
		// the publishing path: the forced collection takes a while, and
		// the build's caller (Run recording its next retry) should not
		// wait for it. It ends when the collection does.
		go debug.FreeOSMemory()
	})

	// What requests in flight rely on (upstream sessions, which carry
	// their calls' progress, and the writer of what callers teach) stops
	// once the last request is answered, not at the signal: a call
	// relayed through the drain lost its progress notices, and feedback
	// sent then was never written.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	upDone := make(chan error, 1)
	if ups != nil {
		go func() { upDone <- ups.Run(workCtx) }()
		// Index what the upstreams offer at start-up; slow ones join later.
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		ups.WaitFirst(wctx)
		cancel()
		// Read again with their tools; changes so far are in this read.
		select {
		case <-changed:
		default:
		}
		if setup, err = cfg.Load(ctx); err != nil && !errors.Is(err, catalog.ErrNoTools) {
			return err
		}
	} else {
		upDone <- nil
	}
	go func() { // SIGHUP: a change
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				logger.Info("SIGHUP: reading catalog and config again")
				select {
				case changed <- struct{}{}:
				default: // a rebuild is due already; it reads them too
				}
			}
		}
	}()
	rebuildsDone := make(chan struct{})
	go func() {
		defer close(rebuildsDone)
		svc.Follow(ctx, changed)
	}()
	learnDone := make(chan struct{})
	go func() {
		defer close(learnDone)
		svc.Learn(workCtx, changed)
	}()
	reaperDone := make(chan struct{})
	go func() {
		defer close(reaperDone)
		mcpSrv.Run(ctx) // closes idle MCP sessions
	}()

	// Listen before serving so a taken port fails here, with its cause.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	refused := httpapi.NewRefusedConnections(reg)
	ln = httpapi.LimitClients(ln, clientLimits(&file, serving != nil), refused, logger)
	// Connections are bounded before anything is read from them: 8,000
	// slow bodies from one client held 223 MiB of a 256 MiB pod. Past
	// the bound, new connections wait in the kernel's queue.
	bound := file.Limits.ConnectionBound()
	if bound > 0 {
		ln = netutil.LimitListener(ln, bound)
	}
	// Inside the bound: a connection counts from its accept, before its
	// handshake, which net/http times out with ReadHeaderTimeout.
	if serving != nil {
		ln = tls.NewListener(ln, serving.Config())
	}
	handshakeErrors := prometheus.NewCounter(prometheus.CounterOpts{Name: "toolsearch_http_tls_handshake_errors_total",
		Help: "TLS handshakes on the API's listener that failed: a client that does not trust its certificate, a load balancer's TCP check, a scanner; 0 when the API serves in clear."})
	reg.MustRegister(handshakeErrors)
	var draining atomic.Bool
	srv := &http.Server{
		Handler:           httpapi.NewServer(svc, httpOptions(logger, reg, admin, mcpSrv, ups, &draining, &file, *anyHost)),
		ReadHeaderTimeout: 5 * time.Second,
		// Headers carry a key and a few short values; net/http's 1 MiB
		// default lets each request hold a megabyte of method or path.
		MaxHeaderBytes: 64 << 10,
		ReadTimeout:    30 * time.Second,
		IdleTimeout:    2 * time.Minute,
		ErrorLog:       httpapi.ServerErrorLog(logger, handshakeErrors),
		ConnState:      httpapi.CountConnections(reg),
	}
	if bound > 0 {
		srv.ConnState = httpapi.ReclaimIdle(srv, bound, srv.ConnState)
	}
	srv.RegisterOnShutdown(mcpSrv.EndStreams)
	logger.Info("listening", "addr", ln.Addr().String(), "tls", serving != nil, "console", consoleURL(ln.Addr(), serving != nil), "version", versionString(),
		"embedder", emb.Info().Provider, "catalog", strings.Join(idx.catalogs.values, ","))
	metricsSrv, metricsErr, err := serveMetrics(*metricsAddr, httpapi.NewMetricsServer(reg, logger, svc, &draining), refused, logger)
	if err != nil {
		ln.Close()
		return err
	}

	// The index builds in the background so /healthz and the status page
	// answer while it does: a slow or failing provider is visible, not a
	// container that never starts. If the provider fails, a keyword index
	// serves and the build is retried.
	buildDone := make(chan error, 1)
	go func() { buildDone <- svc.Run(ctx, setup) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case err := <-metricsErr:
		return fmt.Errorf("serve metrics: %w", err)
	case <-ctx.Done():
	}
	// Fail readiness first and keep serving for the drain delay, so the
	// load balancer stops routing here before the listener closes; then
	// finish in-flight requests within the shutdown timeout. A second
	// signal (Ctrl-C again, at a terminal) ends the drain at once.
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(again)
	draining.Store(true)
	delay := *drainDelay
	if svc.Current() == nil {
		// Never ready, so no load balancer routes here: nothing to drain
		// (a pod stopped during a long first build stops at once).
		delay = 0
	}
	logger.Info("draining", "delay", delay.String(), "grace", shutdownTimeout.String(), "hint", "a second interrupt skips the delay")
	select {
	case <-time.After(delay):
	case <-again:
		logger.Info("drain cut short by a second signal")
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(sctx) // scrapes are short; nothing to drain
	}
	stopWork()
	<-buildDone // Run returns promptly once ctx is done
	<-upDone
	<-rebuildsDone
	<-learnDone
	<-reaperDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// openLearning opens the learning store the config names (nil, with no
// error, when learning is off). A file that cannot be opened (a read-only
// filesystem) turns learning off for this process, with a warning and the
// reason returned for status; a file
// another process holds (the previous one, draining) and a database that is
// down are waited for, learning resuming when they can be used. Searches
// never depend on either. A bad setting is an error.
func openLearning(ctx context.Context, c config.Learning, getenv func(string) string, logger *slog.Logger) (*search.Learning, string, error) {
	if !c.On() {
		return nil, "", nil
	}
	cfg := learn.Config{MinCallers: c.MinCallers, MinSessions: c.MinSessions, CallerCap: c.CallerCap,
		HalfLife: time.Duration(c.HalfLife), Retention: time.Duration(c.Retention)}
	var store learn.Store
	var err error
	switch c.Store {
	case "postgres":
		env := cmp.Or(c.DSNEnv, config.DefaultLearningDSNEnv)
		dsn, serr := config.Secret(getenv, env)
		if serr != nil {
			return nil, "", serr
		}
		if dsn == "" {
			return nil, "", fmt.Errorf("learning.store is postgres but %s is not set", env)
		}
		store, err = learn.OpenPostgres(ctx, dsn, cfg, nil)
		if errors.Is(err, learn.ErrBadDSN) {
			// A setting, not the store's state: serving on without
			// learning would leave replicas meant to share one store each
			// learning nothing, behind a warning nobody reads.
			return nil, "", fmt.Errorf("%s: %w", env, err)
		}
	default:
		// The environment's path wins, so that processes sharing one
		// config (tests, two local servers) need not share one file.
		path := cmp.Or(getenv("TOOLSEARCH_LEARNING_PATH"), c.Path, config.DefaultLearningPath)
		store, err = learn.Open(path, cfg, nil)
	}
	switch {
	case errors.Is(err, learn.ErrWaiting):
		// The database is not up yet, or the previous process, still
		// draining, holds the file: learning waits; searches do not.
		logger.Warn("learning store not usable yet", "err", err)
	case err != nil:
		logger.Warn("learning is off: its store cannot be opened", "err", err)
		return nil, "learning is off: its store cannot be opened: " + err.Error(), nil
	}
	logger.Info("learning from use", "store", store.Kind())
	return &search.Learning{Store: store, Refresh: time.Duration(c.Refresh)}, "", nil
}

// consoleURL is where a browser finds the operator console on the API
// listener.
func consoleURL(addr net.Addr, https bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	scheme := "http://"
	if https {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port) + "/console/"
}

// maxMetricsConnections bounds the metrics listener's connections.
const maxMetricsConnections = 64

// serveMetrics serves h, /metrics and the probes, on addr, a listener
// apart from the API's (nil, with a nil channel, when addr is "off"). A
// taken port fails here.
func serveMetrics(addr string, h http.Handler, refused *prometheus.CounterVec, logger *slog.Logger) (*http.Server, <-chan error, error) {
	if addr == "off" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics listen: %w", err)
	}
	// Scrapers and probes hold a connection or two: the bound keeps slow
	// clients from holding memory here as on the API's listener, and a
	// quarter of it an address's keeps one client from holding it all:
	// 64 connections from one pod, each sending its headers slowly, made
	// six of eight probes with the kubelet's 1 s timeout fail (the
	// NetworkPolicy lets any pod reach this port), and a kubelet restarts
	// a pod whose liveness probe fails three times.
	ln = httpapi.LimitClients(ln, httpapi.ClientLimits{Listener: "metrics", Connections: maxMetricsConnections / 4}, refused, logger)
	ln = netutil.LimitListener(ln, maxMetricsConnections)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 64 << 10,
		ReadTimeout: 30 * time.Second, ErrorLog: httpapi.ServerErrorLog(logger, nil)}
	srv.ConnState = httpapi.ReclaimIdle(srv, maxMetricsConnections, nil)
	logger.Info("metrics listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return srv, errc, nil
}

// newUpstreams is the manager of the config file's live upstreams (nil
// when there are none); each change of their tools is signalled on changed.
func newUpstreams(idx *indexFlags, file config.File, getenv func(string) string, changed chan<- struct{}, logger *slog.Logger) (*upstream.Manager, error) {
	upCfgs, err := upstreamConfigs(idx.config, file, getenv)
	if err != nil || len(upCfgs) == 0 {
		return nil, err
	}
	ups, err := upstream.New(upCfgs, upstream.Options{OnChange: func() {
		select {
		case changed <- struct{}{}:
		default: // a rebuild is already due; it will read this change too
		}
	}, Logger: logger, MaxResultBytes: file.Limits.UpstreamMaxResultBytes, ResultBudgetBytes: file.Limits.UpstreamResultBudgetBytes,
		Instance: rand.Text()}) // per process: the API refuses requests that carry it (httpOptions)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", idx.config, err)
	}
	idx.upstreamParts = ups.Parts
	return ups, nil
}

// Search rate defaults per API key (or client address): far above what a
// router sends, far below what would run up a provider bill.
const (
	defaultSearchRate  = 50
	defaultSearchBurst = 100
)

// TLS connections per client address: as many a second as searches
// (defaultSearchRate), so that a client that opens a connection for each
// search is never refused one before its search budget is spent.
const (
	defaultHandshakeRate  = defaultSearchRate
	defaultHandshakeBurst = defaultSearchBurst
)

// clientLimits are what one client address may open on the API's
// listener, from the file's limits and their defaults: a quarter of the
// connections (as a caller may hold a quarter of the body budget), and
// when serving TLS the handshakes.
func clientLimits(file *config.File, tls bool) httpapi.ClientLimits {
	l := file.Limits
	c := httpapi.ClientLimits{Listener: "api", Connections: l.MaxConnectionsPerAddress, Trusted: file.Auth.Proxies(), Assigned: file.Auth.Assigned()}
	if c.Connections == 0 {
		bound := l.ConnectionBound()
		if bound < 0 {
			bound = config.DefaultMaxConnections // no bound: a quarter of the default's
		}
		c.Connections = max(bound/4, 1)
	}
	if !tls || l.TLSHandshakeRate < 0 {
		return c
	}
	c.HandshakeRate = cmp.Or(l.TLSHandshakeRate, defaultHandshakeRate)
	c.HandshakeBurst = l.TLSHandshakeBurst
	if c.HandshakeBurst <= 0 {
		c.HandshakeBurst = max(defaultHandshakeBurst, int(c.HandshakeRate))
	}
	return c
}

func httpOptions(logger *slog.Logger, reg *prometheus.Registry, admin string, mcpSrv *mcpserver.Server, ups *upstream.Manager, draining *atomic.Bool, file *config.File, anyHost bool) httpapi.Options {
	o := httpapi.Options{Logger: logger, Registerer: reg, AdminToken: admin, MCP: mcpSrv.Handler(), CoreDirect: mcpSrv, Draining: draining,
		SearchRate: file.Limits.SearchRate, SearchBurst: file.Limits.SearchBurst, AnyHost: anyHost, TrustedProxies: file.Auth.Proxies(),
		Forwarded: file.Auth.ForwardedHeader == config.HeaderForwarded, AssignedNetworks: file.Auth.Assigned(), BodyBudgetBytes: file.Limits.RequestBodyBudgetBytes}
	switch {
	case o.SearchRate == 0:
		o.SearchRate = defaultSearchRate
	case o.SearchRate < 0:
		o.SearchRate = 0 // off
	}
	if o.SearchBurst <= 0 {
		o.SearchBurst = max(defaultSearchBurst, int(o.SearchRate))
	}
	if ups != nil { // a nil *Manager in the interface would not be nil
		o.Instance = ups.Instance()
		o.Upstreams = ups
	}
	return o
}

// upstreamConfigs reads the config file's upstreams, expanding ${VAR} in
// header values from the environment.
func upstreamConfigs(path string, f config.File, getenv func(string) string) ([]upstream.Config, error) {
	var out []upstream.Config
	for _, u := range f.Upstreams {
		headers := map[string]string{}
		for k, v := range u.Headers {
			var missing []string
			var bad error
			headers[k] = os.Expand(v, func(name string) string {
				val, err := config.Secret(getenv, name) // a header value ends at a newline
				switch {
				case err != nil:
					bad = cmp.Or(bad, err)
				case val == "":
					missing = append(missing, name)
				}
				return val
			})
			if bad != nil {
				return nil, fmt.Errorf("config %s: upstream %q: header %s: %w", path, u.Name, k, bad)
			}
			if len(missing) > 0 {
				return nil, fmt.Errorf("config %s: upstream %q: header %s: environment variable %s is empty", path, u.Name, k, strings.Join(missing, ", "))
			}
		}
		var tls *upstream.TLS
		if u.TLS != nil {
			c := tlsConfig(u.TLS)
			tls = &c
		}
		out = append(out, upstream.Config{Name: u.Name, URL: u.URL, Headers: headers, Refresh: time.Duration(u.Refresh),
			Timeout: time.Duration(u.Timeout), BreakerFailures: u.BreakerFailures, BreakerCooldown: time.Duration(u.BreakerCooldown),
			Health: time.Duration(u.HealthInterval), TLS: tls})
	}
	return out, nil
}
