package reqbody

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRead sends raw requests, as a client on the wire does, to a handler
// that reads its body with a bound of 16 bytes: what the client is told,
// whether it is asked for its body (100 Continue), and what the handler
// read.
func TestRead(t *testing.T) {
	const limit = 16
	for _, tc := range []struct {
		name, headers, body string
		want                string // what the handler saw
		status              int
		continued           bool // the client was asked for its body
	}{
		{"within the bound", "Content-Length: 5\r\n", "hello", "hello", 200, false},
		{"at the bound", "Content-Length: 16\r\n", strings.Repeat("x", 16), strings.Repeat("x", 16), 200, false},
		{"declared over the bound", "Content-Length: 17\r\n", strings.Repeat("x", 17), "too large", 413, false},
		{"declared 100 GB, a few bytes sent", "Content-Length: 100000000000\r\n", "hello", "too large", 413, false},
		{"chunked, over the bound", "Transfer-Encoding: chunked\r\n", "11\r\n" + strings.Repeat("x", 17) + "\r\n0\r\n\r\n", "too large", 413, false},
		{"chunked, within", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", "hello", 200, false},
		{"expecting 100-continue, within", "Content-Length: 5\r\nExpect: 100-continue\r\n", "hello", "hello", 200, true},
		{"expecting 100-continue, declared 100 GB", "Content-Length: 100000000000\r\nExpect: 100-continue\r\n", "", "too large", 413, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A server of its own: a case that fails leaves no answer
			// behind for the next.
			got := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := Read(w, r, limit)
				switch {
				case errors.Is(err, ErrTooLarge):
					got <- "too large"
					http.Error(w, "too large", http.StatusRequestEntityTooLarge)
				case err != nil:
					got <- "error: " + err.Error()
					http.Error(w, "unreadable", http.StatusBadRequest)
				default:
					got <- string(body)
					fmt.Fprint(w, "ok")
				}
			}))
			defer srv.Close()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\n%s\r\n", tc.headers)
			rd := bufio.NewReader(conn)
			if strings.Contains(tc.headers, "Expect:") {
				// A client waits for 100 Continue before it sends; a
				// refusal comes instead of it.
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				continued := strings.HasPrefix(line, "HTTP/1.1 100")
				if continued != tc.continued {
					t.Fatalf("first line %q; want 100 Continue %t", line, tc.continued)
				}
				if continued {
					rd.ReadString('\n') // the blank line ending it
					io.WriteString(conn, tc.body)
				} else {
					rd = bufio.NewReader(io.MultiReader(strings.NewReader(line), rd))
				}
			} else {
				io.WriteString(conn, tc.body)
			}
			resp, err := http.ReadResponse(rd, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			select {
			case saw := <-got:
				if saw != tc.want {
					t.Errorf("the handler saw %q, want %q", saw, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the handler did not answer")
			}
		})
	}
}

// TestDiscard: a refused body is read and thrown away, up to DrainBytes,
// unless the client is still waiting to be asked for it or has declared
// more than that.
func TestDiscard(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expect   string
		size     int
		declared int64 // Content-Length; -1: unknown (chunked)
		read     int
	}{
		{"a body being sent", "", 1000, 1000, 1000},
		{"a chunked body over DrainBytes", "", DrainBytes + 1000, -1, DrainBytes},
		{"a body declared at DrainBytes", "", DrainBytes, DrainBytes, DrainBytes},
		{"a body declared over DrainBytes", "", 1000, DrainBytes + 1, 0},
		{"a client waiting on 100-continue", "100-continue", 1000, 1000, 0},
		{"the header in another case", "100-Continue", 1000, 1000, 0},
		{"another expectation", "something-else", 1000, 1000, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &counting{r: strings.NewReader(strings.Repeat("x", tc.size))}
			r := httptest.NewRequest(http.MethodPost, "/", body)
			r.ContentLength = tc.declared
			if tc.expect != "" {
				r.Header.Set("Expect", tc.expect)
			}
			Discard(r)
			if body.n != tc.read {
				t.Errorf("read %d bytes, want %d", body.n, tc.read)
			}
		})
	}
}

type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
