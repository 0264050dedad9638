package learn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsearch/toolsearch/pkg/redact"
)

// PostgresStore keeps evidence in PostgreSQL, so that every replica of a
// deployment learns from all of their traffic: each records its own
// events, and each Load reads the merged tally (replicas read it at a
// bounded interval; see the service's learning refresh).
type PostgresStore struct {
	pool     *pgxpool.Pool
	cfg      Config
	now      func() time.Time
	password string
	// ready is set once the tables exist: a server that was down at
	// start-up gets them from the first call that reaches it.
	ready atomic.Bool
}

// schema is created on open, idempotently. A row is one caller's evidence
// for one key; the primary key is what Record upserts on.
const schema = `
CREATE TABLE IF NOT EXISTS toolsearch_learned_terms (
	tool    text NOT NULL,
	term    text NOT NULL,
	caller  text NOT NULL,
	weight  double precision NOT NULL,
	updated timestamptz NOT NULL,
	PRIMARY KEY (tool, term, caller)
);
CREATE TABLE IF NOT EXISTS toolsearch_learned_pairs (
	tool_a  text NOT NULL,
	tool_b  text NOT NULL,
	caller  text NOT NULL,
	weight  double precision NOT NULL,
	updated timestamptz NOT NULL,
	PRIMARY KEY (tool_a, tool_b, caller)
);`

// OpenPostgres returns a store on dsn (a PostgreSQL connection string; its
// password is never logged or reported) and creates the tables. A server
// that cannot be reached is no reason to fail: the store is returned with
// that error (errors.Is ErrUnreachable), and its calls fail until the
// server answers, the first of them then creating the tables. Only a
// connection string that cannot be used returns no store, with an error
// that is an ErrBadDSN.
func OpenPostgres(ctx context.Context, dsn string, cfg Config, now func() time.Time) (*PostgresStore, error) {
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's own error may quote the string, password and all.
		return nil, fmt.Errorf("%w: it does not parse", ErrBadDSN)
	}
	pcfg.MaxConns = 4
	// Every connection is pinged as it is taken from the pool: a server
	// that restarted (120 ms here, well under pgx's default of pinging
	// those idle a second) left the pool's idle connections dead, and the
	// first event written after it was lost to one. Events are written
	// one at a time, off every request's path, so the round trip more
	// costs no caller anything.
	pcfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDSN, scrub(err, pcfg.ConnConfig.Password))
	}
	if now == nil {
		now = time.Now
	}
	s := &PostgresStore{pool: pool, cfg: cfg.withDefaults(), now: now, password: pcfg.ConnConfig.Password}
	// A server that is down answers at once; one that does not answer
	// holds up start-up no longer than this.
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.ensure(cctx); err != nil {
		return s, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return s, nil
}

// ErrUnreachable is OpenPostgres's error for a store it returned all the
// same, whose server did not answer yet. It is an ErrWaiting.
var ErrUnreachable error = waiting("learning store: PostgreSQL is not reachable yet; learning resumes when it is")

// ErrBadDSN is OpenPostgres's error for a connection string it cannot
// use: a setting to fix, unlike a server that is down.
var ErrBadDSN = errors.New("learning store: the PostgreSQL connection string cannot be used")

// scrub is err with password cut out of its text, whatever pgx put there.
func scrub(err error, password string) error {
	if password != "" && err != nil {
		return errors.New(redact.Text(err.Error(), password))
	}
	return err
}

// ensure creates the tables once.
func (s *PostgresStore) ensure(ctx context.Context) error {
	if s.ready.Load() {
		return nil
	}
	if _, err := s.pool.Exec(ctx, schema); err != nil {
		return s.fail("creating its tables", err)
	}
	s.ready.Store(true)
	return nil
}

// fail is err as the store reports it: said what it was doing, and
// without the password.
func (s *PostgresStore) fail(what string, err error) error {
	return fmt.Errorf("learning store: %s: %w", what, scrub(err, s.password))
}

// Kind names the store in status.
func (s *PostgresStore) Kind() string { return "postgres" }

// upsertTerm and upsertPair add one session: the old weight decayed by its
// age in half-lives, plus one, capped; as Config.Add does.
const (
	upsertTerm = `INSERT INTO toolsearch_learned_terms AS t (tool, term, caller, weight, updated) VALUES ($1, $2, $3, 1, $4)
ON CONFLICT (tool, term, caller) DO UPDATE SET
	weight = LEAST($5, t.weight * power(2, -GREATEST(0, extract(epoch FROM $4 - t.updated)::float8) / $6) + 1),
	updated = GREATEST(t.updated, $4)`
	upsertPair = `INSERT INTO toolsearch_learned_pairs AS t (tool_a, tool_b, caller, weight, updated) VALUES ($1, $2, $3, 1, $4)
ON CONFLICT (tool_a, tool_b, caller) DO UPDATE SET
	weight = LEAST($5, t.weight * power(2, -GREATEST(0, extract(epoch FROM $4 - t.updated)::float8) / $6) + 1),
	updated = GREATEST(t.updated, $4)`
)

// bounded is a table's side of Config.excess: how a tool's rows are read
// and deleted.
type bounded struct {
	rows, del string
	maxKeys   int
}

