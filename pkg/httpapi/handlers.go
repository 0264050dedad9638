package httpapi

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/search"
)

// maxQueryBytes bounds a query: longer text is a pasted document, not a
// request for a tool, and would cost the embedding provider for nothing.
const maxQueryBytes = 4096

type searchRequest struct {
	Query string `json:"query"`
	TopK  *int   `json:"top_k"`
}

func (s searchRequest) Valid() error {
	q := strings.TrimSpace(s.Query)
	switch {
	case q == "":
		return errorf(http.StatusBadRequest, "empty_query", `"query" is required and must not be blank`)
	case len(s.Query) > maxQueryBytes:
		return errorf(http.StatusBadRequest, "query_too_long", `"query" is %d bytes; the limit is %d`, len(s.Query), maxQueryBytes)
	case strings.ContainsRune(s.Query, 0):
		return errorf(http.StatusBadRequest, "invalid_query", `"query" contains a NUL character`)
	case s.TopK != nil && (*s.TopK < 1 || *s.TopK > search.MaxTopK):
		return errorf(http.StatusBadRequest, "top_k_out_of_range", `"top_k" must be between 1 and %d, got %d`, search.MaxTopK, *s.TopK)
	}
	return nil
}

func handleSearch(logger *slog.Logger, svc *search.Service) http.Handler {
	type response struct {
		Tools        []search.Hit `json:"tools"`
		Mode         string       `json:"mode"`
		TookMS       float64      `json:"took_ms"`
		IndexVersion string       `json:"index_version"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[searchRequest](w, r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		sr := search.Request{Query: req.Query}
		if req.TopK != nil {
			sr.TopK = *req.TopK
		}
		res, err := svc.Search(r.Context(), sr)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		encode(w, http.StatusOK, response{
			Tools:        res.Tools,
			Mode:         res.Mode,
			TookMS:       float64(res.Took.Microseconds()) / 1000,
			IndexVersion: res.IndexVersion,
		})
	})
}

func handleStatus(svc *search.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, svc.Status())
	})
}

func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

func handleReadyz(svc *search.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if svc.Current() == nil {
			writeError(w, r, slog.New(slog.DiscardHandler), search.ErrNotReady)
			return
		}
		encode(w, http.StatusOK, map[string]any{"ready": true})
	})
}
