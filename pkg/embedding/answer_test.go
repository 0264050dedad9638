package embedding

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// b64 is vec as a provider spells it in base64.
func b64(vec ...float32) string {
	raw := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// slash is a float32 whose base64 has slashes ("////vw==").
var slash = math.Float32frombits(0xbfffffff)

// decodeAnswer reads body as an answer to n inputs.
func decodeAnswer(body string, n, want int) ([][]float32, error) {
	return decodeWith(body, n, want, false)
}

// decodeWith is decodeAnswer, reading every number with strconv one at a
// time when plain (answer.plain).
func decodeWith(body string, n, want int, plain bool) ([][]float32, error) {
	out := make([][]float32, n)
	a := &answer{n: n, want: want, plain: plain, put: func(i int, vec []float32) error {
		out[i] = slices.Clone(vec)
		return nil
	}}
	if err := a.decode(strings.NewReader(body)); err != nil {
		return nil, err
	}
	return out, nil
}

// sameReading fails t unless body reads alike with and without the fast
// paths: the same error, or the same vectors to the bit.
func sameReading(t *testing.T, body string, n int) {
	t.Helper()
	fast, err := decodeWith(body, n, 0, false)
	plain, plainErr := decodeWith(body, n, 0, true)
	if fmt.Sprint(err) != fmt.Sprint(plainErr) {
		t.Fatalf("%.200q: fast paths: %v; strconv one at a time: %v", body, err, plainErr)
	}
	for i := range fast {
		if len(fast[i]) != len(plain[i]) {
			t.Fatalf("%.200q: vector %d of %d numbers, read one at a time %d", body, i, len(fast[i]), len(plain[i]))
		}
		for j := range fast[i] {
			if math.Float32bits(fast[i][j]) != math.Float32bits(plain[i][j]) {
				t.Fatalf("%.200q: vector %d [%d] = %v, read one at a time %v", body, i, j, fast[i][j], plain[i][j])
			}
		}
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name string
		body string
		want int // Dimensions asked for
		vecs [][]float32
		err  string
	}{
		{name: "floats", body: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-1]},{"object":"embedding","index":1,"embedding":[1e-3,2]}],"model":"m","usage":{"prompt_tokens":3}}`,
			vecs: [][]float32{{0.5, -1}, {1e-3, 2}}},
		{name: "base64, any order, spaces", body: "{ \"model\": \"m\", \"data\" : [ {\"embedding\": \"" + b64(1, 2) + "\", \"index\": 1}, {\"index\":0,\"embedding\":\"" + b64(3, 4) + "\"} ] }",
			vecs: [][]float32{{3, 4}, {1, 2}}},
		{name: "escaped slashes", body: `{"data":[{"index":0,"embedding":"` + strings.ReplaceAll(b64(slash, 0.25, 7), "/", `\/`) + `"},{"index":1,"embedding":[1,2,3]}]}`,
			vecs: [][]float32{{slash, 0.25, 7}, {1, 2, 3}}},
		{name: "unknown values of every kind", body: `{"x":{"a":[1,{"b":null}],"c":true},"data":[{"index":0,"embedding":[1,0],"extra":"z\"q"},{"index":1,"embedding":[0,1],"n":-2.5e3}],"y":false}`,
			vecs: [][]float32{{1, 0}, {0, 1}}},
		{name: "truncated to dimensions", body: `{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[4,5,6]}]}`, want: 2,
			vecs: [][]float32{{1, 2}, {4, 5}}},
		{name: "narrower than dimensions", body: `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[4]}]}`, want: 2, err: "dimension 1, want 2"},
		{name: "missing one", body: `{"data":[{"index":0,"embedding":[1]}]}`, err: "1 vectors for 2 inputs"},
		{name: "repeated", body: `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, err: "repeated"},
		{name: "out of range", body: `{"data":[{"index":2,"embedding":[1]}]}`, err: "out of range"},
		{name: "fractional index", body: `{"data":[{"index":0.5,"embedding":[1]}]}`, err: "whole"},
		{name: "zero vector", body: `{"data":[{"index":0,"embedding":[0,0]},{"index":1,"embedding":[1,0]}]}`, err: "zero"},
		{name: "not finite", body: `{"data":[{"index":0,"embedding":[1e39,0]},{"index":1,"embedding":[1,0]}]}`, err: "not a number"},
		{name: "bad base64", body: `{"data":[{"index":0,"embedding":"AAA"}]}`, err: "float32s"},
		{name: "no data", body: `{"error":{"message":"nope"}}`, err: "0 vectors"},
		{name: "null data", body: `{"data":null}`, err: "not an array"},
		{name: "cut", body: `{"data":[{"index":0,"embedding":[1,2`, err: "ends early"},
		{name: "deep", body: `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, err: "nested"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeAnswer(tt.body, 2, tt.want)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrBadResponse) {
					t.Fatalf("err = %v, want ErrBadResponse saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if !slices.Equal(got[i], tt.vecs[i]) {
					t.Errorf("vector %d = %v, want %v", i, got[i], tt.vecs[i])
				}
			}
		})
	}
}

// TestBase64Strings covers base64 vectors as the decoder reads them: from
// its buffer when they can be, put together across reads otherwise.
func TestBase64Strings(t *testing.T) {
	const limit = (MaxDimensions*4 + 2) / 3 * 4
	widest := make([]float32, MaxDimensions)
	for i := range widest {
		widest[i] = slash
	}
	escaped := strings.ReplaceAll(b64(widest...), "/", `\/`) // longer than the 64 KiB buffer
	if len(escaped) <= 64<<10 {
		t.Fatalf("escaped vector of %d bytes fits the buffer", len(escaped))
	}
	tests := []struct {
		name string
		str  string // the vector's string, between its quotes
		want []float32
		err  error
	}{
		{name: "plain", str: b64(1, 2, 3), want: []float32{1, 2, 3}},
		{name: "widest, every slash escaped", str: escaped, want: widest},
		{name: "widest, as sent", str: b64(widest...), want: widest},
		{name: "one too many", str: strings.Repeat("A", limit+4), err: ErrAnswerTooLarge},
		{name: "one too many, escaped", str: `\/` + strings.Repeat("A", limit+3), err: ErrAnswerTooLarge},
		{name: "an escaped quote", str: `AAAA\"AAA`, err: ErrBadResponse},
		{name: "an escaped backslash", str: `AAAA\\AAA`, err: ErrBadResponse},
		{name: "a backslash last", str: `AAAAAAA\`, err: ErrBadResponse},
		{name: "other escape", str: `AAAA\nAAA`, err: ErrBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := firstVector(t, `"`+tt.str+`"`, tt.err)
			if !ok {
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("vector of %d, want %d: %v...", len(got), len(tt.want), got[:min(4, len(got))])
			}
		})
	}
}

// firstVector decodes an answer whose first vector is embedding (as
// written in JSON) and whose second is [1]: that first vector, and true;
// or, when wantErr is not nil, fails t unless the answer is refused with
// it, and returns false.
func firstVector(t *testing.T, embedding string, wantErr error) ([]float32, bool) {
	t.Helper()
	got, err := decodeAnswer(`{"data":[{"index":0,"embedding":`+embedding+`},{"index":1,"embedding":[1]}]}`, 2, 0)
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("err = %v, want %v", err, wantErr)
		}
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return got[0], true
}

// TestFloatVectors covers vectors of floats as the decoder reads them:
// many at a time from its buffer in the common spelling, one at a time
// in any other, and across the buffer's end (a vector at its widest is
// longer than the buffer). Each is read as encoding/json reads it, and
// as strconv one number at a time does, errors included.
func TestFloatVectors(t *testing.T) {
	spell := func(sep string, nums ...string) string { return "[" + strings.Join(nums, sep) + "]" }
	many := func(n int, each func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = each(i)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(5, 6))
	short := many(MaxDimensions, func(int) string { return strconv.FormatFloat(float64(rng.Float32()*2-1), 'g', -1, 32) })
	long := many(MaxDimensions, func(int) string { return strconv.FormatFloat(rng.Float64()*2-1, 'g', -1, 64) })
	mixed := many(3000, func(i int) string {
		return [...]string{"-0", "1e-3", "2.5E+3", "0.10000000149011612", "16777217", "-1.5e-30", "7", "1.17549435e-38"}[i%8]
	})
	tests := []struct {
		name string
		vec  string
		err  error
	}{
		{name: "one", vec: "[0.5]"},
		{name: "empty", vec: "[]", err: ErrBadResponse}, // no width: refused as before
		{name: "widest, short numbers", vec: spell(",", short...)},
		{name: "widest, 17 digits", vec: spell(",", long...)},
		{name: "widest, spaces", vec: spell(" , ", short...)},
		{name: "spaces before the bracket", vec: "[1,2,3 ]"},
		{name: "newlines", vec: spell(",\n", mixed...)},
		{name: "other spellings", vec: spell(",", mixed...)},
		{name: "one too many", vec: spell(",", append(short, "1")...), err: ErrAnswerTooLarge},
		{name: "a number cut by the end", vec: "[1,2,3", err: ErrBadResponse},
		{name: "two points", vec: "[1,2.5.1]", err: ErrBadResponse},
		{name: "a plus", vec: "[1,+2]"}, // strconv reads it; so did the decoder before
		{name: "a long exponent", vec: "[1,1e12345]", err: ErrBadResponse},
		{name: "a comma last", vec: "[1,2,]", err: ErrBadResponse},
		{name: "garbage after", vec: "[1,2x]", err: ErrBadResponse},
		// Past 64 bytes a number is refused wherever it stands, even one
		// the fast path could read (its digits past the 15th dropped).
		{name: "a long number first", vec: "[" + strings.Repeat("1", 61) + "e-50,2]", err: ErrBadResponse},
		{name: "a long number later", vec: "[2," + strings.Repeat("1", 61) + "e-50]", err: ErrBadResponse},
		{name: "long leading zeros later", vec: "[2," + strings.Repeat("0", 70) + "1]", err: ErrBadResponse},
		{name: "64 bytes", vec: "[2," + strings.Repeat("1", 60) + "e-50]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameReading(t, `{"data":[{"index":0,"embedding":`+tt.vec+`},{"index":1,"embedding":[1]}]}`, 2)
			got, ok := firstVector(t, tt.vec, tt.err)
			if !ok {
				return
			}
			var want []float32
			if err := json.Unmarshal([]byte(strings.ReplaceAll(tt.vec, "+", "")), &want); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("vector of %d, want %d", len(got), len(want))
			}
		})
	}
}

// A provider that refuses encoding_format "base64" is asked once more, for
// floats, and for floats from then on.
func TestBase64Refused(t *testing.T) {
	var formats []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input          []string `json:"input"`
			EncodingFormat string   `json:"encoding_format"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		formats = append(formats, req.EncodingFormat)
		w.Header().Set("Content-Type", "application/json")
		if req.EncodingFormat == "base64" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write([]byte(`{"error":{"message":"encoding_format: unsupported value base64","type":"invalid_request_error"}}`))
			return
		}
		w.Write(vectors(req.Input, 4))
	}))
	t.Cleanup(srv.Close)
	o := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", sleep: noSleep})
	for range 2 {
		if _, err := o.Embed(t.Context(), []string{"a", "bb"}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"base64", "float", "float"}; !slices.Equal(formats, want) {
		t.Errorf("formats asked for = %v, want %v", formats, want)
	}
}

