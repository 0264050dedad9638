// Command fakeprovider serves an OpenAI-compatible /v1/embeddings on
// loopback with deterministic vectors of any width, written as JSON
// floats the way OpenAI sends them: the provider of the start-up and
// memory measurements at scale (BENCHMARKS.md), never a real one.
//
//	go run ./e2e/scale/fakeprovider -addr 127.0.0.1:18555 -dim 1536
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18555", "listen address")
	dim := flag.Int("dim", 1536, "vector width")
	flag.Parse()
	http.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		buf := []byte(`{"object":"list","data":[`)
		for i, in := range req.Input {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = fmt.Appendf(buf, `{"object":"embedding","index":%d,"embedding":[`, i)
			h := fnv.New64a()
			h.Write([]byte(in))
			x := h.Sum64()
			for j := range *dim {
				if j > 0 {
					buf = append(buf, ',')
				}
				x = x*6364136223846793005 + 1442695040888963407 // an LCG: the same text, the same vector
				buf = strconv.AppendFloat(buf, float64(int64(x>>33)%2000-1000)/40000, 'g', 8, 32)
			}
			buf = append(buf, "]}"...)
		}
		buf = append(buf, `],"model":"fake","usage":{"prompt_tokens":0,"total_tokens":0}}`...)
		w.Write(buf)
	})
	srv := &http.Server{Addr: *addr, ReadHeaderTimeout: 5 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeprovider:", err)
		os.Exit(1)
	}
}
