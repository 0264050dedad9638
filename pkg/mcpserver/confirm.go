package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/hints"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// The policies, as access names them.
const (
	ConfirmElicit   = access.ConfirmElicit
	ConfirmArgument = access.ConfirmArgument
	ConfirmOff      = access.ConfirmOff
)

// cancelGrace is how long a withdrawn question's notice gets to leave on
// the call's stream before the result closes it.
const cancelGrace = 200 * time.Millisecond

// DefaultConfirmTimeout is how long a user has to answer a confirmation.
const DefaultConfirmTimeout = config.DefaultConfirmTimeout

// The outcomes of a confirmation, as logged and counted.
const (
	outcomeAccepted  = "accepted"  // the user accepted through elicitation
	outcomeDeclined  = "declined"  // the user said no
	outcomeCancelled = "cancelled" // the user dismissed the question
	outcomeTimeout   = "timeout"   // no answer in time
	outcomeFailed    = "failed"    // the question could not be asked
	outcomeArgument  = "confirmed_argument"
	outcomeRefused   = "refused" // no elicitation and no confirm argument
	outcomeOff       = "not_required"
)

var outcomes = []string{outcomeAccepted, outcomeDeclined, outcomeCancelled, outcomeTimeout, outcomeFailed,
	outcomeArgument, outcomeRefused, outcomeOff}

type confirmer struct {
	policy  string                     // the deployment's
	keyOf   func(access.Caller) string // a key's own policy; "" for the deployment's
	timeout time.Duration
	logger  *slog.Logger
	count   *prometheus.CounterVec
	// listening reports whether a session has its GET stream open.
	listening func(session string) bool
}

func newConfirmer(opts Options) *confirmer {
	c := &confirmer{policy: opts.Confirm, keyOf: opts.KeyConfirm, timeout: opts.ConfirmTimeout,
		logger: opts.Logger}
	if c.policy == "" {
		c.policy = ConfirmElicit
	}
	if c.timeout <= 0 {
		c.timeout = DefaultConfirmTimeout
	}
	if c.keyOf == nil {
		c.keyOf = func(access.Caller) string { return "" }
	}
	c.count = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolsearch_mcp_confirmations_total",
		Help: "Decisions on call_tool calls to destructive tools, by policy and outcome.",
	}, []string{"policy", "outcome"})
	for _, p := range access.ConfirmPolicies {
		for _, o := range outcomes {
			c.count.WithLabelValues(p, o)
		}
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(c.count)
	}
	return c
}

// gate decides whether a call to t may go ahead. It returns nil to forward
// the call, or the result to answer instead: a question for the client, or
// an isError that says why the call was not made and what to do.
func (c *confirmer) gate(ctx context.Context, req *mcp.CallToolRequest, caller access.Caller, t search.Found, args json.RawMessage, confirmed bool) *mcp.CallToolResult {
	if !t.Hints.IsDestructive() {
		return nil
	}
	policy := c.keyOf(caller)
	if policy == "" {
		policy = c.policy
	}
	why := "declared by its server"
	if slices.Contains(t.Hints.Inferred, hints.Destructive) {
		why = "inferred from its name and description; its server declares no destructiveHint"
	}
	outcome, res := c.decide(ctx, req, t.ID(), args, confirmed, policy, why)
	c.count.WithLabelValues(policy, outcome).Inc()
	// Which tool, whose key and what was decided; never the arguments'
	// values, which may be the very data being deleted.
	c.logger.Info("destructive call", "key", caller.Key, "server", t.Server, "tool", t.Name, "policy", policy, "outcome", outcome)
	return res
}

