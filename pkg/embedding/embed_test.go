package embedding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/index"
)

// fakeAPI serves /v1/embeddings. answer decides each response from the
// request's inputs and the 1-based call number.
type fakeAPI struct {
	calls  atomic.Int32
	mu     sync.Mutex
	inputs [][]string
	auth   []string
	answer func(call int, inputs []string, w http.ResponseWriter)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input      []string `json:"input"`
		Model      string   `json:"model"`
		Dimensions int      `json:"dimensions"`
	}
	if (r.URL.Path != "/v1/embeddings" && r.URL.Path != "/openai/deployments/emb-deploy/embeddings") || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	call := int(f.calls.Add(1))
	f.mu.Lock()
	f.inputs = append(f.inputs, req.Input)
	f.auth = append(f.auth, r.Header.Get("Authorization")+r.Header.Get("api-key")+" "+r.URL.RawQuery)
	f.mu.Unlock()
	f.answer(call, req.Input, w)
}

// vectors answers with dim-wide vectors whose first value encodes the input's
// length, so tests can check the order was kept.
func vectors(inputs []string, dim int) []byte {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(inputs))
	for i, in := range inputs {
		v := make([]float32, dim)
		v[0] = float32(len(in))
		v[1] = 1
		// Answer in reverse order: the client must sort by index.
		data[len(inputs)-1-i] = item{"embedding", i, v}
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": "m"})
	return b
}

func ok(dim int) func(int, []string, http.ResponseWriter) {
	return func(_ int, inputs []string, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(vectors(inputs, dim))
	}
}

