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
	"sync"
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
	c, err := r.relayed(ctx, func(*cutProxy) {})
	if err != nil {
		return result{}, err
	}
	if !c.ok {
		return measured(c.values, "toolsearch's connection to the upstream cut 1 s into a 3 s call: **lost**, %q after %.1f s; runs of the tool upstream: %d", resultText(c.res), c.took, c.ran)
	}
	return measured(c.values, "toolsearch's connection to the upstream cut 1 s into a 3 s call: answered after %.1f s (toolsearch resumed with Last-Event-ID); runs of the tool upstream: %d", c.took, c.ran)
}

// gateway: a proxy before the upstream restarts 1 s into a call of a
// tool that answers after 3 s (every connection through it drops) and
// answers 502 for the next 2.2 s, as an ingress does while what is behind
// it comes back. The SDK asks for a dropped stream again 1 to 2 s after
// it ended, then 1.5 to 3 s later: the first ask meets the 502, the
// second the upstream.
func (r *rig) gateway(ctx context.Context) (result, error) {
	c, err := r.relayed(ctx, func(p *cutProxy) { p.all, p.gateway = true, 2200*time.Millisecond })
	if err != nil {
		return result{}, err
	}
	gated := int(c.values["gated"])
	if !c.ok {
		return measured(c.values, "a proxy before the upstream restarted 1 s into a 3 s call, then 502 for 2.2 s (%d answered so): **lost**, %q after %.1f s; runs of the tool upstream: %d", gated, resultText(c.res), c.took, c.ran)
	}
	return measured(c.values, "a proxy before the upstream restarted 1 s into a 3 s call, then 502 for 2.2 s (%d answered so): answered after %.1f s; runs of the tool upstream: %d", gated, c.took, c.ran)
}

// relayedCall is what a call through a cutting proxy came to.
type relayedCall struct {
	res    *mcp.CallToolResult
	ok     bool
	took   float64
	ran    int
	values map[string]float64
}

// relayed calls slow (3 s) on an upstream keeping its events (-events),
// through toolsearch, whose connection to the upstream goes through a
// cutProxy that drops the call's connection 1 s in, set up by set.
func (r *rig) relayed(ctx context.Context, set func(*cutProxy)) (relayedCall, error) {
	addr, err := serveproc.FreeAddr()
	if err != nil {
		return relayedCall{}, err
	}
	up, err := r.upstream(addr, "-slow", "3s", "-events")
	if err != nil {
		return relayedCall{}, err
	}
	defer up.kill()
	p, err := startCutProxy(addr, `"tools/call"`, time.Second)
	if err != nil {
		return relayedCall{}, err
	}
	set(p)
	defer p.close()
	ts, err := r.toolsearch(ctx, plain(p.addr()))
	if err != nil {
		return relayedCall{}, err
	}
	defer ts.Stop()
	cs, err := connect(ctx, ts.Base, nil)
	if err != nil {
		return relayedCall{}, err
	}
	defer cs.Close()
	c := relayedCall{}
	c.res, c.ok, c.took = timedCall(ctx, cs, "slow")
	if c.ran, err = ranTimes(addr, "slow"); err != nil {
		return relayedCall{}, err
	}
	c.values = map[string]float64{"answered": boolf(c.ok), "cut": boolf(p.cutDone.Load()), "ran": float64(c.ran), "gated": float64(p.gated.Load())}
	return c, nil
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
// client sends match, after; with all, every connection it holds then.
// For gateway after that, it answers every request 502 (gated).
type cutProxy struct {
	ln      net.Listener
	target  string
	match   []byte
	after   time.Duration
	armed   atomic.Bool
	cutDone atomic.Bool
	all     bool
	gateway time.Duration
	until   atomic.Int64 // UnixNano: answer 502 until then
	gated   atomic.Int64
	mu      sync.Mutex
	conns   map[net.Conn]bool
}

func startCutProxy(target, match string, after time.Duration) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cutProxy{ln: ln, target: target, match: []byte(match), after: after, conns: map[net.Conn]bool{}}
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

// badGateway is what the proxy answers while what is behind it is away.
const badGateway = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 30\r\nConnection: close\r\n\r\n<html>502 Bad Gateway</html>\r\n"

func (p *cutProxy) relay(c net.Conn) {
	defer c.Close()
	if time.Now().UnixNano() < p.until.Load() {
		buf := make([]byte, 32<<10)
		_, _ = c.Read(buf) // the request, whose body is small
		p.gated.Add(1)
		_, _ = io.WriteString(c, badGateway)
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, s)
		p.mu.Unlock()
	}()
	go func() {
		_, _ = io.Copy(c, s)
		c.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 && bytes.Contains(buf[:n], p.match) && !p.armed.Swap(true) {
			time.AfterFunc(p.after, func() {
				p.until.Store(time.Now().Add(p.gateway).UnixNano())
				p.cutDone.Store(true)
				c.Close()
				s.Close()
				if p.all {
					p.mu.Lock()
					for conn := range p.conns {
						conn.Close()
					}
					p.mu.Unlock()
				}
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
