package embedding

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// dialect is how one kind of OpenAI-compatible server answers
// /embeddings, as its documentation describes: where it listens, how it
// authenticates, what it does with "dimensions", its limits and the shape
// of its errors.
type dialect struct {
	path   string // the embeddings path
	header string // the header that must carry key ("" : no auth)
	key    string
	width  int // the model's own width
	// dims: "honour" answers the requested width, "ignore" the model's
	// own, "reject" refuses a request that sets one.
	dims     string
	maxBatch int // inputs per request (0: no limit)
	maxBytes int // request body bytes (0: no limit)
	// maxTokens is the model's length (0: it cuts a longer input itself);
	// tooLong refuses an input of n tokens over it, in the server's words.
	maxTokens int
	tooLong   func(n int) (status int, msg string)
	// errorBody writes status and msg in the server's error shape.
	errorBody func(status int, msg string) string
	models    []string // models it serves
}

func openaiError(status int, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
	return string(b)
}

func azureError(status int, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": "DeploymentNotFound", "message": msg}})
	return string(b)
}

// vLLM answers errors as a top-level object, not under "error".
func vllmError(status int, msg string) string {
	b, _ := json.Marshal(map[string]any{"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": status})
	return string(b)
}

// Hugging Face TEI answers {"error": "text", "error_type": "..."}, its
// text not HTML-escaped.
func teiError(status int, msg string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"error": msg, "error_type": "Validation"})
	return b.String()
}

func init() {
	// TEI started with --auto-truncate cuts a long input itself.
	d := dialects["tei"]
	d.maxTokens = 0
	dialects["tei --auto-truncate"] = d
}

// tokens is what the fakes count an input as: about four letters a token.
func tokens(text string) int { return len(text)/4 + 1 }

func openaiTooLong(n int) (int, string) {
	return http.StatusBadRequest, fmt.Sprintf("This model's maximum context length is 8192 tokens, however you requested %d tokens (%d in your prompt; 0 for the completion). Please reduce your prompt; or completion length.", n, n)
}

var dialects = map[string]dialect{
	"openai": {path: "/v1/embeddings", header: "Authorization", key: "Bearer sk-test", width: 1536, dims: "honour",
		maxBatch: 2048, errorBody: openaiError, models: []string{"text-embedding-3-small"}, maxTokens: 8192, tooLong: openaiTooLong},
	"azure": {path: "/openai/deployments/emb/embeddings", header: "api-key", key: "az-test", width: 1536, dims: "honour",
		maxBatch: 2048, errorBody: azureError, models: []string{"emb"}, maxTokens: 8192, tooLong: openaiTooLong},
	"ollama": {path: "/v1/embeddings", width: 768, dims: "ignore", errorBody: openaiError, models: []string{"nomic-embed-text"}},
	"vllm": {path: "/v1/embeddings", width: 1024, dims: "reject", errorBody: vllmError, models: []string{"BAAI/bge-m3"},
		maxTokens: 8192, tooLong: func(n int) (int, string) {
			return http.StatusBadRequest, fmt.Sprintf("This model's maximum context length is 8192 tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", n)
		}},
	"tei": {path: "/v1/embeddings", width: 384, dims: "ignore", maxBatch: 32, maxBytes: 2 << 20,
		errorBody: teiError, models: []string{"BAAI/bge-small-en-v1.5"}, maxTokens: 512, tooLong: func(n int) (int, string) {
			return http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: `inputs` must have less than 512 tokens. Given: %d", n)
		}},
}

