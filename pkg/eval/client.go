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
func (h *HTTPSearcher) Search(ctx context.Context, sr search.Request) ([]ToolKey, error) {
	body, err := json.Marshal(sr)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.BaseURL, "/")+"/mcp/tool-search", bytes.NewReader(body))
	if err != nil {
		return nil, err
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
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST /mcp/tool-search: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var out struct {
		Tools []struct {
			Name   string `json:"name"`
			Server string `json:"server"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("POST /mcp/tool-search: decode answer: %w", err)
	}
	keys := make([]ToolKey, len(out.Tools))
	for i, t := range out.Tools {
		keys[i] = ToolKey{t.Server, t.Name}
	}
	return keys, nil
}
