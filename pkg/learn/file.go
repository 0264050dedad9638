package learn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileStore keeps evidence in one bbolt file: the embedded default, which
// needs no set-up and survives a restart. bbolt (etcd's B+tree store) is a
// single pure-Go file with ACID transactions: a crash mid-write loses that
// write, not the file, and no server or cgo is needed. One process may
// open the file at a time; replicas share evidence through PostgreSQL.
type FileStore struct {
	path string
	cfg  Config
	now  func() time.Time

	mu     sync.Mutex
	db     *bolt.DB // nil while another process holds the file
	tried  time.Time
	closed bool
}

var (
	termsBucket = []byte("terms") // tool \0 term \0 caller -> evidence
	pairsBucket = []byte("pairs") // tool \0 tool \0 caller -> evidence
)

// ErrHeld is Open's error for a store it returned all the same, whose
// file another process holds: most often the previous process, still
// draining during a rolling update. The store's calls fail until that
// process lets the file go; the first call after it does (tried at most
// every reopenEvery) opens the file, and learning resumes.
//
// It is an ErrWaiting.
var ErrHeld error = waiting("learning store: the file is held by another process; learning resumes when it lets go")

// reopenEvery paces the attempts to open a held file.
var reopenEvery = 5 * time.Second

// Open opens (creating) the store at path. A file another process holds
// is no reason to fail (ErrHeld); a file that cannot be opened otherwise
// (a read-only filesystem, a file that is not a bbolt store) is.
func Open(path string, cfg Config, now func() time.Time) (*FileStore, error) {
	if now == nil {
		now = time.Now
	}
	s := &FileStore{path: path, cfg: cfg.withDefaults(), now: now}
	s.tried = time.Now()
	switch err := s.open(); {
	case errors.Is(err, berrors.ErrTimeout):
		return s, fmt.Errorf("%w: %s", ErrHeld, path)
	case err != nil:
		return nil, err
	}
	return s, nil
}

// open opens the file, s.mu held or s not yet shared.
func (s *FileStore) open() error {
	// Another process holding the file is an error at once, not a wait:
	// that process learns, this one tries again later.
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("learning store %s: %w", s.path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{termsBucket, pairsBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		db.Close()
		return fmt.Errorf("learning store %s: %w", s.path, err)
	}
	s.db = db
	return nil
}

// handle is the open file, opening it if it was held and the last try
// was long enough ago.
func (s *FileStore) handle() (*bolt.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.db != nil:
		return s.db, nil
	case s.closed:
		return nil, errors.New("learning store: closed")
	case time.Since(s.tried) < reopenEvery:
		return nil, ErrHeld
	}
	s.tried = time.Now()
	if err := s.open(); err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, ErrHeld
		}
		return nil, err
	}
	return s.db, nil
}

// Kind names the store in status.
func (s *FileStore) Kind() string { return "file" }

// Record adds one session of ev's caller to each of its terms for each
// tool used, and to each two tools used together.
func (s *FileStore) Record(_ context.Context, ev Event) error {
	db, err := s.handle()
	if err != nil {
		return err
	}
	now := ev.At
	if now.IsZero() {
		now = s.now()
	}
	return db.Update(func(tx *bolt.Tx) error {
		add := func(b *bolt.Bucket, k string) error {
			e, _ := decode(b.Get([]byte(k)))
			return b.Put([]byte(k), encode(s.cfg.Add(e, now)))
		}
		terms, pairs := tx.Bucket(termsBucket), tx.Bucket(pairsBucket)
		for _, tool := range ev.Used {
			for _, t := range ev.Terms {
				if err := add(terms, key(tool, t, ev.Caller)); err != nil {
					return err
				}
			}
		}
		pp := Pairs(ev.Used)
		for _, p := range pp {
			if err := add(pairs, key(p[0], p[1], ev.Caller)); err != nil {
				return err
			}
		}
		termTools, pairTools := touched(ev, pp)
		for _, tool := range termTools {
			if err := s.bound(terms, tool, MaxStoredTermsPerTool, now); err != nil {
				return err
			}
		}
		for _, tool := range pairTools {
			if err := s.bound(pairs, tool, MaxStoredPairsPerTool, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// bound deletes what Config.excess finds of tool's rows in b: its keys'
// rows lie together, under the tool's prefix.
func (s *FileStore) bound(b *bolt.Bucket, tool string, maxKeys int, now time.Time) error {
	prefix := []byte(tool + "\x00")
	var rows []row
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		parts := split(string(k))
		e, ok := decode(v)
		if len(parts) != 3 || !ok {
			continue // Load deletes it
		}
		rows = append(rows, row{Key: parts[1], Caller: parts[2], Evidence: e})
	}
	for _, r := range s.cfg.excess(rows, maxKeys, now) {
		if err := b.Delete([]byte(key(tool, r.Key, r.Caller))); err != nil {
			return err
		}
	}
	return nil
}

// Load tallies every caller's evidence, deleting what the retention has
// expired.
func (s *FileStore) Load(_ context.Context) (*Learned, error) {
	db, err := s.handle()
	if err != nil {
		return nil, err
	}
	now := s.now()
	t := NewTally(s.cfg, now)
	err = db.Update(func(tx *bolt.Tx) error {
		for _, bk := range []struct {
			name []byte
			add  func(a, b string, e Evidence)
		}{{termsBucket, t.Term}, {pairsBucket, t.Pair}} {
			err := deleteWhere(tx.Bucket(bk.name), func(k, v []byte) bool {
				e, ok := decode(v)
				parts := split(string(k))
				if !ok || len(parts) != 3 || s.cfg.Expired(e, now) {
					return true
				}
				bk.add(parts[0], parts[1], e)
				return false
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.Learned(), nil
}

// Reset forgets tool (every tool when ""): its terms, and the pairs it is
// in.
func (s *FileStore) Reset(_ context.Context, tool string) error {
	db, err := s.handle()
	if err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{termsBucket, pairsBucket} {
			if tool == "" {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
				continue
			}
			err := deleteWhere(tx.Bucket(name), func(k, _ []byte) bool {
				parts := split(string(k))
				return len(parts) == 3 && (parts[0] == tool || string(name) == string(pairsBucket) && parts[1] == tool)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// deleteWhere deletes the keys of b that gone reports, having read them
// all first: bbolt forbids deleting while it iterates.
func deleteWhere(b *bolt.Bucket, gone func(k, v []byte) bool) error {
	var keys [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		if gone(k, v) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the file, if this store opened it.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

func encode(e Evidence) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, math.Float64bits(e.Weight))
	binary.LittleEndian.PutUint64(b[8:], uint64(e.Updated.UnixNano()))
	return b
}

func decode(b []byte) (Evidence, bool) {
	if len(b) != 16 {
		return Evidence{}, false
	}
	return Evidence{Weight: math.Float64frombits(binary.LittleEndian.Uint64(b)), Updated: time.Unix(0, int64(binary.LittleEndian.Uint64(b[8:])))}, true
}