// FuzzAnswer decodes arbitrary answers to two inputs: the fast paths read
// each as strconv one number at a time does (the same vectors to the bit,
// or the same error); whatever the decoder accepts, encoding/json reads
// alike (for answers of floats); and every vector it puts is finite, not
// zero, and of the answer's width.
func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"data":[{"index":0,"embedding":[0.1,0.2]},{"index":1,"embedding":[0.3,0.4]}]}`,
		`{"data":[{"embedding":[1,2],"index":1,"x":[{}]},{"index":0,"embedding":[3,4]}],"usage":{"a":1}}`,
		`{"data":[{"index":0,"embedding":"` + b64(1, 2) + `"},{"index":1,"embedding":"` + b64(3, 4) + `"}]}`,
		`{"data":[{"index":0,"embedding":[1e-30,0]}]}`, `{"data":[]}`, `[]`, `{"data":[{"index":"0"}]}`,
		`{"data":[{"index":0,"embedding":"` + strings.ReplaceAll(b64(slash, 2), "/", `\/`) + `"},{"index":1,"embedding":[-2.5E-3,+1]}]}`,
		`{"data":[{"index":0,"embedding":"AAAA\"AAA"}]}`,
		`{"data":[{"index":0,"embedding":[0.1,-0.25,3e-2,4 ,5,0.123456789012345678]},{"index":1,"embedding":[1,2.5,1e12345]}]}`,
		`{"data":[{"index":1,"embedding":[1,2,3]},{"index":0,"embedding":[7,-0,1.5.2,]}]}`,
		`{"data":[{"index":0,"embedding":[2,` + strings.Repeat("1", 61) + `e-50]},{"index":1,"embedding":[1]}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		sameReading(t, body, 2)
		got, err := decodeAnswer(body, 2, 0)
		if err != nil {
			return
		}
		if len(got[0]) == 0 || len(got[1]) == 0 {
			t.Fatalf("accepted an empty vector from %q", body)
		}
		var ref struct {
			Data []struct {
				Index     int             `json:"index"`
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(body), &ref) != nil || len(ref.Data) != 2 {
			return // what encoding/json reads otherwise
		}
		for _, d := range ref.Data {
			want, ok := refVector(d.Embedding)
			if !ok || d.Index < 0 || d.Index > 1 || !slices.Equal(want, got[d.Index]) {
				t.Fatalf("%q: vector %d = %v, encoding/json and encoding/base64 read %v", body, d.Index, got[d.Index], want)
			}
		}
	})
}

