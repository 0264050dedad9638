package upstream

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
			b := newBreaker(2, time.Second, 3*time.Second)
			for i, s := range tt.steps {
				var got bool
				switch s.op {
				case "allow":
					got = b.allow(at(s.at))
				case "fail":
					got = b.failure(at(s.at))
				case "ok":
					b.success()
				case "neutral":
					b.neutral()
				}
				if got != s.want || b.state(at(s.at)) != s.wantSta {
					t.Fatalf("step %d (%s at %s) = %v, state %s; want %v, %s", i, s.op, s.at, got, b.state(at(s.at)), s.want, s.wantSta)
				}
			}
		})
	}
}

// TestProberGaps: a failing upstream is listed again after the first gap,
// unless it refuses (a 4xx but 408 and 425: credentials, a wrong path,
// too many requests), which doubles the gap up to the most, or asks for a
// wait (Retry-After), which is kept within both. Jitter is left out here
// (TestHalfJitter).
func TestProberGaps(t *testing.T) {
	type answer struct {
		status int
		wait   time.Duration
	}
	s := time.Second
	for _, tt := range []struct {
		name    string
		answers []answer
		want    []time.Duration
	}{
		{"no answer", []answer{{}, {}, {}}, []time.Duration{s, s, s}},
		{"server errors", []answer{{502, 0}, {503, 0}, {500, 0}}, []time.Duration{s, s, s}},
		{"timeouts and too early pass", []answer{{408, 0}, {425, 0}, {408, 0}}, []time.Duration{s, s, s}},
		{"credentials refused", []answer{{401, 0}, {401, 0}, {403, 0}, {401, 0}, {401, 0}, {401, 0}, {401, 0}, {401, 0}},
			[]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, time.Minute, time.Minute}},
		{"a wrong path", []answer{{404, 0}, {405, 0}, {400, 0}}, []time.Duration{s, 2 * s, 4 * s}},
		{"too many requests, no wait given", []answer{{429, 0}, {429, 0}}, []time.Duration{s, 2 * s}},
		{"a wait asked for is kept", []answer{{503, 5 * s}, {429, 10 * s}, {503, 0}}, []time.Duration{5 * s, 10 * s, s}},
		{"a wait longer than the most", []answer{{503, time.Hour}}, []time.Duration{time.Minute}},
		{"a refusal's doubling outlasts a server error", []answer{{401, 0}, {502, 0}, {401, 0}}, []time.Duration{s, s, 2 * s}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProber(time.Second, time.Minute)
			p.jitter = func(d time.Duration) time.Duration { return d }
			for i, a := range tt.answers {
				got, refused := p.failed(a.status, a.wait)
				if got != tt.want[i] {
					t.Errorf("answer %d (%d, wait %v): gap %v, want %v", i, a.status, a.wait, got, tt.want[i])
				}
				if refused != refuses(a.status) {
					t.Errorf("answer %d (%d): refused %v", i, a.status, refused)
				}
			}
			p.succeeded()
			if got, _ := p.failed(401, 0); got != time.Second {
				t.Errorf("the first refusal after a success: gap %v, want 1s", got)
			}
		})
	}
}

func TestHalfJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, time.Second, time.Minute} {
		for range 100 {
			if got := halfJitter(d); got < d/2 || got > d {
				t.Fatalf("halfJitter(%v) = %v, want within [%v, %v]", d, got, d/2, d)
			}
		}
	}
}
