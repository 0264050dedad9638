package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSDKLogBounded: what the SDK logs of a caller's request (its log
// level, a resource's URI, an error quoting params) reaches the log
// clipped, each value and the message to maxLogText bytes; numbers,
// times and durations pass as they are. And a message seen again in the
// window is left out, as before.
func TestSDKLogBounded(t *testing.T) {
	long := strings.Repeat("L", 100<<10)
	tests := []struct {
		name string
		log  func(*slog.Logger)
		key  string // the value checked; "msg" for the message
		want any    // the value logged, when not clipped
	}{
		{"a message", func(l *slog.Logger) { l.Info("calling x: " + long) }, "msg", nil},
		{"a string", func(l *slog.Logger) { l.Info("client log level set", "level", long) }, "level", nil},
		{"an error", func(l *slog.Logger) { l.Error("failed", "error", errors.New(long)) }, "error", nil},
		{"a stringer", func(l *slog.Logger) { l.Info("m", "uri", stringer(long)) }, "uri", nil},
		{"a group", func(l *slog.Logger) { l.Info("m", slog.Group("g", "uri", long)) }, "g", nil},
		{"from With", func(l *slog.Logger) { l.With("uri", long).Info("m") }, "uri", nil},
		{"a short string", func(l *slog.Logger) { l.Info("m", "method", "tools/call") }, "method", "tools/call"},
		{"a number", func(l *slog.Logger) { l.Info("m", "n", int64(1<<40)) }, "n", float64(1 << 40)},
		{"a duration", func(l *slog.Logger) { l.Info("m", "d", 2*time.Second) }, "d", float64(2 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(newDedup(slog.NewJSONHandler(&buf, nil), time.Minute)))
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("%v: %.200s", err, buf.String())
			}
			if buf.Len() > 4*maxLogText {
				t.Errorf("a %d-byte line: %.300s", buf.Len(), buf.String())
			}
			got := line[tt.key]
			if tt.want != nil && got != tt.want {
				t.Errorf("%s = %v; want %v", tt.key, got, tt.want)
			}
			if s := buf.String(); tt.want == nil && (!strings.Contains(s, "LLL…") || strings.Contains(s, strings.Repeat("L", maxLogText+1))) {
				t.Errorf("%s not clipped to %d bytes: %.300s", tt.key, maxLogText, s)
			}
		})
	}
	var buf bytes.Buffer
	l := slog.New(newDedup(slog.NewJSONHandler(&buf, nil), time.Minute))
	for range 3 {
		l.Info("calling x: " + long)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("%d lines for one message logged three times in a window; want 1", n)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
