package learn

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileStore keeps evidence in one bbolt file: the embedded default, which
// needs no set-up and survives a restart. bbolt (etcd's B+tree store) is a
// single pure-Go file with ACID transactions: a crash mid-write loses that
// write, not the file, and no server or cgo is needed. One process may
// open the file at a time; replicas share evidence through PostgreSQL.
type FileStore struct {
	db  *bolt.DB
	cfg Config
	now func() time.Time
}

var (
	termsBucket = []byte("terms") // tool \0 term \0 caller -> evidence
	pairsBucket = []byte("pairs") // tool \0 tool \0 caller -> evidence
)

// Open opens (creating) the store at path.
func Open(path string, cfg Config, now func() time.Time) (*FileStore, error) {
	// Another process holding the file is an error at once, not a wait:
	// that process learns, this one serves without learning.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		return nil, fmt.Errorf("learning store %s: %w", path, err)
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
		return nil, fmt.Errorf("learning store %s: %w", path, err)
	}
	if now == nil {
		now = time.Now
	}
	return &FileStore{db: db, cfg: cfg.withDefaults(), now: now}, nil
}

// Kind names the store in status.
func (s *FileStore) Kind() string { return "file" }

// Record adds one session of ev's caller to each of its terms for each
// tool used, and to each two tools used together.
func (s *FileStore) Record(_ context.Context, ev Event) error {
	now := ev.At
	if now.IsZero() {
		now = s.now()
	}
	return s.db.Update(func(tx *bolt.Tx) error {
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
		for _, p := range Pairs(ev.Used) {
			if err := add(pairs, key(p[0], p[1], ev.Caller)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Load tallies every caller's evidence, deleting what the retention has
// expired.
func (s *FileStore) Load(_ context.Context) (*Learned, error) {
	now := s.now()
	t := NewTally(s.cfg, now)
	err := s.db.Update(func(tx *bolt.Tx) error {
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
	return s.db.Update(func(tx *bolt.Tx) error {
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

// Close closes the file.
func (s *FileStore) Close() error { return s.db.Close() }

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