func fail(status int, msg string) func(int, []string, http.ResponseWriter) {
	return func(_ int, _ []string, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"x"}}`, msg)
	}
}

func newFake(t *testing.T, answer func(int, []string, http.ResponseWriter)) (*fakeAPI, string) {
	t.Helper()
	f := &fakeAPI{answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

func noSleep(context.Context, time.Duration) error { return nil }

func TestOpenAIEmbed(t *testing.T) {
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	tests := []struct {
		name      string
		answer    func(int, []string, http.ResponseWriter)
		cfg       OpenAIConfig
		wantCalls int32
		wantErr   string // empty: success
		wantBad   bool   // the error wraps ErrBadResponse
	}{
		{name: "one batch", answer: ok(8), wantCalls: 1},
		{name: "batched", answer: ok(8), cfg: OpenAIConfig{BatchSize: 2}, wantCalls: 3},
		{name: "truncated to dimensions", answer: ok(8), cfg: OpenAIConfig{Dimensions: 4}, wantCalls: 1},
		{name: "500 then ok", answer: func(call int, in []string, w http.ResponseWriter) {
			if call == 1 {
				fail(500, "boom")(call, in, w)
				return
			}
			ok(8)(call, in, w)
		}, wantCalls: 2},
		{name: "429 then ok", answer: func(call int, in []string, w http.ResponseWriter) {
			if call < 3 {
				fail(429, "slow down")(call, in, w)
				return
			}
			ok(8)(call, in, w)
		}, wantCalls: 3},
		{name: "500 forever", answer: fail(503, "down"), wantCalls: 4, wantErr: "503"},
		{name: "401 not retried", answer: fail(401, "Incorrect API key provided: sk-test-secret-123456"), wantCalls: 1, wantErr: "401"},
		{name: "wrong count", answer: func(call int, in []string, w http.ResponseWriter) {
			w.Write(vectors(in[:len(in)-1], 8))
		}, wantCalls: 1, wantErr: "4 vectors for 5 inputs", wantBad: true},
		{name: "wrong dimension", answer: ok(8), cfg: OpenAIConfig{Dimensions: 16}, wantCalls: 1, wantErr: "dimension 8, want 16", wantBad: true},
		{name: "ragged", answer: func(call int, in []string, w http.ResponseWriter) {
			b := strings.Replace(string(vectors(in, 4)), "[5,1,0,0]", "[5,1,0]", 1)
			w.Write([]byte(b))
		}, wantCalls: 1, wantErr: "dimension", wantBad: true},
		{name: "batches disagree", answer: func(call int, in []string, w http.ResponseWriter) {
			w.Write(vectors(in, 4+call%2))
		}, cfg: OpenAIConfig{BatchSize: 2, Concurrency: 1}, wantCalls: 2, wantErr: "dimension", wantBad: true},
		{name: "not json", answer: func(_ int, _ []string, w http.ResponseWriter) {
			w.Write([]byte(`{"data":[{"embedding":[1,2`))
		}, wantCalls: 1, wantErr: "ends early", wantBad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, url := newFake(t, tt.answer)
			cfg := tt.cfg
			cfg.BaseURL = url
			cfg.APIKey = "sk-test-secret-123456"
			cfg.sleep = noSleep
			vecs, err := NewOpenAI(cfg).Embed(t.Context(), texts)
			if got := fake.calls.Load(); got != tt.wantCalls {
				t.Errorf("provider calls = %d, want %d", got, tt.wantCalls)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Embed() error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("Embed() error leaks the API key: %v", err)
				}
				if got := errors.Is(err, ErrBadResponse); got != tt.wantBad {
					t.Errorf("errors.Is(err, ErrBadResponse) = %v, want %v", got, tt.wantBad)
				}
				return
			}
			if err != nil {
				t.Fatalf("Embed() error: %v", err)
			}
			for i, v := range vecs {
				if int(v[0]) != len(texts[i]) {
					t.Errorf("vector %d belongs to input of length %d, want %d: order lost", i, int(v[0]), len(texts[i]))
				}
				if cfg.Dimensions > 0 && len(v) != cfg.Dimensions {
					t.Errorf("vector %d has %d dimensions, want %d", i, len(v), cfg.Dimensions)
				}
			}
			if got := fake.auth[0]; got != "Bearer sk-test-secret-123456 " {
				t.Errorf("Authorization = %q", got)
			}
		})
	}
}

func TestOpenAITimeout(t *testing.T) {
	release := make(chan struct{})
	_, url := newFake(t, func(_ int, in []string, w http.ResponseWriter) { <-release })
	defer close(release)
	_, err := NewOpenAI(OpenAIConfig{BaseURL: url, Timeout: 50 * time.Millisecond, MaxRetries: -1}).Embed(t.Context(), []string{"x"})
	if err == nil {
		t.Fatal("Embed() against a hung provider returned no error")
	}
}

func TestInfoHidesSecrets(t *testing.T) {
	info := NewOpenAI(OpenAIConfig{BaseURL: "https://user:pw@llm.example/v1?api-key=zzz", APIKey: "sk-abc"}).Info()
	b, _ := json.Marshal(info)
	for _, secret := range []string{"pw", "zzz", "sk-abc"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("Info() = %s, leaks %q", b, secret)
		}
	}
}

// net/http's errors mask a URL's password but quote a user name whole,
// and some gateways take their token as the user name.
func TestErrorsHideBaseURLCredentials(t *testing.T) {
	for _, base := range []string{"http://tok_secret_9@127.0.0.1:1/v1", "http://user:pw_secret_9@127.0.0.1:1/v1"} {
		_, err := NewOpenAI(OpenAIConfig{BaseURL: base, MaxRetries: -1}).Embed(t.Context(), []string{"x"})
		if err == nil {
			t.Fatalf("Embed() through %s: no error from a closed port", base)
		}
		if strings.Contains(err.Error(), "secret_9") {
			t.Errorf("Embed() error %q quotes the base URL's credentials", err)
		}
	}
}

func TestCheckBaseURL(t *testing.T) {
	for raw, ok := range map[string]bool{"": true, "http://127.0.0.1:11434/v1": true, "http://h/v1?key=x": false, "h:1/v1": false} {
		if err := CheckBaseURL(raw); (err == nil) != ok {
			t.Errorf("CheckBaseURL(%q) = %v", raw, err)
		}
	}
}

func TestLocal(t *testing.T) {
	docs := []string{
		"create_issue: Open a new issue in a repository",
		"post_message: Send a message to a chat channel",
		"read_file: Return the text contents of a file",
	}
	l := NewLocal(256).Fit(docs)
	vecs, err := l.Embed(t.Context(), append(docs, "send a chat message"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := index.Validate(vecs, 4, 256); err != nil {
		t.Fatal(err)
	}
	for _, v := range vecs {
		index.Normalize(v)
	}
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	q := vecs[3]
	if !(dot(q, vecs[1]) > dot(q, vecs[0]) && dot(q, vecs[1]) > dot(q, vecs[2])) {
		t.Errorf("query %q is not closest to post_message: %v %v %v", "send a chat message", dot(q, vecs[0]), dot(q, vecs[1]), dot(q, vecs[2]))
	}
	again, _ := l.Embed(t.Context(), docs[:1])
	index.Normalize(again[0])
	if diff := dot(again[0], vecs[0]); math.Abs(float64(diff)-1) > 1e-6 {
		t.Errorf("Local is not deterministic: self-similarity %v", diff)
	}
}

func TestAzure(t *testing.T) {
	fake, url := newFake(t, ok(4))
	e := NewOpenAI(OpenAIConfig{BaseURL: strings.TrimSuffix(url, "/v1"), APIKey: "azkey", APIType: "azure", APIVersion: "2024-10-21", Model: "emb-deploy"})
	if _, err := e.Embed(t.Context(), []string{"a", "b"}); err != nil {
		t.Fatalf("Embed via Azure: %v", err)
	}
	if got := fake.auth[0]; got != "azkey api-version=2024-10-21" {
		t.Errorf("Azure request auth and query = %q, want the api-key header and api-version", got)
	}
	if got := e.Info().Provider; got != "azure" {
		t.Errorf("Info().Provider = %q", got)
	}
}

// TestEmbedSparseMatchesEmbed: the sparse form of a text's vector is Embed's,
// bit for bit, with the same buckets written; and reusing pooled scratch
// between texts of other widths leaves nothing behind.
func TestEmbedSparseMatchesEmbed(t *testing.T) {
	docs := []string{"create_issue: Open a new issue in a repository", "post_message: Send a message to a chat channel"}
	texts := []string{
		"send a chat message", "", "the of and", "Create an issue. Also post a message!",
		"über café naïve résumé", strings.Repeat("file files filing ", 40), "x",
	}
	for _, dim := range []int{8, 256, 1024} {
		l := NewLocal(dim).Fit(docs).(*Local)
		var ridx []int32 // reused from text to text, as a search's pool does
		var rval []float32
		for _, text := range texts {
			vecs, err := l.Embed(t.Context(), []string{text})
			if err != nil {
				t.Fatal(err)
			}
			idx, val := l.EmbedSparseTerms(analysis.English.Terms(text))
			if !slices.IsSorted(idx) || len(idx) != len(val) {
				t.Fatalf("dim %d, %q: idx %v unsorted or lengths differ", dim, text, idx)
			}
			ridx, rval = l.AppendSparseTerms(ridx[:0], rval[:0], analysis.English.Terms(text))
			if !slices.Equal(ridx, idx) || !slices.Equal(rval, val) {
				t.Fatalf("dim %d, %q: into reused memory, %v %v; afresh %v %v", dim, text, ridx, rval, idx, val)
			}
			got := make([]float32, dim)
			for i, j := range idx {
				got[j] = val[i]
			}
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(vecs[0][j]) {
					t.Fatalf("dim %d, %q: bucket %d is %v sparse, %v dense", dim, text, j, got[j], vecs[0][j])
				}
			}
		}
	}
}

// TestRetryAfter: a 429 or 503 that says when to come back is retried
// after that long, if the caller can wait that long; otherwise the attempt
// fails at once, saying what the provider asked for.
func TestRetryAfter(t *testing.T) {
	date := time.Now().Add(4 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name     string
		status   int
		header   map[string]string
		deadline time.Duration // of the caller's context; 0: none
		// wantWait is the sleep before the retry: exactly, or at least
		// minWait (an HTTP date loses sub-second precision); -1: none, and
		// no retry.
		wantWait, minWait time.Duration
		wantErr           string
	}{
		{name: "seconds", status: 429, header: map[string]string{"Retry-After": "2"}, wantWait: 2 * time.Second},
		{name: "milliseconds win", status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, wantWait: 1500 * time.Millisecond},
		{name: "http date", status: 503, header: map[string]string{"Retry-After": date}, minWait: 2 * time.Second},
		{name: "absent: jittered backoff", status: 429, minWait: 1},
		{name: "unreadable: jittered backoff", status: 429, header: map[string]string{"Retry-After": "soon"}, minWait: 1},
		{name: "longer than the caller has", status: 429, header: map[string]string{"Retry-After": "5"}, deadline: time.Second, wantWait: -1, wantErr: "retry after 5s"},
		{name: "longer than MaxRetryAfter", status: 429, header: map[string]string{"Retry-After": "120"}, wantWait: -1, wantErr: "retry after 2m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, url := newFake(t, func(call int, in []string, w http.ResponseWriter) {
				if call > 1 { // calls count from 1
					ok(4)(call, in, w)
					return
				}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				fail(tt.status, "slow down")(call, in, w)
			})
			var slept []time.Duration
			cfg := OpenAIConfig{BaseURL: url, APIKey: "sk-test", MaxRetries: 1,
				sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
			ctx := t.Context()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			_, err := NewOpenAI(cfg).Embed(ctx, []string{"a", "b"})
			if tt.wantWait < 0 {
				if len(slept) != 0 || fake.calls.Load() != 1 || err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("slept %v, %d calls, error %v; want no wait, one call, an error with %q", slept, fake.calls.Load(), err, tt.wantErr)
				}
				if got := Reason(err); got != "rate_limited" {
					t.Errorf("Reason() = %q, want rate_limited", got)
				}
				return
			}
			if err != nil || len(slept) != 1 || fake.calls.Load() != 2 {
				t.Fatalf("error %v, slept %v, %d calls; want success after one wait", err, slept, fake.calls.Load())
			}
			switch {
			case tt.wantWait > 0 && slept[0] != tt.wantWait:
				t.Errorf("waited %v, want %v", slept[0], tt.wantWait)
			case tt.minWait > 0 && (slept[0] < tt.minWait || slept[0] > 5*time.Second):
				t.Errorf("waited %v, want at least %v (and at most 5s)", slept[0], tt.minWait)
			}
		})
	}
}

// TestRedirectsStayWithTheProvider: a provider's redirect is followed
// within its origin only. net/http drops Authorization on a redirect to
// another domain (not to another port of the same host), but never Azure's
// api-key header, nor the texts. Nor is one followed that would send the
// texts' POST again as a GET without them. A redirect refused is a client
// error, not sent again: Go's error for it read as the network failing.
func TestRedirectsStayWithTheProvider(t *testing.T) {
	other, otherURL := newFake(t, ok(4))
	for _, tt := range []struct {
		name    string
		to      string // where the provider's /moved/... redirects: "" is its own origin
		code    int
		refused string // in the error; "" when followed
	}{
		{"the same origin", "", http.StatusTemporaryRedirect, ""},
		{"another origin", strings.TrimSuffix(otherURL, "/v1"), http.StatusTemporaryRedirect, "another origin"},
		{"as a GET", "", http.StatusSeeOther, "as a GET"},
	} {
		for _, apiType := range []string{"openai", "azure"} {
			t.Run(tt.name+"/"+apiType, func(t *testing.T) {
				provider := &fakeAPI{answer: ok(4)}
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if rest, moved := strings.CutPrefix(r.URL.RequestURI(), "/moved"); moved {
						http.Redirect(w, r, tt.to+rest, tt.code)
						return
					}
					provider.ServeHTTP(w, r)
				}))
				defer srv.Close()
				base, model := srv.URL+"/moved/v1", ""
				if apiType == "azure" {
					base, model = srv.URL+"/moved", "emb-deploy"
				}
				before := other.calls.Load()
				e := NewOpenAI(OpenAIConfig{BaseURL: base, APIKey: "secret-key", APIType: apiType, Model: model, MaxRetries: -1})
				_, err := e.Embed(t.Context(), []string{"a private text"})
				switch {
				case tt.refused == "" && (err != nil || provider.calls.Load() != 1):
					t.Errorf("Embed = %v with %d requests to the provider, want the redirect followed", err, provider.calls.Load())
				case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
					t.Errorf("Embed through the redirect = %v, want it refused saying %q", err, tt.refused)
				case tt.refused != "" && (Reason(err) != "client_error" || retryable(err) || provider.calls.Load() != 0):
					t.Errorf("a redirect refused: reason %s, retryable %v, %d requests to the provider; want client_error, not retried, none", Reason(err), retryable(err), provider.calls.Load())
				}
				if n := other.calls.Load() - before; n != 0 {
					t.Errorf("the other origin received %d requests (auth %q)", n, other.auth)
				}
			})
		}
	}
}

// TestEmbedIntoRetriesItsOwnTexts checks that a caller may let go of an
// input once its vector is put (the build clears its texts as they are
// embedded): a batch the provider stalls in mid-answer, after some of its
// vectors were put, is sent again with every input as it was.
func TestEmbedIntoRetriesItsOwnTexts(t *testing.T) {
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff"}
	want := slices.Clone(texts)
	f, url := newFake(t, func(call int, in []string, w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		b := vectors(in, 8)
		if call > 1 {
			w.Write(b)
			return
		}
		// Half the answer, then nothing until the client has given up.
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
	})
	o := NewOpenAI(OpenAIConfig{BaseURL: url, Timeout: 100 * time.Millisecond, sleep: noSleep})
	var mu sync.Mutex
	puts := 0
	err := o.EmbedInto(t.Context(), texts, func(i int, vec []float32) {
		mu.Lock()
		defer mu.Unlock()
		if int(vec[0]) != len(want[i]) {
			t.Errorf("input %d: vector of an input %v long, want %d", i, vec[0], len(want[i]))
		}
		texts[i] = ""
		puts++
	})
	if err != nil {
		t.Fatal(err)
	}
	if puts <= len(texts) {
		t.Fatalf("%d vectors put for %d inputs: the first answer put none before it stalled, so nothing was let go before the retry", puts, len(texts))
	}
	if len(f.inputs) != 2 || !slices.Equal(f.inputs[1], want) {
		t.Errorf("requests' inputs %q, want the retry to send %q", f.inputs, want)
	}
}
