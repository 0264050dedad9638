package breaker

import (
	"testing"
	"time"
)

func TestBreaker_Cooldown(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at      time.Duration
		op      string // allow, fail, ok, neutral
		want    bool   // allow's answer; fail's "opened"
		wantSta string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"one failure under the threshold keeps it closed", []step{
			{0, "fail", false, Closed},
			{0, "allow", true, Closed},
		}},
		{"threshold opens for the first cooldown, then one probe", []step{
			{0, "fail", false, Closed},
			{0, "fail", true, Open},
			{500 * time.Millisecond, "allow", false, Open},
			{time.Second, "allow", true, HalfOpen},
			{time.Second, "allow", false, HalfOpen}, // the probe is in flight
			{time.Second, "ok", false, Closed},
			{time.Second, "allow", true, Closed},
		}},
		{"a failed probe doubles the cooldown up to the cap", []step{
			{0, "fail", false, Closed},
			{0, "fail", true, Open}, // open 1s
			{time.Second, "allow", true, HalfOpen},
			{time.Second, "fail", true, Open}, // open 2s
			{2500 * time.Millisecond, "allow", false, Open},
			{3 * time.Second, "allow", true, HalfOpen},
			{3 * time.Second, "fail", true, Open}, // open 3s (the cap), not 4s
			{6 * time.Second, "allow", true, HalfOpen},
			{6 * time.Second, "fail", true, Open}, // the cap again
			{9 * time.Second, "allow", true, HalfOpen},
		}},
		{"failures while open do not extend it", []step{
			{0, "fail", false, Closed},
			{0, "fail", true, Open},
			{900 * time.Millisecond, "fail", false, Open},
			{time.Second, "allow", true, HalfOpen},
		}},
		{"a neutral probe lets the next call probe", []step{
			{0, "fail", false, Closed},
			{0, "fail", true, Open},
			{time.Second, "allow", true, HalfOpen},
			{time.Second, "neutral", false, HalfOpen},
			{time.Second, "allow", true, HalfOpen},
		}},
		{"success resets the cooldown to the first", []step{
			{0, "fail", false, Closed},
			{0, "fail", true, Open},
			{time.Second, "allow", true, HalfOpen},
			{time.Second, "fail", true, Open}, // 2s
			{3 * time.Second, "ok", false, Closed},
			{3 * time.Second, "fail", false, Closed},
			{3 * time.Second, "fail", true, Open},
			{4 * time.Second, "allow", true, HalfOpen}, // 1s again
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(2, time.Second, 3*time.Second)
			for i, s := range tt.steps {
				var got bool
				switch s.op {
				case "allow":
					got = b.Allow(at(s.at))
				case "fail":
					got = b.Failure(at(s.at))
				case "ok":
					b.Success()
				case "neutral":
					b.Neutral()
				}
				if got != s.want || b.State(at(s.at)) != s.wantSta {
					t.Fatalf("step %d (%s at %s) = %v, state %s; want %v, %s", i, s.op, s.at, got, b.State(at(s.at)), s.want, s.wantSta)
				}
			}
		})
	}
}
