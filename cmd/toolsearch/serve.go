package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/search"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("serve", stderr)
	addr := fs.String("addr", e.str("TOOLSEARCH_ADDR", ":8080"), "listen `address` [TOOLSEARCH_ADDR]")
	logLevel := fs.String("log-level", e.str("TOOLSEARCH_LOG_LEVEL", "info"), "log level: debug, info, warn, error [TOOLSEARCH_LOG_LEVEL]")
	shutdownTimeout := fs.Duration("shutdown-timeout", e.duration("TOOLSEARCH_SHUTDOWN_TIMEOUT", 10*time.Second), "how long in-flight requests may finish after SIGTERM [TOOLSEARCH_SHUTDOWN_TIMEOUT]")
	idx := addIndexFlags(fs, e)
	if err := parseIndex(fs, e, idx, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	emb, err := idx.newEmbedder()
	if err != nil {
		return err
	}

	// Catalog and config are read before listening: a bad file stops
	// start-up with a message naming the file, server and tool.
	load := idx.loader()
	setup, err := load(ctx)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg, err := idx.searchConfig(emb)
	if err != nil {
		return err
	}
	cfg.Load, cfg.Registerer, cfg.Logger = load, reg, logger
	svc := search.New(cfg)

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Listen before serving so a taken port fails here, with its cause.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler: httpapi.NewServer(svc, httpapi.Options{
			Logger: logger, Registerer: reg, Gatherer: reg, AdminToken: getenv("TOOLSEARCH_ADMIN_TOKEN"),
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("listening", "addr", ln.Addr().String(), "version", versionString(),
		"embedder", emb.Info().Provider, "catalog", strings.Join(idx.catalogs.values, ","))

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
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace", *shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-buildDone // Run returns promptly once ctx is done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}