// refVector is a vector as encoding/json reads it: floats, or a string of
// base64 little-endian float32s.
func refVector(raw json.RawMessage) ([]float32, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var floats []float32
		return floats, json.Unmarshal(raw, &floats) == nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil, false
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, true
}

// BenchmarkAnswer decodes one provider answer of 256 vectors of 1,536,
// as base64 (what the service asks for) and as floats (what a provider
// that ignores encoding_format sends): float32s written shortest, and
// float64s of 16 and 17 digits, as a server that computes in float64
// writes them.
func BenchmarkAnswer(b *testing.B) {
	const n, dim = 256, 1536
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = rng.Float32()*2 - 1
		}
		return v
	}
	for _, format := range []string{"base64", "floats", "float64s"} {
		var body strings.Builder
		body.WriteString(`{"object":"list","data":[`)
		for i := range n {
			if i > 0 {
				body.WriteByte(',')
			}
			var emb []byte
			switch format {
			case "base64":
				emb, _ = json.Marshal(b64(vec()...))
			case "floats":
				emb, _ = json.Marshal(vec())
			default:
				wide := make([]float64, dim)
				for j := range wide {
					wide[j] = rng.Float64()*2 - 1
				}
				emb, _ = json.Marshal(wide)
			}
			fmt.Fprintf(&body, `{"object":"embedding","index":%d,"embedding":%s}`, i, emb)
		}
		body.WriteString(`],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		text := body.String()
		b.Run(format, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			a := &answer{n: n, put: func(int, []float32) error { return nil }}
			for b.Loop() {
				a.got, a.seen = 0, nil
				if err := a.decode(strings.NewReader(text)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
