package embedding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/sync/errgroup"

	"github.com/toolsearch/toolsearch/pkg/internal/endpoint"
	"github.com/toolsearch/toolsearch/pkg/internal/pause"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Defaults for OpenAIConfig's zero values.
const (
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	DefaultOpenAIModel   = "text-embedding-3-small"
	DefaultBatchSize     = 2048 // the OpenAI API's limit on inputs per request
	DefaultTimeout       = 30 * time.Second
	DefaultMaxRetries    = 3
	DefaultConcurrency   = 4
)

// OpenAIConfig configures an OpenAI-compatible embeddings client. The zero
// value of each field means its documented default.
type OpenAIConfig struct {
	BaseURL string // DefaultOpenAIBaseURL when empty
	APIKey  string // sent as a bearer token (api-key header for Azure); never logged or reported
	Model   string // DefaultOpenAIModel when empty; the deployment name for Azure
	// APIType is "openai" (the default: OpenAI and every server that copies
	// its API) or "azure" (Azure OpenAI's deployment URLs and api-key header).
	APIType     string
	APIVersion  string        // Azure's api-version; go-openai's default when empty
	Dimensions  int           // 0: the model's own; else requested, and enforced client-side
	Timeout     time.Duration // per HTTP request; DefaultTimeout when 0
	MaxRetries  int           // retries after the first attempt on 429, 5xx and network errors; DefaultMaxRetries when 0, none when negative
	BatchSize   int           // inputs per request; DefaultBatchSize when 0
	Concurrency int           // requests in flight during a large Embed; DefaultConcurrency when 0
	HTTPClient  *http.Client  // http.DefaultClient's transport when nil
	// sleep waits between retries; tests replace it.
	sleep func(context.Context, time.Duration) error
}

// OpenAI embeds texts through any OpenAI-compatible /v1/embeddings endpoint
// (OpenAI, Azure OpenAI, Ollama, vLLM, LocalAI). It is safe for concurrent
// use.
type OpenAI struct {
	cfg    OpenAIConfig
	client *openai.Client
	// secrets are what errors must not show: the key, and the base URL's
	// user info and query (a token as the user name is sent, and quoted
	// by net/http's errors, as it is).
	secrets []string
	// floats is set once the provider refused encoding_format "base64":
	// from then on it is asked for JSON floats.
	floats atomic.Bool
}

// CheckBaseURL reports what keeps url from being a base URL for NewOpenAI,
// which appends the API's paths to it (empty is the default, and fine).
func CheckBaseURL(url string) error {
	if url == "" {
		return nil
	}
	return endpoint.Check(url, true)
}

// NewOpenAI returns a client for cfg.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = DefaultOpenAIModel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > DefaultBatchSize {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.sleep == nil {
		cfg.sleep = pause.For
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	if cfg.APIType == "azure" {
		oc = openai.DefaultAzureConfig(cfg.APIKey, cfg.BaseURL)
		oc.AzureModelMapperFunc = func(model string) string { return model } // -embedding-model is the deployment
		if cfg.APIVersion != "" {
			oc.APIVersion = cfg.APIVersion
		}
	}
	// A copy of the caller's client whose transport notes Retry-After, which
	// go-openai's errors do not carry, and caps each answer's size, and
	// whose redirects stay within the provider's origin.
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = guardTransport{base: base}
	if hc.CheckRedirect == nil {
		// The key and every tool text and query go only to the provider's
		// own origin.
		hc.CheckRedirect = endpoint.SameOrigin
	}
	oc.HTTPClient = hc
	return &OpenAI{cfg: cfg, client: openai.NewClientWithConfig(oc), secrets: append(redact.URLSecrets(cfg.BaseURL), cfg.APIKey)}
}

// Info describes the embedder; BaseURL is stripped of any credentials.
func (o *OpenAI) Info() Info {
	provider := "openai"
	if o.cfg.APIType == "azure" {
		provider = "azure"
	}
	return Info{Provider: provider, Model: o.cfg.Model, Dimensions: o.cfg.Dimensions, BaseURL: redact.URL(o.cfg.BaseURL)}
}

