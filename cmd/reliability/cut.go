package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
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
	p, err := startCutProxy(strings.TrimPrefix(w.base, "http://"), `"call_tool"`, time.Second)
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
	res, ok, took := timedCall(ctx, cs, "slow")
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

// relayCut: toolsearch's connection to its upstream drops 1 s into a
// call of a tool that answers after 3 s. The upstream keeps its streams'
// events (-events), as server-everything does, so toolsearch can resume
// the call's stream; it must not send the call again, which would run it
// twice.
func (r *rig) relayCut(ctx context.Context) (result, error) {
	addr, err := serveproc.FreeAddr()
	if err != nil {
		return result{}, err
	}
	up, err := r.upstream(addr, "-slow", "3s", "-events")
	if err != nil {
		return result{}, err
	}
	defer up.kill()
	p, err := startCutProxy(addr, `"tools/call"`, time.Second)
	if err != nil {
		return result{}, err
	}
	defer p.close()
	ts, err := r.toolsearch(ctx, plain(p.addr()))
	if err != nil {
		return result{}, err
	}
	defer ts.Stop()
	cs, err := connect(ctx, ts.Base, nil)
	if err != nil {
		return result{}, err
	}
	defer cs.Close()
	res, ok, took := timedCall(ctx, cs, "slow")
	ran, err := ranTimes(addr, "slow")
	if err != nil {
		return result{}, err
	}
	values := map[string]float64{"answered": boolf(ok), "cut": boolf(p.cutDone.Load()), "ran": float64(ran)}
	if !ok {
		return measured(values, "toolsearch's connection to the upstream cut 1 s into a 3 s call: **lost**, %q after %.1f s; runs of the tool upstream: %d", resultText(res), took, ran)
	}
	return measured(values, "toolsearch's connection to the upstream cut 1 s into a 3 s call: answered after %.1f s (toolsearch resumed with Last-Event-ID); runs of the tool upstream: %d", took, ran)
}

// timedCall calls the upstream tool name through cs, within 20 s, and
// says how long it took.
func timedCall(ctx context.Context, cs *mcp.ClientSession, name string) (*mcp.CallToolResult, bool, float64) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	res, ok := callTool(ctx, cs, name)
	return res, ok, time.Since(start).Seconds()
}

// ranTimes asks the test upstream at addr how many times tool ran.
func ranTimes(addr, tool string) (int, error) {
	resp, err := http.Get("http://" + addr + "/control/ran?name=" + tool)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(b))
}

// cutProxy forwards TCP to target, and drops the first connection whose
// client sends match, after.
type cutProxy struct {
	ln      net.Listener
	target  string
	match   []byte
	after   time.Duration
	armed   atomic.Bool
	cutDone atomic.Bool
}

func startCutProxy(target, match string, after time.Duration) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cutProxy{ln: ln, target: target, match: []byte(match), after: after}
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
		if n > 0 && bytes.Contains(buf[:n], p.match) && !p.armed.Swap(true) {
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
