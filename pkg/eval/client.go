package eval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/internal/endpoint"
	"github.com/toolsearch/toolsearch/pkg/internal/pause"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// ErrRefused marks a server that refuses the eval itself (a missing or
// wrong key: 401, 403), cannot be reached, or stays unavailable: every
// query would fail the same way, so Run stops instead of counting each
// one as a miss. Its wrapper says which it was.
var ErrRefused = errors.New("the eval cannot run against this server")

// errUnavailable marks an answer that says the server, or the proxy in
// front of it, cannot answer for now.
var errUnavailable = errors.New("the server is unavailable")

// HTTPSearcher searches a running toolsearch server through its HTTP API.
type HTTPSearcher struct {
	BaseURL string       // for example http://127.0.0.1:8080
	Token   string       // bearer token; empty for none
	Client  *http.Client // http.DefaultClient when nil
	// Timeout bounds one search, answer and all (DefaultSearchTimeout when
	// 0). A server that takes longer answers no search: the run stops.
	Timeout time.Duration

	wait func(context.Context, time.Duration) error // sleep when nil
}

// DefaultSearchTimeout is HTTPSearcher's when none is set: a search is
// milliseconds, and a provider that does not answer costs the server its
// query timeout (2s), not this. Without one, a server that accepted the
// connection and never answered held eval, and the CI job running it,
// for good.
const DefaultSearchTimeout = 30 * time.Second

// maxAnswer bounds an answer read; maxQuoted, how much of an error's body
// its message quotes.
const (
	maxAnswer = 16 << 20
	maxQuoted = 512
)

// Search posts the request to /mcp/tool-search. A 429 (the server's rate
// limit) is waited out, as its Retry-After says (a minute at most each
// time), up to five times: an eval measures ranking, and a throttled
// query is no miss. So is a 503 (the server busy or not ready) and a
// proxy's 502 or 504 (a rollout behind an ingress); one that lasts past
// the fifth wait is an ErrRefused, which stops the run: counted as
// misses, such answers had lowered a live server's recall for what was
// not its ranking.
func (h *HTTPSearcher) Search(ctx context.Context, sr search.Request) (Answer, error) {
	for try := 0; ; try++ {
		ans, wait, err := h.search(ctx, sr)
		if errors.Is(err, errUnavailable) {
			if try == 5 {
				return ans, fmt.Errorf("%w: %w", ErrRefused, err)
			}
			// A proxy gives no Retry-After: 1, 2, 4, 8 and 16 s, half a
			// minute in all, for a pod to be replaced.
			wait = max(wait, time.Second<<try)
		} else if wait == 0 || try == 5 {
			return ans, err
		}
		sleep := h.wait
		if sleep == nil {
			sleep = pause.For
		}
		if err := sleep(ctx, wait); err != nil {
			return Answer{}, err
		}
	}
}

// retryAfter is how long a 429's Retry-After (seconds) asks to wait, at
// most a minute: a caller in debt for longer (the server's budget counts
// work, and a catalog audit can cost minutes of it) is waited out a
// minute a try. A value that is not a positive number of seconds waits 1 s.
func retryAfter(v string) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || secs < 1 {
		secs = 1
	}
	return time.Duration(min(secs, 60)) * time.Second
}

// CheckBaseURL reports what keeps raw from being a server's base URL to
// evaluate: it must be an absolute http or https URL naming a host, with
// no query or fragment (the API's paths are appended). "127.0.0.1:8080"
// would otherwise fail every search, each one a miss.
func CheckBaseURL(raw string) error { return endpoint.Check(raw, true) }

func (h *HTTPSearcher) search(ctx context.Context, sr search.Request) (Answer, time.Duration, error) {
	body, err := json.Marshal(sr)
	if err != nil {
		return Answer{}, 0, err
	}
	timeout := cmp.Or(h.Timeout, DefaultSearchTimeout)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Out of time here, and not because the caller stopped the eval.
	late := func() bool { return ctx.Err() != nil && parent.Err() == nil }
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.BaseURL, "/")+"/mcp/tool-search", bytes.NewReader(body))
	if err != nil {
		return Answer{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if late() {
			return Answer{}, 0, h.silent(timeout)
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return Answer{}, 0, fmt.Errorf("%w: nothing answers at %s (is toolsearch serve running there?): %w", ErrRefused, strings.TrimRight(h.BaseURL, "/"), op.Err)
		}
		return Answer{}, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil && late():
		return Answer{}, 0, h.silent(timeout)
	case err != nil:
		return Answer{}, 0, err
	case len(data) > maxAnswer:
		return Answer{}, 0, fmt.Errorf("POST /mcp/tool-search: %s: the answer is over %d bytes", resp.Status, maxAnswer)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return Answer{}, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("POST /mcp/tool-search: %s", resp.Status)
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return Answer{}, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("%w: POST %s/mcp/tool-search: %s: %s", errUnavailable, strings.TrimRight(h.BaseURL, "/"), resp.Status, redact.Text(quote(data), h.Token))
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		hint := "set TOOLSEARCH_API_KEY to a key the server accepts"
		if h.Token != "" {
			hint = "the server does not accept TOOLSEARCH_API_KEY's key"
		}
		return Answer{}, 0, fmt.Errorf("%w: the server refuses the key: POST %s/mcp/tool-search: %s (%s)", ErrRefused, strings.TrimRight(h.BaseURL, "/"), resp.Status, hint)
	}
	if resp.StatusCode != http.StatusOK {
		// A proxy's error page may echo the request's headers, the key too.
		return Answer{}, 0, fmt.Errorf("POST /mcp/tool-search: %s: %s", resp.Status, redact.Text(quote(data), h.Token))
	}
	var out struct {
		Tools []struct {
			Name   string `json:"name"`
			Server string `json:"server"`
		} `json:"tools"`
		Confidence *float32 `json:"confidence"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return Answer{}, 0, fmt.Errorf("POST /mcp/tool-search: decode answer: %w", err)
	}
	ans := Answer{Tools: make([]ToolKey, len(out.Tools)), Confidence: out.Confidence}
	for i, t := range out.Tools {
		ans.Tools[i] = ToolKey{t.Server, t.Name}
	}
	return ans, 0, nil
}

// silent is the error for a search that got no whole answer within
// timeout: an ErrRefused, since a server that slow will answer no other.
func (h *HTTPSearcher) silent(timeout time.Duration) error {
	return fmt.Errorf("%w: POST %s/mcp/tool-search: no answer within %s", ErrRefused, strings.TrimRight(h.BaseURL, "/"), timeout)
}

// quote is an error body for a message: trimmed, and cut at maxQuoted
// bytes (redact.Clip's rune boundary) so that a server's page of HTML or
// worse does not become the eval's whole output.
func quote(body []byte) string {
	s := strings.TrimSpace(string(body))
	kept := redact.Clip(s, maxQuoted, "")
	if len(kept) == len(s) {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes more)", kept, len(s)-len(kept))
}
