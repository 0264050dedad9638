package wait

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"no wait", context.Background(), 0, true},
		{"a negative wait", context.Background(), -time.Second, true},
		{"a short wait", context.Background(), time.Millisecond, true},
		{"done before", done, 0, false},
		{"done during an hour's wait", done, time.Hour, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sleep(tt.ctx, tt.d); got != tt.want {
				t.Errorf("Sleep = %v, want %v", got, tt.want)
			}
		})
	}
}
