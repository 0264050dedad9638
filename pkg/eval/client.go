package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/search"
)

// HTTPSearcher searches a running toolsearch server through its HTTP API.
type HTTPSearcher struct {
	BaseURL string       // for example http://127.0.0.1:8080
	Token   string       // bearer token; empty for none
	Client  *http.Client // http.DefaultClient when nil
}

// Search posts the request to /mcp/tool-search.
func (h *HTTPSearcher) Search(ctx context.Context, sr search.Request) (Answer, error) {
	body, err := json.Marshal(sr)
	if err != nil {
		return Answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.BaseURL, "/")+"/mcp/tool-search", bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
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
		return Answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return Answer{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Answer{}, fmt.Errorf("POST /mcp/tool-search: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var out struct {
		Tools []struct {
			Name   string `json:"name"`
			Server string `json:"server"`
		} `json:"tools"`
		Confidence *float32 `json:"confidence"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return Answer{}, fmt.Errorf("POST /mcp/tool-search: decode answer: %w", err)
	}
	ans := Answer{Tools: make([]ToolKey, len(out.Tools)), Confidence: out.Confidence}
	for i, t := range out.Tools {
		ans.Tools[i] = ToolKey{t.Server, t.Name}
	}
	return ans, nil
}
