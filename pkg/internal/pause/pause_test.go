package pause

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"waits", context.Background(), time.Millisecond, nil},
		{"called off", done, time.Hour, context.Canceled},
	} {
		if err := For(tt.ctx, tt.d); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}
