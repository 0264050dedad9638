package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
)

// The SDK decodes a call's structuredContent into an any, its numbers
// into float64s: an upstream's {"id":1234567890123456789} (a snowflake
// id) reached the caller as 1234567890123456800, and 9007199254740993 as
// ...992. A call's answer is kept as it is read, and the structuredContent
// it carries is passed on as the upstream wrote it.

// keptAnswer is the body of a call's POST, as read.
type keptAnswer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	sse bool // an event stream rather than one JSON-RPC message
}

type keptAnswerKey struct{}

// withKeptAnswer has the answer to the request made under ctx kept in k.
func withKeptAnswer(ctx context.Context, k *keptAnswer) context.Context {
	return context.WithValue(ctx, keptAnswerKey{}, k)
}

// keep has body's bytes copied into k as they are read. Its reads are
// bounded by the call's read limit already, which k's copy is held to.
func (k *keptAnswer) keep(body io.ReadCloser, sse bool) io.ReadCloser {
	k.mu.Lock()
	k.buf.Reset()
	k.sse = sse
	k.mu.Unlock()
	return &keptBody{ReadCloser: body, k: k}
}

type keptBody struct {
	io.ReadCloser
	k *keptAnswer
}

func (b *keptBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.k.mu.Lock()
	b.k.buf.Write(p[:n])
	b.k.mu.Unlock()
	return n, err
}

// structured is the structuredContent of the response kept, as the
// upstream wrote it, or nil. A call's stream carries one response (the
// call's own; a message with a method is the upstream's request or
// notice).
func (k *keptAnswer) structured() json.RawMessage {
	k.mu.Lock()
	defer k.mu.Unlock()
	msgs := [][]byte{k.buf.Bytes()}
	if k.sse {
		msgs = eventData(k.buf.Bytes())
	}
	for _, m := range msgs {
		var msg struct {
			Method json.RawMessage `json:"method"`
			Result *struct {
				Structured json.RawMessage `json:"structuredContent"`
			} `json:"result"`
		}
		if json.Unmarshal(m, &msg) == nil && msg.Method == nil && msg.Result != nil {
			if s := msg.Result.Structured; len(s) > 0 && string(s) != "null" {
				return bytes.Clone(s)
			}
			return nil
		}
	}
	return nil
}

// eventData is the data of each event of an event stream: its data lines
// joined by newlines, as the SSE specification reads them.
func eventData(stream []byte) [][]byte {
	var out [][]byte
	var data []byte
	have := false
	for line := range bytes.Lines(stream) {
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if have {
				out = append(out, data)
			}
			data, have = nil, false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if have {
			data = append(data, '\n')
		}
		data, have = append(data, value...), true
	}
	if have {
		out = append(out, data)
	}
	return out
}
