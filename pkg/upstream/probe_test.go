package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProberGaps: a failing upstream is listed again after the first gap,
// unless it refuses, which doubles the gap up to the most, or asks for a
// wait (Retry-After), which is kept within both. Jitter is left out here
// (TestHalfJitter).
func TestProberGaps(t *testing.T) {
	type answer struct {
		refused bool
		wait    time.Duration
	}
	s := time.Second
	refused, failed := answer{refused: true}, answer{}
	for _, tt := range []struct {
		name    string
		answers []answer
		want    []time.Duration
	}{
		{"failures", []answer{failed, failed, failed}, []time.Duration{s, s, s}},
		{"refusals", []answer{refused, refused, refused, refused, refused, refused, refused, refused},
			[]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, time.Minute, time.Minute}},
		{"a wait asked for is kept", []answer{{false, 5 * s}, {true, 10 * s}, failed}, []time.Duration{5 * s, 10 * s, s}},
		{"a wait longer than the most", []answer{{false, time.Hour}}, []time.Duration{time.Minute}},
		{"a refusal's doubling outlasts a failure", []answer{refused, failed, refused}, []time.Duration{s, s, 2 * s}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProber(time.Second, time.Minute)
			p.jitter = func(d time.Duration) time.Duration { return d }
			for i, a := range tt.answers {
				if got := p.failed(a.refused, a.wait); got != tt.want[i] {
					t.Errorf("answer %d (%+v): gap %v, want %v", i, a, got, tt.want[i])
				}
			}
			p.succeeded()
			if got := p.failed(true, 0); got != time.Second {
				t.Errorf("the first refusal after a success: gap %v, want 1s", got)
			}
		})
	}
}

// TestRefusal: what an upstream answers, or what keeps it from
// answering, that will be the same until someone changes something.
func TestRefusal(t *testing.T) {
	answer := func(code int, contentType string) *http.Response {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	for _, tt := range []struct {
		name string
		resp *http.Response
		err  error
		want string
	}{
		{"a redirect that says nowhere to go", answer(300, "text/html"), nil, "HTTP 300"},
		{"a redirect not followed", answer(303, ""), nil, "HTTP 303"},
		{"credentials refused", answer(401, "text/plain"), nil, "HTTP 401"},
		{"forbidden", answer(403, ""), nil, "HTTP 403"},
		{"a wrong path", answer(404, "text/html"), nil, "HTTP 404"},
		{"a method it does not take", answer(405, ""), nil, "HTTP 405"},
		{"a protocol version it does not take", answer(400, "application/json"), nil, "HTTP 400"},
		{"too many requests", answer(429, ""), nil, "HTTP 429"},
		{"a request timeout passes", answer(408, ""), nil, ""},
		{"too early passes", answer(425, ""), nil, ""},
		{"a server error passes", answer(500, "text/html"), nil, ""},
		{"a bad gateway passes", answer(502, ""), nil, ""},
		{"not implemented", answer(501, ""), nil, "HTTP 501"},
		{"a loop: the URL is toolsearch's own", answer(508, "application/json"), nil, "HTTP 508"},
		{"a captive portal", answer(511, "text/html"), nil, "HTTP 511"},
		{"unavailable passes", answer(503, ""), nil, ""},
		{"an MCP answer", answer(200, "application/json"), nil, ""},
		{"an MCP stream", answer(200, "text/event-stream; charset=utf-8"), nil, ""},
		{"a notice accepted", answer(202, ""), nil, ""},
		{"a web page", answer(200, "text/html; charset=utf-8"), nil, `HTTP 200 with "text/html", not an MCP answer`},
		{"no content type", answer(200, ""), nil, `HTTP 200 with "", not an MCP answer`},
		{"a long content type is clipped", answer(200, "text/"+strings.Repeat("x", 500)), nil, `HTTP 200 with "text/` + strings.Repeat("x", 59) + `…", not an MCP answer`},
		{"no such host passes: a Service not created yet", nil, &url.Error{Op: "Post", URL: "http://nowhere.invalid/mcp", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}}, ""},
		{"a resolver down passes", nil, &net.DNSError{Err: "server misbehaving", Name: "up", IsTemporary: true}, ""},
		{"an unknown authority", nil, &url.Error{Op: "Post", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, "its certificate does not verify"},
		{"another host's certificate", nil, x509.HostnameError{Host: "up"}, "its certificate does not verify"},
		{"an expired certificate", nil, x509.CertificateInvalidError{Reason: x509.Expired}, "its certificate does not verify"},
		{"a connection refused passes", nil, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ""},
		{"a timeout passes", nil, context.DeadlineExceeded, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := refusal(tt.resp, tt.err); got != tt.want {
				t.Errorf("refusal = %q, want %q", got, tt.want)
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
