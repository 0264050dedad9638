package search

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embed"
)

var _ Embedder = (*scriptedEmbedder)(nil)

// scriptedEmbedder wraps the local embedder and fails when told to.
type scriptedEmbedder struct {
	local *embed.Local
	fail  atomic.Pointer[error]
	calls atomic.Int32
}

func (s *scriptedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.calls.Add(1)
	if err := s.fail.Load(); err != nil {
		return nil, *err
	}
	return s.local.Embed(ctx, texts)
}

func (s *scriptedEmbedder) Info() embed.Info { return embed.Info{Provider: "scripted", Model: "m"} }

// waitFor polls cond until it holds or the test's deadline passes.
func waitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	for !cond() {
		select {
		case <-tb.Context().Done():
			tb.Fatal("condition never held")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func defaultLoad(context.Context) (*catalog.Catalog, error) { return catalog.Default() }

func TestSearchBeforeBuild(t *testing.T) {
	svc := New(Config{Load: defaultLoad, Embedder: embed.NewLocal(0)})
	if _, err := svc.Search(t.Context(), Request{Query: "x"}); !errors.Is(err, ErrNotReady) {
		t.Errorf("Search before Build: error = %v, want ErrNotReady", err)
	}
	if st := svc.Status(); st.Ready || st.Size != 0 || st.BuiltAt != nil {
		t.Errorf("Status before Build = %+v, want not ready and empty", st)
	}
}

func TestBuildAndSearch(t *testing.T) {
	svc := New(Config{Load: defaultLoad, Embedder: embed.NewLocal(0), Version: "test"})
	if _, err := svc.Build(t.Context()); err != nil {
		t.Fatal(err)
	}
	cat, _ := catalog.Default()
	st := svc.Status()
	if !st.Ready || st.Size != cat.Len() || st.MemoryBytes != int64(cat.Len()*embed.DefaultLocalDimensions*4) {
		t.Errorf("Status = %+v, want ready, size %d, memory 4*N*D", st, cat.Len())
	}
	if st.Catalog.Hash != cat.Hash() || st.Embedder.Provider != "local" || st.Embedder.Dimensions != embed.DefaultLocalDimensions {
		t.Errorf("Status catalog/embedder = %+v %+v", st.Catalog, st.Embedder)
	}
	tests := []struct {
		query string
		want  string
	}{
		{"open a pull request", "github/create_pull_request"},
		{"reply in a slack thread", "slack/post_message"},
		{"least squares curve fit", "compute/fit_curve"},
	}
	for _, tt := range tests {
		res, err := svc.Search(t.Context(), Request{Query: tt.query, TopK: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 3 || res.Tools[0].Server+"/"+res.Tools[0].Name != tt.want {
			t.Errorf("Search(%q) = %+v, want %s first of 3", tt.query, res.Tools, tt.want)
		}
		if res.Mode != "semantic" || res.IndexVersion != st.IndexVersion {
			t.Errorf("Search(%q) mode %q version %q, want semantic %q", tt.query, res.Mode, res.IndexVersion, st.IndexVersion)
		}
	}
	// A query of stop words only carries no evidence: no tools, not 10 arbitrary ones.
	if res, _ := svc.Search(t.Context(), Request{Query: "what can you do for me"}); len(res.Tools) != 0 {
		t.Errorf("stop-word query returned %d tools", len(res.Tools))
	}
}

func TestFailedBuildKeepsServing(t *testing.T) {
	emb := &scriptedEmbedder{local: embed.NewLocal(64)}
	svc := New(Config{Load: defaultLoad, Embedder: emb})
	first, err := svc.Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("provider said no")
	emb.fail.Store(&boom)
	if _, err := svc.Build(t.Context()); !errors.Is(err, boom) {
		t.Fatalf("Build with failing embedder: error = %v, want it to wrap the provider's", err)
	}
	if svc.Current() != first {
		t.Error("a failed build replaced the published snapshot")
	}
	st := svc.Status()
	if !st.Ready || !strings.Contains(st.LastError, "provider said no") || st.LastErrorAt == nil {
		t.Errorf("Status after failed rebuild = ready %v, last_error %q", st.Ready, st.LastError)
	}
}

func TestRunRetriesUntilBuilt(t *testing.T) {
	emb := &scriptedEmbedder{local: embed.NewLocal(64)}
	boom := errors.New("down")
	emb.fail.Store(&boom)
	svc := New(Config{Load: defaultLoad, Embedder: emb})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	waitFor(t, func() bool { return svc.Status().NextRetryAt != nil })
	st := svc.Status()
	if st.Ready || st.LastError == "" {
		t.Errorf("Status while failing = ready %v last_error %q; want not ready with the error", st.Ready, st.LastError)
	}
	emb.fail.Store(nil)
	if err := <-done; err != nil { // the retry after ~1s succeeds
		t.Fatalf("Run = %v", err)
	}
	if !svc.Status().Ready {
		t.Error("not ready after the provider recovered")
	}
	cancel()
}

func TestLoadErrorInStatus(t *testing.T) {
	svc := New(Config{Load: func(context.Context) (*catalog.Catalog, error) {
		_, err := catalog.Load([]string{"/nonexistent/tools.json"}, "")
		return nil, err
	}, Embedder: embed.NewLocal(0)})
	if _, err := svc.Build(t.Context()); err == nil {
		t.Fatal("Build with a missing catalog succeeded")
	}
	if st := svc.Status(); !strings.Contains(st.LastError, "/nonexistent/tools.json") {
		t.Errorf("last_error = %q, want it to name the file", st.LastError)
	}
}

func TestStatusHasNoSecrets(t *testing.T) {
	emb := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: "http://user:hunter2@127.0.0.1:1/v1", APIKey: "sk-supersecretkey", MaxRetries: -1})
	svc := New(Config{Load: defaultLoad, Embedder: emb})
	_, err := svc.Build(t.Context())
	if err == nil {
		t.Fatal("Build against a closed port succeeded")
	}
	b, _ := json.Marshal(svc.Status())
	for _, secret := range []string{"hunter2", "supersecret"} {
		if strings.Contains(string(b), secret) || strings.Contains(err.Error(), secret) {
			t.Errorf("status or error leaks %q: %s / %v", secret, b, err)
		}
	}
}

// TestSearchDuringRebuild runs searches while snapshots are swapped: every
// answer must come whole from one published snapshot.
func TestSearchDuringRebuild(t *testing.T) {
	svc := New(Config{Load: defaultLoad, Embedder: embed.NewLocal(128)})
	if _, err := svc.Build(t.Context()); err != nil {
		t.Fatal(err)
	}
	var versions sync.Map
	versions.Store(svc.Current().Version, true)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := svc.Search(ctx, Request{Query: "list open issues"})
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if len(res.Tools) == 0 {
					errs <- errors.New("empty answer during rebuild")
					return
				}
			}
		}()
	}
	for range 5 {
		snap, err := svc.Build(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		versions.Store(snap.Version, true)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