// decide picks the route for a destructive call. A client that declared
// elicitation is asked, on the call's own response stream when the call
// is streamed, else on its GET stream; only a person answers that, so the
// model's confirm argument does not stand in for it. A client that cannot
// be asked (no elicitation, or neither stream to carry the question)
// confirms with the confirm argument once the user has agreed. Every
// client thus has one route, and none has a way around the policy.
func (c *confirmer) decide(ctx context.Context, req *mcp.CallToolRequest, id string, args json.RawMessage, confirmed bool, policy, why string) (string, *mcp.CallToolResult) {
	if policy == ConfirmOff {
		return outcomeOff, nil
	}
	if policy == ConfirmElicit && canElicit(req) {
		switch {
		case streamed(req):
			return c.elicit(ctx, ctx, req.Session, id, args, why)
		case c.listening != nil && c.listening(req.Session.ID()):
			// The SDK sends what is written under the call's context on the
			// call's response, which this client reads as plain JSON: a
			// context without the call in it sends on the GET stream.
			qctx, stop := detached(ctx)
			defer stop()
			return c.elicit(ctx, qctx, req.Session, id, args, why)
		}
	}
	if confirmed {
		return outcomeArgument, nil
	}
	return outcomeRefused, errorResult(fmt.Sprintf("%s was not called: it is destructive (%s), and this deployment confirms destructive calls first. "+
		"To run it, call call_tool again with \"confirm\": true once the user has agreed to it.", id, why))
}

// streamed reports whether the call's POST is answered as an event
// stream, which can carry the question (see stream.go).
func streamed(req *mcp.CallToolRequest) bool {
	return req.Extra != nil && req.Extra.Header.Get(streamHeader) == "1"
}

// detached is a context cancelled with ctx but carrying none of its
// values, so the SDK does not tie what is sent under it to ctx's request.
func detached(ctx context.Context) (context.Context, func()) {
	qctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	return qctx, func() { stop(); cancel() }
}

// elicit asks the user under qctx (which picks the stream the question
// travels on) and waits at most the timeout for the answer; ctx is the
// call's.
func (c *confirmer) elicit(ctx, qctx context.Context, ss *mcp.ServerSession, id string, args json.RawMessage, why string) (string, *mcp.CallToolResult) {
	ectx, cancel := context.WithTimeout(qctx, c.timeout)
	defer cancel()
	res, err := ss.Elicit(ectx, question(id, args, why))
	if err != nil && ectx.Err() != nil && qctx == ctx {
		// The SDK tells the client the question is withdrawn in the
		// background; on the call's own stream that notice must go out
		// before the call's result closes the stream, or the client keeps
		// asking a question nobody waits for.
		time.Sleep(cancelGrace)
	}
	switch {
	case err != nil && ectx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		return outcomeTimeout, errorResult(fmt.Sprintf("The user did not answer the confirmation for %s within %s; it was not made.", id, c.timeout))
	case err != nil:
		return outcomeFailed, errorResult(fmt.Sprintf("%s was not called: the confirmation it needs could not be asked (%v). Nothing was changed.", id, clip(err.Error())))
	}
	return c.answer(id, res)
}

// answer turns the user's answer into an outcome: forward on accept only.
func (c *confirmer) answer(id string, res *mcp.ElicitResult) (string, *mcp.CallToolResult) {
	switch res.Action {
	case "accept":
		return outcomeAccepted, nil
	case "decline":
		return outcomeDeclined, errorResult(fmt.Sprintf("The user declined the call to %s; it was not made. Do not retry it unless they ask.", id))
	default: // "cancel", or anything a client invents
		return outcomeCancelled, errorResult(fmt.Sprintf("The user dismissed the confirmation for %s; it was not made.", id))
	}
}

// question is the confirmation shown to the user. It carries the
// arguments, clipped: the person deciding must see what would be deleted.
func question(id string, args json.RawMessage, why string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:            "form",
		Message:         fmt.Sprintf("Allow a call to %s? It is destructive (%s). Arguments: %s", id, why, clip(string(args))),
		RequestedSchema: &map[string]any{"type": "object", "properties": map[string]any{}},
	}
}

func clip(s string) string {
	const max = 500
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
}