// serve runs d as an httptest server and counts its requests.
func (d dialect) serve(t *testing.T) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fail := func(status int, msg string) {
			w.WriteHeader(status)
			fmt.Fprint(w, d.errorBody(status, msg))
		}
		if r.URL.Path != d.path {
			fail(http.StatusNotFound, "no route "+r.URL.Path)
			return
		}
		if d.header != "" && r.Header.Get(d.header) != d.key {
			fail(http.StatusUnauthorized, "invalid key")
			return
		}
		if d.maxBytes > 0 && r.ContentLength > int64(d.maxBytes) {
			w.WriteHeader(http.StatusRequestEntityTooLarge) // TEI's payload limit: an empty body
			return
		}
		var req struct {
			Input      []string `json:"input"`
			Model      string   `json:"model"`
			Dimensions int      `json:"dimensions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fail(http.StatusUnprocessableEntity, err.Error())
			return
		}
		if d.header == "api-key" {
			req.Model = "emb" // Azure names the deployment in the path
		}
		width := d.width
		switch {
		case !strings.Contains(strings.Join(d.models, " "), req.Model):
			fail(http.StatusNotFound, fmt.Sprintf("model %q not found", req.Model))
			return
		case d.maxBatch > 0 && len(req.Input) > d.maxBatch:
			fail(http.StatusUnprocessableEntity, fmt.Sprintf("batch size %d > maximum allowed batch size %d", len(req.Input), d.maxBatch))
			return
		case req.Dimensions > 0 && d.dims == "reject":
			fail(http.StatusBadRequest, fmt.Sprintf("Model %q does not support matryoshka representation, changing output dimensions will lead to poor results.", req.Model))
			return
		case req.Dimensions > 0 && d.dims == "honour":
			width = req.Dimensions
		}
		for _, text := range req.Input {
			if n := tokens(text); d.maxTokens > 0 && n > d.maxTokens {
				fail(d.tooLong(n))
				return
			}
		}
		w.Write(vectors(req.Input, width))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// client is a client configured as cfg, its BaseURL taken as a path
// under d's fake, without retries, and the fake's request count.
func (d dialect) client(t *testing.T, cfg OpenAIConfig) (*OpenAI, *atomic.Int32) {
	t.Helper()
	url, requests := d.serve(t)
	cfg.BaseURL = url + cfg.BaseURL
	cfg.MaxRetries = -1
	return NewOpenAI(cfg), requests
}

// TestDialects runs the configuration docs/configuration.md gives for each kind of
// server against a fake that speaks its dialect.
func TestDialects(t *testing.T) {
	texts := make([]string, 100)
	for i := range texts {
		texts[i] = strings.Repeat("x", i+1)
	}
	long := make([]string, 64) // 64 x 64 KiB: over TEI's 2 MB payload limit in one request
	for i := range long {
		long[i] = strings.Repeat("y", 64<<10+i)
	}
	tests := []struct {
		name     string
		dialect  string
		cfg      OpenAIConfig // BaseURL is the fake's URL plus this suffix
		texts    []string
		width    int
		requests int32
		err      []string // substrings of the error; none for success
		reason   string
	}{
		{"openai", "openai", OpenAIConfig{BaseURL: "/v1", APIKey: "sk-test"}, texts, 1536, 1, nil, ""},
		{"openai, narrower", "openai", OpenAIConfig{BaseURL: "/v1", APIKey: "sk-test", Dimensions: 256}, texts, 256, 1, nil, ""},
		{"openai, a wrong key", "openai", OpenAIConfig{BaseURL: "/v1", APIKey: "sk-wrong"}, texts, 0, 1, []string{"invalid key"}, "client_error"},
		{"azure", "azure", OpenAIConfig{APIType: "azure", APIKey: "az-test", Model: "emb", APIVersion: "2024-10-21"}, texts, 1536, 1, nil, ""},
		{"azure, a model name instead of the deployment", "azure", OpenAIConfig{APIType: "azure", APIKey: "az-test"}, texts, 0, 1, []string{"no route /openai/deployments/text-embedding-3-small/embeddings"}, "client_error"},
		{"ollama", "ollama", OpenAIConfig{BaseURL: "/v1", Model: "nomic-embed-text"}, texts, 768, 1, nil, ""},
		{"ollama, narrower: the full width is cut", "ollama", OpenAIConfig{BaseURL: "/v1", Model: "nomic-embed-text", Dimensions: 256}, texts, 256, 1, nil, ""},
		{"ollama, a model not pulled", "ollama", OpenAIConfig{BaseURL: "/v1", Model: "mxbai-embed-large"}, texts, 0, 1, []string{`model "mxbai-embed-large" not found`}, "client_error"},
		{"vllm", "vllm", OpenAIConfig{BaseURL: "/v1", Model: "BAAI/bge-m3"}, texts, 1024, 1, nil, ""},
		// A 400 that may refuse the inputs: one short text, refused too,
		// shows it refuses the request, which is not split.
		{"vllm refuses dimensions", "vllm", OpenAIConfig{BaseURL: "/v1", Model: "BAAI/bge-m3", Dimensions: 256}, texts, 0, 2, []string{"does not support matryoshka representation"}, "client_error"},
		{"tei with its batch size", "tei", OpenAIConfig{BaseURL: "/v1", Model: "BAAI/bge-small-en-v1.5", BatchSize: 32}, texts, 384, 4, nil, ""},
		{"tei without it", "tei", OpenAIConfig{BaseURL: "/v1", Model: "BAAI/bge-small-en-v1.5"}, texts, 0, 1, []string{`"error":"batch size 100 > maximum allowed batch size 32"`, "(-embedding-batch-size or embedding.batch_size sets the inputs per request, now 2048)"}, "client_error"},
		// 64 inputs of 64 KiB pass the batch limit but not the 2 MB
		// payload limit: the batch is halved until each half fits.
		{"tei, a batch over its payload limit", "tei --auto-truncate", OpenAIConfig{BaseURL: "/v1", Model: "BAAI/bge-small-en-v1.5", BatchSize: 32}, long, 384, 6, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, requests := dialects[tt.dialect].client(t, tt.cfg)
			vecs, err := client.Embed(t.Context(), tt.texts)
			if tt.err != nil {
				if err == nil || Reason(err) != tt.reason {
					t.Fatalf("err = %v (reason %s), want reason %s", err, Reason(err), tt.reason)
				}
				for _, want := range tt.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("err = %v, want it to contain %q", err, want)
					}
				}
			} else if err != nil {
				t.Fatalf("Embed: %v", err)
			} else if len(vecs) != len(tt.texts) || len(vecs[0]) != tt.width || vecs[len(vecs)-1][0] != float32(len(tt.texts[len(tt.texts)-1])) {
				t.Fatalf("got %d vectors of width %d, want %d of width %d in input order", len(vecs), len(vecs[0]), len(tt.texts), tt.width)
			}
			if got := requests.Load(); got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
		})
	}
}

// TestLongInputsAreCut: a text over the model's length, among others in
// a batch, no longer fails the whole request: the batch is halved down to
// the one text (the provider, asked once, embeds a short text, so the
// refusal was of the inputs), and that text is cut to its first 8 KiB,
// then half as much while it is refused. The others' vectors are their
// own. A request refused for itself (a wrong model) is not split.
func TestLongInputsAreCut(t *testing.T) {
	short := make([]string, 40)
	for i := range short {
		short[i] = strings.Repeat("x", i+1)
	}
	tests := []struct {
		name    string
		dialect string
		cfg     OpenAIConfig
		long    int // bytes of the long text, the 17th
		cut     int // bytes of it embedded
	}{
		{"openai, 40 KiB of text", "openai", OpenAIConfig{BaseURL: "/v1", APIKey: "sk-test"}, 40 << 10, 8 << 10},
		{"azure, 40 KiB", "azure", OpenAIConfig{APIType: "azure", APIKey: "az-test", Model: "emb", APIVersion: "2024-10-21"}, 40 << 10, 8 << 10},
		{"vllm, 40 KiB", "vllm", OpenAIConfig{BaseURL: "/v1", Model: "BAAI/bge-m3"}, 40 << 10, 8 << 10},
		{"tei, 4 KiB over 512 tokens", "tei", OpenAIConfig{BaseURL: "/v1", Model: "BAAI/bge-small-en-v1.5", BatchSize: 32}, 4 << 10, 1 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, requests := dialects[tt.dialect].client(t, tt.cfg)
			texts := slices.Clone(short)
			texts[16] = strings.Repeat("z", tt.long)
			var notes [][2]int
			ctx := WithCutNotice(t.Context(), func(input, kept int) { notes = append(notes, [2]int{input, kept}) })
			vecs, err := client.Embed(ctx, texts)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if len(notes) != 1 || notes[0] != [2]int{16, tt.cut} {
				t.Errorf("cut notices %v, want one of input 16 kept to %d bytes", notes, tt.cut)
			}
			for i, v := range vecs {
				want := float32(len(texts[i]))
				if i == 16 {
					want = float32(tt.cut)
				}
				if v[0] != want {
					t.Errorf("vector %d is of a text of %v bytes, want %v", i, v[0], want)
				}
			}
			// 40 texts in batches of at most 32: each halving of the
			// batch holding the long text costs two requests, one
			// refused; then the probe and the cuts. Far under one a text.
			if n := requests.Load(); n > 20 {
				t.Errorf("%d requests for 40 texts", n)
			}
		})
	}
	client, requests := dialects["ollama"].client(t, OpenAIConfig{BaseURL: "/v1", Model: "all-minilm"})
	if _, err := client.Embed(t.Context(), short); err == nil || requests.Load() != 1 {
		t.Errorf("a model not served: err %v after %d requests, want an error after 1", err, requests.Load())
	}
}
