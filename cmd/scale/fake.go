package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fakeProvider is an OpenAI-compatible /v1/embeddings on loopback with
// deterministic vectors of one width: JSON floats as OpenAI sends them
// by default, or base64 little-endian float32s when a request asks for
// encoding_format "base64", as OpenAI's own client does. A fake of
// floats answers floats always, with about nine digits each as a model's
// float32s are written, not fill's few; each text gets one of a pool of
// vectors written once, so that writing floats does not take the cores
// the service's reading of them is timed on.
type fakeProvider struct {
	*httptest.Server
	pool   [][]byte     // a fake of floats' vectors, written (-floats; nil otherwise)
	served atomic.Int64 // inputs embedded

	// The provider's own time: how long at least one request was being
	// answered, from its arrival until its answer was made (not while the
	// answer is written, which waits on the reader). A start-up's time
	// less this is the service's.
	mu       sync.Mutex
	inflight int
	since    time.Time
	busy     time.Duration
}

func (f *fakeProvider) enter() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inflight == 0 {
		f.since = time.Now()
	}
	f.inflight++
}

func (f *fakeProvider) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inflight--; f.inflight == 0 {
		f.busy += time.Since(f.since)
	}
}

// busyTime is the provider's own time so far.
func (f *fakeProvider) busyTime() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.busy
	if f.inflight > 0 {
		b += time.Since(f.since)
	}
	return b
}

func startFake(dim int, floats bool) (*fakeProvider, error) {
	if dim < 1 {
		return nil, fmt.Errorf("-dim must be positive, got %d", dim)
	}
	f := &fakeProvider{}
	if floats {
		vec := make([]float32, dim)
		for i := range 256 {
			fill(vec, strconv.Itoa(i))
			for j := range vec {
				vec[j] *= 1 + float32(j%9973)/9973e3 // a mantissa of every bit
			}
			f.pool = append(f.pool, appendFloats(nil, vec))
		}
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		f.enter()
		answered := false
		defer func() {
			if !answered {
				f.leave()
			}
		}()
		var req struct {
			Input          []string `json:"input"`
			EncodingFormat string   `json:"encoding_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		f.served.Add(int64(len(req.Input)))
		w.Header().Set("Content-Type", "application/json")
		buf := []byte(`{"object":"list","data":[`)
		vec := make([]float32, dim)
		raw := make([]byte, 4*dim)
		for i, in := range req.Input {
			if i > 0 {
				buf = append(buf, ',')
			}
			if f.pool != nil {
				h := fnv.New32a()
				h.Write([]byte(in))
				buf = fmt.Appendf(buf, `{"object":"embedding","index":%d,"embedding":[`, i)
				buf = append(buf, f.pool[h.Sum32()%uint32(len(f.pool))]...)
				buf = append(buf, "]}"...)
				continue
			}
			fill(vec, in)
			buf = fmt.Appendf(buf, `{"object":"embedding","index":%d,"embedding":`, i)
			if req.EncodingFormat == "base64" {
				for j, x := range vec {
					binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(x))
				}
				buf = append(buf, '"')
				buf = base64.StdEncoding.AppendEncode(buf, raw)
				buf = append(buf, '"')
			} else {
				buf = append(appendFloats(append(buf, '['), vec), ']')
			}
			buf = append(buf, '}')
		}
		buf = append(buf, `],"model":"fake","usage":{"prompt_tokens":0,"total_tokens":0}}`...)
		answered = true
		f.leave()
		w.Write(buf)
	}))
	return f, nil
}

// appendFloats appends vec's numbers, comma-separated, each as short as
// reads back as the same float32.
func appendFloats(buf []byte, vec []float32) []byte {
	for j, x := range vec {
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendFloat(buf, float64(x), 'g', -1, 32)
	}
	return buf
}

// answers names, in the report, what a fake of floats answers.
func (f *fakeProvider) answers(embedder string) string {
	if embedder == "openai" && f.pool != nil {
		return " (answering floats)"
	}
	return ""
}

// fill writes text's vector: an LCG seeded by the text's hash, so the same
// text always gets the same vector.
func fill(vec []float32, text string) {
	h := fnv.New64a()
	h.Write([]byte(text))
	x := h.Sum64()
	for j := range vec {
		x = x*6364136223846793005 + 1442695040888963407
		vec[j] = float32(int64(x>>33)%2000-1000) / 40000
	}
}
