package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cut: the client's connection to toolsearch drops 1 s into a call_tool
// of a tool that answers after 3 s, as a laptop's network does when it
// changes. The client is the go-sdk's, with its default reconnects.
func (r *rig) cut(ctx context.Context) (result, error) {
	w, err := r.world(ctx, []string{"-slow", "3s"}, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	p, err := startCutProxy(strings.TrimPrefix(w.base, "http://"), time.Second)
	if err != nil {
		return result{}, err
	}
	defer p.close()
	c := mcp.NewClient(&mcp.Implementation{Name: "reliability", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.addr() + "/mcp", HTTPClient: &http.Client{}}, nil)
	if err != nil {
		return result{}, err
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	res, ok := callTool(ctx, cs, "slow")
	took := time.Since(start).Seconds()
	cut := boolf(p.cutDone.Load())
	if !ok {
		why := "an error"
		if res != nil {
			why = fmt.Sprintf("%q", resultText(res))
		}
		return measured(map[string]float64{"answered": 0, "cut": cut}, "connection cut 1 s into a 3 s call: **lost**, %s after %.1f s", why, took)
	}
	return measured(map[string]float64{"answered": 1, "cut": cut}, "connection cut 1 s into a 3 s call: answered after %.1f s (the client reconnected with Last-Event-ID)", took)
}

// cutProxy forwards TCP to toolsearch, and drops the first connection
// whose client sends a call_tool, after.
type cutProxy struct {
	ln      net.Listener
	target  string
	after   time.Duration
	armed   atomic.Bool
	cutDone atomic.Bool
}

func startCutProxy(target string, after time.Duration) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cutProxy{ln: ln, target: target, after: after}
	go p.serve()
	return p, nil
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) close() { p.ln.Close() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.relay(c)
	}
}

func (p *cutProxy) relay(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() {
		_, _ = io.Copy(c, s)
		c.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 && bytes.Contains(buf[:n], []byte(`"call_tool"`)) && !p.armed.Swap(true) {
			time.AfterFunc(p.after, func() {
				p.cutDone.Store(true)
				c.Close()
				s.Close()
			})
		}
		if n > 0 {
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