// Embed returns one vector per text, in order. Texts are sent in batches of
// at most BatchSize inputs, Concurrency batches at a time; a catalog that
// fits one batch costs exactly one request. A short, mis-sized or non-finite
// answer is an error wrapping ErrBadResponse, never a partial result.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	out := make([][]float32, len(texts))
	err := o.EmbedInto(ctx, texts, func(i int, vec []float32) { out[i] = slices.Clone(vec) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EmbedInto is Embed handing each vector to put as its answer is read,
// instead of returning them: put copies vec (valid only during the call)
// where it belongs, so a build writes the provider's answers straight into
// its index. put may be called from several goroutines at once, and more
// than once for an input whose batch was retried; when EmbedInto fails,
// what put was given must be dropped. Every vector put is finite, not
// (near) zero, and of one width. Once put(i, ...) is called the caller
// may let go of texts[i]: it is not read again.
func (o *OpenAI) EmbedInto(ctx context.Context, texts []string, put func(i int, vec []float32)) error {
	if len(texts) == 0 {
		return nil
	}
	var width atomic.Int64
	sized := &inputCheck{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.cfg.Concurrency)
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		end := min(start+o.cfg.BatchSize, len(texts))
		g.Go(func() error {
			// The batch's own copy: a retry sends it again after put has
			// been given some of its vectors, and the caller may have let
			// go of those inputs.
			batch := slices.Clone(texts[start:end])
			return o.embedSplit(gctx, batch, start, sized, func(i int, vec []float32) error {
				// One width over all batches, the first answer's.
				if w := int64(len(vec)); !width.CompareAndSwap(0, w) && width.Load() != w {
					return errBadAnswer("vectors of dimension %d and %d", width.Load(), w)
				}
				put(start+i, vec)
				return nil
			})
		})
	}
	return g.Wait()
}

// embedSplit is embedBatch, except that a batch the server refuses for its
// inputs (413: TEI's --payload-limit, a proxy's body limit; a 400 or 422
// when the provider embeds a short text all the same, inputCheck: an
// input over the model's length, a batch over the server's count) is sent
// again as two halves, down to single inputs: at most 2n-1 requests for n
// texts. A single input refused so is cut (embedCut). A catalog of long
// descriptions still indexes against a server whose limit is in bytes or
// tokens rather than inputs, and one tool's text over the model's length
// (TEI's small models take 512 tokens, OpenAI's 8,192; an upstream's tool
// is untrusted) no longer fails the whole build.
// texts[0] is the caller's input number first, for WithCutNotice.
func (o *OpenAI) embedSplit(ctx context.Context, texts []string, first int, sized *inputCheck, put func(i int, vec []float32) error) error {
	err := o.embedBatch(ctx, texts, put)
	if err == nil || !sized.refused(ctx, o, err) {
		return err
	}
	if len(texts) == 1 {
		return o.embedCut(ctx, texts[0], first, err, put)
	}
	half := len(texts) / 2
	if err := o.embedSplit(ctx, texts[:half], first, sized, put); err != nil {
		return err
	}
	return o.embedSplit(ctx, texts[half:], first+half, sized, func(i int, vec []float32) error { return put(half+i, vec) })
}

// embedCut embeds text, which the provider refused (err) for its size,
// cut to its first maxCut bytes, then half as many each time it is
// refused again, down to minCut: a text's head is its name, title and
// description, what a search matches most. (8 KiB holds at most 8,192
// tokens for a byte-level tokenizer, OpenAI's limit.)
func (o *OpenAI) embedCut(ctx context.Context, text string, input int, err error, put func(i int, vec []float32) error) error {
	for n := min(len(text)/2, maxCut); n >= minCut; n /= 2 {
		cut := redact.Clip(text, n, "")
		if err = o.embedBatch(ctx, []string{cut}, put); err == nil || !sizeRefusal(err) {
			if note, ok := ctx.Value(cutNoticeKey{}).(func(int, int)); ok && err == nil {
				note(input, len(cut))
			}
			return err
		}
	}
	return err
}

type cutNoticeKey struct{}

// WithCutNotice has note told of each input EmbedInto (or Embed) under
// ctx embedded cut, by its number and the bytes of it kept: the provider
// refused it whole as over its model's length.
func WithCutNotice(ctx context.Context, note func(input, kept int)) context.Context {
	return context.WithValue(ctx, cutNoticeKey{}, note)
}

// The first cut of a text refused for its size, and the shortest.
const (
	maxCut = 8 << 10
	minCut = 256
)

// sizeRefusal reports whether err is an answer that can refuse inputs for
// their size: 413, or a 400 or 422.
func sizeRefusal(err error) bool {
	switch httpStatus(err) {
	case http.StatusRequestEntityTooLarge, http.StatusBadRequest, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// inputCheck tells, once for an EmbedInto, whether a 400 or 422 refused
// the inputs (the provider embeds a short text) or the request itself (a
// wrong model, a parameter it does not take: splitting would only repeat
// it, 2n-1 times).
type inputCheck struct {
	once sync.Once
	ok   bool // the provider embeds a short text
}

// refused reports whether err refused a request for its inputs.
func (c *inputCheck) refused(ctx context.Context, o *OpenAI, err error) bool {
	switch {
	case httpStatus(err) == http.StatusRequestEntityTooLarge:
		return true
	case !sizeRefusal(err), batchRefusal(err):
		return false // a batch size is the operator's to set, and embedBatch says so
	}
	c.once.Do(func() {
		c.ok = o.embedBatch(ctx, []string{"a short text"}, func(int, []float32) error { return nil }) == nil
	})
	return c.ok
}

func (o *OpenAI) embedBatch(ctx context.Context, texts []string, put func(i int, vec []float32) error) error {
	var lastErr error
	for attempt := 0; ; attempt++ {
		hint := retryHint{maxBody: maxAnswerBytes(len(texts), o.cfg.Dimensions)}
		floats := o.floats.Load()
		err := o.request(context.WithValue(ctx, retryHintKey{}, &hint), texts, floats, put)
		if err == nil {
			return nil
		}
		if !floats && formatRefused(err) {
			// A provider that does not know encoding_format "base64" is
			// asked for floats, now and from now on; this try is free.
			o.floats.Store(true)
			attempt--
			continue
		}
		lastErr = o.scrub(err)
		if attempt >= o.cfg.MaxRetries || !retryable(err) || ctx.Err() != nil {
			break
		}
		// The provider's Retry-After, when it sent one, else jittered
		// backoff. A wait the caller cannot afford (a query with less time
		// left, or more than MaxRetryAfter) is not started: failing now lets
		// the caller fall back at once instead of at its deadline.
		wait := backoff(attempt)
		if hint.after > 0 {
			wait = hint.after
			deadline, ok := ctx.Deadline()
			if hint.after > MaxRetryAfter || ok && time.Until(deadline) < hint.after {
				lastErr = fmt.Errorf("%w (the provider asked to retry after %s)", lastErr, hint.after.Round(time.Millisecond))
				break
			}
		}
		if err := o.cfg.sleep(ctx, wait); err != nil {
			break
		}
	}
	err := fmt.Errorf("embeddings request to %s (%d inputs): %w", redact.URL(o.cfg.BaseURL), len(texts), lastErr)
	if len(texts) > 1 && batchRefusal(lastErr) {
		err = fmt.Errorf("%w (-embedding-batch-size or embedding.batch_size sets the inputs per request, now %d)", err, o.cfg.BatchSize)
	}
	return err
}

// batchRefusal reports whether err is a 4xx that names the batch: servers
// state their batch limits in words, each its own way.
func batchRefusal(err error) bool {
	status := httpStatus(err)
	return status >= 400 && status < 500 && strings.Contains(strings.ToLower(err.Error()), "batch")
}

// formatRefused reports whether a provider refused a request for what it
// asked of the answer's format: a 400 or 422 that names the encoding.
// Servers that do not know the field mostly ignore it and send floats,
// which the answer's decoder reads as well.
func formatRefused(err error) bool {
	status := httpStatus(err)
	msg := strings.ToLower(err.Error())
	return (status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) &&
		(strings.Contains(msg, "encoding") || strings.Contains(msg, "base64"))
}

// MaxRetryAfter is the longest Retry-After an embeddings request waits
// for; a provider asking for longer fails this attempt, and the service's
// own retries (with keyword ranking meanwhile) take over.
const MaxRetryAfter = 30 * time.Second

type retryHintKey struct{}

// retryHint carries one attempt's limits in (the largest answer it may
// read) and its Retry-After out, through guardTransport.
type retryHint struct {
	maxBody int64
	after   time.Duration
}

// guardTransport caps each answer's body at the attempt's maxBody (an
// error answer at maxErrorBody), so a provider cannot make the service
// hold more than the vectors it asked for, and notes the Retry-After of a
// 429 or 503 answer.
type guardTransport struct{ base http.RoundTripper }

// maxErrorBody bounds an error answer: its text reaches errors and status.
const maxErrorBody = 64 << 10

func (t guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		// Embedding a text twice is harmless: one that meets a closed
		// pooled connection (uvicorn, under LiteLLM and vLLM, closes idle
		// ones at 5 s) is sent again at once, without the retry's wait.
		req = req.Clone(req.Context())
		endpoint.Repeatable(req.Header)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	h, _ := req.Context().Value(retryHintKey{}).(*retryHint)
	if h == nil {
		return resp, nil
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		h.after = endpoint.RetryAfter(resp.Header, time.Now())
	}
	limit := h.maxBody
	if resp.StatusCode >= 300 {
		limit = maxErrorBody
	}
	resp.Body = &cappedBody{rc: resp.Body, left: limit, limit: limit}
	if ans, ok := req.Context().Value(answerKey{}).(*answer); ok && resp.StatusCode == http.StatusOK {
		// The vectors are read here, as the body arrives; go-openai reads
		// an answer with none.
		ans.err, ans.decoded = ans.decode(resp.Body), true
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(`{"object":"list","data":[]}`))
	}
	return resp, nil
}

type answerKey struct{}

// ErrAnswerTooLarge is returned when a provider's answer is larger than
// the vectors requested can be.
var ErrAnswerTooLarge = errors.New("embeddings answer larger than the request allows")

// cappedBody reads at most limit bytes, then fails instead of reading on.
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("%w (over %d bytes)", ErrAnswerTooLarge, b.limit)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// maxAnswerBytes is the largest answer n vectors can make: each value at
// most 26 bytes of JSON ("-1.2345678901234567e-123,"), plus each item's
// framing, plus the envelope. width is the expected width, or 0 when the
// model's own is not known yet (then up to MaxDimensions).
func maxAnswerBytes(n, width int) int64 {
	if width <= 0 {
		width = MaxDimensions
	}
	return int64(n)*(int64(width)*26+256) + 64<<10
}

// MaxDimensions is the widest vector an embeddings answer may hold.
const MaxDimensions = 8192

func (o *OpenAI) request(ctx context.Context, texts []string, floats bool, put func(i int, vec []float32) error) error {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	format := openai.EmbeddingEncodingFormatBase64
	if floats {
		format = openai.EmbeddingEncodingFormatFloat
	}
	ans := &answer{n: len(texts), want: o.cfg.Dimensions, put: put}
	// go-openai sends the request and reads an error answer; guardTransport
	// hands a successful answer's body to ans instead (see answer).
	_, err := o.client.CreateEmbeddings(context.WithValue(ctx, answerKey{}, ans), openai.EmbeddingRequestStrings{
		Input:          texts,
		Model:          openai.EmbeddingModel(o.cfg.Model),
		Dimensions:     o.cfg.Dimensions,
		EncodingFormat: format,
	})
	if err != nil {
		return err
	}
	if !ans.decoded {
		return errBadAnswer("no answer was read")
	}
	return ans.err
}

// minNorm is the smallest L2 length accepted from a provider; real
// embeddings are unit length or close to it.
const minNorm = 1e-6

// retryable reports whether a failed request may succeed if sent again:
// rate limits, server errors and network failures, but not a bad answer or
// a client error such as a wrong key.
func retryable(err error) bool {
	switch Reason(err) {
	case "rate_limited", "server_error", "network", "timeout":
		return true
	}
	return false
}

// backoff is capped exponential with full jitter: 0-200ms, 0-400ms, ...
func backoff(attempt int) time.Duration {
	ceiling := min(200*time.Millisecond<<attempt, 5*time.Second)
	return time.Duration(rand.Int64N(int64(ceiling)) + 1)
}

// scrub removes the configured key and the base URL's credentials, and
// anything shaped like a key, from an error's text, keeping its chain for
// errors.Is.
func (o *OpenAI) scrub(err error) error {
	msg := redact.Text(err.Error(), o.secrets...)
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

// Reasons are the classes Reason returns, for metrics to register up front.
var Reasons = []string{"timeout", "rate_limited", "server_error", "client_error", "bad_response", "network", "canceled", "other"}

// Reason classifies an embedding failure for metrics and diagnostics: one
// of Reasons.
func Reason(err error) string {
	var netErr net.Error
	status := httpStatus(err)
	switch {
	case errors.Is(err, ErrBadResponse), errors.Is(err, ErrAnswerTooLarge):
		return "bad_response"
	case errors.Is(err, endpoint.ErrOtherOrigin), errors.Is(err, endpoint.ErrMethodChange):
		// A redirect refused: the base URL is wrong, as for a 404,
		// and sending again changes nothing. Go's client error for it
		// is a net.Error, read below as the network failing.
		return "client_error"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case status == http.StatusTooManyRequests:
		return "rate_limited"
	case status >= 500:
		return "server_error"
	case status >= 400:
		return "client_error"
	case errors.As(err, &netErr):
		if netErr.Timeout() {
			return "timeout"
		}
		return "network"
	}
	return "other"
}

// httpStatus is the HTTP status of a provider's error answer, whichever
// shape its body had (go-openai parses OpenAI's and Azure's error objects
// into an APIError, anything else, such as TEI's and vLLM's, into a
// RequestError); 0 when there was no answer.
func httpStatus(err error) int {
	// A RequestError first: when a body's "error" is not an object (TEI),
	// go-openai wraps an empty APIError, without a status, inside it.
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	return 0
}