var (
	boundTerms = bounded{
		rows:    `SELECT term, caller, weight, updated FROM toolsearch_learned_terms WHERE tool = $1`,
		del:     `DELETE FROM toolsearch_learned_terms WHERE tool = $1 AND (term, caller) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
		maxKeys: MaxStoredTermsPerTool,
	}
	boundPairs = bounded{
		rows:    `SELECT tool_b, caller, weight, updated FROM toolsearch_learned_pairs WHERE tool_a = $1`,
		del:     `DELETE FROM toolsearch_learned_pairs WHERE tool_a = $1 AND (tool_b, caller) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
		maxKeys: MaxStoredPairsPerTool,
	}
)

// Record adds ev in one transaction, and bounds the rows of the tools it
// touched (Config.excess). Replicas recording for one tool at once take
// its lock in turn (in the tools' order, so never in a cycle): each then
// bounds what the one before it left.
func (s *PostgresStore) Record(ctx context.Context, ev Event) error {
	now := ev.At
	if now.IsZero() {
		now = s.now()
	}
	halfLife := s.cfg.HalfLife.Seconds()
	if err := s.ensure(ctx); err != nil {
		return err
	}
	pairs := Pairs(ev.Used)
	if len(ev.Used)*len(ev.Terms)+len(pairs) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	for _, tool := range slices.Compact(slices.Sorted(slices.Values(ev.Used))) {
		batch.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('toolsearch learned ' || $1, 0))`, tool)
	}
	for _, tool := range ev.Used {
		for _, t := range ev.Terms {
			batch.Queue(upsertTerm, tool, t, ev.Caller, now, s.cfg.CallerCap, halfLife)
		}
	}
	for _, p := range pairs {
		batch.Queue(upsertPair, p[0], p[1], ev.Caller, now, s.cfg.CallerCap, halfLife)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.fail("recording", err)
	}
	defer tx.Rollback(ctx) // nothing, once committed
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return s.fail("recording", err)
	}
	termTools, pairTools := touched(ev, pairs)
	for _, tool := range termTools {
		if err := s.bound(ctx, tx, boundTerms, tool, now); err != nil {
			return s.fail("recording", err)
		}
	}
	for _, tool := range pairTools {
		if err := s.bound(ctx, tx, boundPairs, tool, now); err != nil {
			return s.fail("recording", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		// The database's own refusal rolled the event back, and a commit
		// that never left wrote nothing; a connection that failed with it
		// sent leaves the outcome unknown.
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) && !errors.Is(err, pgx.ErrTxCommitRollback) && !pgconn.SafeToRetry(err) {
			return maybeRecorded{s.fail("recording", err)}
		}
		return s.fail("recording", err)
	}
	return nil
}

// bound deletes what Config.excess finds of tool's rows in b's table.
func (s *PostgresStore) bound(ctx context.Context, tx pgx.Tx, b bounded, tool string, now time.Time) error {
	rows, err := tx.Query(ctx, b.rows, tool)
	if err != nil {
		return err
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Key, &r.Caller, &r.Weight, &r.Updated); err != nil {
			rows.Close()
			return err
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	gone := s.cfg.excess(all, b.maxKeys, now)
	if len(gone) == 0 {
		return nil
	}
	keys, callers := make([]string, len(gone)), make([]string, len(gone))
	for i, r := range gone {
		keys[i], callers[i] = r.Key, r.Caller
	}
	_, err = tx.Exec(ctx, b.del, tool, keys, callers)
	return err
}

// Load tallies every replica's evidence, deleting what the retention has
// expired.
func (s *PostgresStore) Load(ctx context.Context) (*Learned, error) {
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	now := s.now()
	cutoff := now.Add(-s.cfg.Retention)
	for _, q := range []string{`DELETE FROM toolsearch_learned_terms WHERE updated < $1`, `DELETE FROM toolsearch_learned_pairs WHERE updated < $1`} {
		if _, err := s.pool.Exec(ctx, q, cutoff); err != nil {
			return nil, s.fail("loading", err)
		}
	}
	t := NewTally(s.cfg, now)
	for _, q := range []struct {
		sql string
		add func(a, b string, e Evidence)
	}{
		{`SELECT tool, term, weight, updated FROM toolsearch_learned_terms`, t.Term},
		{`SELECT tool_a, tool_b, weight, updated FROM toolsearch_learned_pairs`, t.Pair},
	} {
		rows, err := s.pool.Query(ctx, q.sql)
		if err != nil {
			return nil, s.fail("loading", err)
		}
		for rows.Next() {
			var a, b string
			var e Evidence
			if err := rows.Scan(&a, &b, &e.Weight, &e.Updated); err != nil {
				rows.Close()
				return nil, s.fail("loading", err)
			}
			q.add(a, b, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.fail("loading", err)
		}
	}
	return t.Learned(), nil
}

// Reset forgets tool (every tool when "").
func (s *PostgresStore) Reset(ctx context.Context, tool string) error {
	if err := s.ensure(ctx); err != nil {
		return err
	}
	var err error
	if tool == "" {
		_, err = s.pool.Exec(ctx, `TRUNCATE toolsearch_learned_terms, toolsearch_learned_pairs`)
	} else {
		_, err = s.pool.Exec(ctx, `DELETE FROM toolsearch_learned_terms WHERE tool = $1`, tool)
		if err == nil {
			_, err = s.pool.Exec(ctx, `DELETE FROM toolsearch_learned_pairs WHERE tool_a = $1 OR tool_b = $1`, tool)
		}
	}
	if err != nil {
		return s.fail("forgetting", err)
	}
	return nil
}

// Close closes the pool.
func (s *PostgresStore) Close() error {
	s.pool.Close()
	return nil
}
