package mcpserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestSessionsTeach: an MCP session teaches what it used of its last
// search's tools (a schema asked for, a call that succeeded) once it
// searches again or closes; a failed call, a tool the search did not
// return, and a search with no use teach nothing.
func TestSessionsTeach(t *testing.T) {
	store, err := learn.Open(filepath.Join(t.TempDir(), "learned.db"), learn.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r := newLearningRig(t, nil, Options{}, nil, &search.Learning{Store: store, Refresh: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { r.svc.Learn(ctx, nil); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	recorded := func() int64 { return r.svc.Status().Learning.Recorded }

	cs := r.connect(t, "")
	// A search, then a use of a tool it returned and one it did not.
	call(t, cs, "search_tools", map[string]any{"query": "will it rain in Oslo this week", "limit": 3})
	call(t, cs, "get_tool_schema", map[string]any{"name": "get_forecast"})
	call(t, cs, "get_tool_schema", map[string]any{"name": "create_issue"})
	// The next search finishes the first: one event.
	call(t, cs, "search_tools", map[string]any{"query": "open a ticket for the bug", "limit": 3})
	waitUntil(t, func() bool { return recorded() == 1 })
	// A call that fails teaches nothing; the session's close finishes the
	// second search, which used nothing.
	if res := call(t, cs, "call_tool", map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": 7}}); !res.IsError {
		t.Fatalf("a bad call succeeded: %s", text(res))
	}
	cs.Close()
	time.Sleep(100 * time.Millisecond)
	if n := recorded(); n != 1 {
		t.Errorf("%d events recorded, want 1: only the first search taught", n)
	}
	// A call that succeeds teaches, at the session's close.
	cs = r.connect(t, "")
	call(t, cs, "search_tools", map[string]any{"query": "weather forecast for Oslo", "limit": 3})
	if res := call(t, cs, "call_tool", map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "Oslo", "days": 2}}); res.IsError {
		t.Fatalf("call_tool: %s", text(res))
	}
	cs.Close()
	waitUntil(t, func() bool { return recorded() == 2 })
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
	}
}
