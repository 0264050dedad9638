package analysis

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"create_pull_request", []string{"create", "pull", "request"}},
		{"createPullRequest", []string{"create", "pull", "request"}},
		{"create-pull-request", []string{"create", "pull", "request"}},
		{"github.create.pull.request", []string{"github", "create", "pull", "request"}},
		{"HTTPServer", []string{"http", "server"}},
		{"getS3Object", []string{"get", "s3", "object"}},
		{"/v1/nutrition", []string{"v1", "nutrition"}},
		{"Transfermarkt search", []string{"transfermarkt", "search"}},
		{"Ünïcödé Wörds", []string{"ünïcödé", "wörds"}},
		{"", nil},
		{"  --  ", nil},
		// Chinese and Japanese have no spaces between words, and Korean
		// words carry particles: runs give overlapping pairs.
		{"发送消息到频道", []string{"发送", "送消", "消息", "息到", "到频", "频道"}},
		{"图", []string{"图"}},
		{"API文档 和 getS3Object", []string{"api", "文档", "和", "get", "s3", "object"}},
		{"ファイルをアップロード", []string{"ファ", "ァイ", "イル", "ルを", "をア", "アッ", "ップ", "プロ", "ロー", "ード"}},
		{"파일 공유 링크를", []string{"파일", "공유", "링크", "크를"}},
		{"東京々の Wörds，天気", []string{"東京", "京々", "々の", "wörds", "天気"}},
		{"在ＧｉｔＨｕｂ上创建ｉｓｓｕｅ２", []string{"在", "git", "hub", "上创", "创建", "issue2"}},
		{"ＨＴＴＰＳｅｒｖｅｒ", []string{"http", "server"}},
		// Combining marks belong to their letters: Devanagari's and Tamil's
		// vowel signs, an accent written apart; Thai has no spaces, so its
		// pairs are of letters with their marks.
		{"संदेश भेजें", []string{"संदेश", "भेजें"}},
		{"பதிவேற்று", []string{"பதிவேற்று"}},
		{"cafe\u0301 Bar", []string{"café", "bar"}},
		{"ส่งข้อความ", []string{"ส่ง", "งข้", "ข้อ", "อค", "คว", "วา", "าม"}},
		{"\u0301x", []string{"x"}},
		// Arabic's and Hebrew's vowel points, and tatweel, are optional.
		{"أرسِلْ رسالةً", []string{"أرسل", "رسالة"}},
		{"رســالة", []string{"رسالة"}},
		{"a ـــ b", []string{"a", "b"}},
		{"שָׁלוֹם עולם", []string{"שלום", "עולם"}},
		// Characters no reader sees split no word, and compatibility
		// characters read as what they stand for (NFKC), as do fullwidth
		// letters among fullwidth punctuation, which needs no copy.
		{"de\u00adlete a\u200b fi\u2060le", []string{"delete", "a", "file"}},
		{"\ufeffcreate\u200dIssue", []string{"create", "issue"}},
		{"send\U000e0041\U000e0042 mail\ufe0f", []string{"send", "mail"}},
		{"\ufb01le m\u00b2 \u2163", []string{"file", "m2", "iv"}},
		{"\uff8c\uff67\uff72\uff99", []string{"ファ", "ァイ", "イル"}},
		{"\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", []string{"\u0645\u06cc\u062e\u0648\u0627\u0647\u0645"}},
		{"文件，上传ｆｉｌｅ。", []string{"文件", "上传", "file"}},
		{"a\u200e\u202eb c", []string{"ab", "c"}},
		// A word that mixes ASCII letters with letters of another script
		// drawn as ASCII ones (Cyrillic с and і, Greek ρ) reads as the word
		// it looks like; a word of another script alone is left as it is,
		// and so is a Latin letter beyond ASCII (Turkish ı).
		{"\u0441reate \u0456ssue", []string{"create", "issue"}},
		{"d\u0435lete_rows", []string{"delete", "rows"}},
		{"\u03c1ay\u0440al", []string{"paypal"}},
		{"\u0421reatePullRequest", []string{"create", "pull", "request"}},
		{"deleteR\u043ews", []string{"delete", "rows"}},
		{"получитьUser", []string{"получить", "user"}},
		{"caf\u0435\u0301", []string{"café"}},
		{"kap\u0131n\u0131", []string{"kap\u0131n\u0131"}},
		{"Создать задачу сор", []string{"создать", "задачу", "сор"}},
		{"αβγ café", []string{"αβγ", "café"}},
		{"文件ｃ\u0430t", []string{"文件", "cat"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Words(tt.in)); diff != "" {
			t.Errorf("Words(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestStem(t *testing.T) {
	tests := map[string]string{
		"files": "file", "branches": "branch", "stopped": "stop", "running": "run", "filled": "fill",
		"status": "status", "analysis": "analysis", "class": "class", "gas": "gas", "bus": "bus",
		"thing": "thing", "need": "need", "using": "using", "day": "day", "days": "day", "note": "note",
		"Movies": "Movies", "日本": "日本", "v2": "v2",
		// Snowball's exceptions: not inflections, whatever their endings.
		"news": "news", "bias": "bias", "outing": "outing", "herring": "herring", "proceed": "proceed",
	}
	for in, want := range tests {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStemAgrees checks the property the stemmer exists for: every
// inflection of a word gets the word's own stem.
func TestStemAgrees(t *testing.T) {
	families := [][]string{
		{"movie", "movies"},
		{"schedule", "schedules", "scheduled", "scheduling"},
		{"close", "closes", "closed", "closing"},
		{"specify", "specifies", "specified"},
		{"repository", "repositories"},
		{"copy", "copies", "copied", "copying"},
		{"create", "creates", "created", "creating"},
		{"base", "based"},
		{"hope", "hoped", "hoping"},
		{"stop", "stops", "stopped", "stopping"},
		{"message", "messages"},
		{"issue", "issues", "issued"},
		{"cookie", "cookies"},
		{"agree", "agreed"},
		{"control", "controlled", "controlling"},
		{"sky", "skies"},
		{"die", "dies", "died", "dying"},
		{"lie", "lies", "lied", "lying"},
	}
	for _, f := range families {
		want := Stem(f[0])
		for _, w := range f[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, but Stem(%q) = %q", w, got, f[0], want)
			}
		}
	}
}

func TestTerms(t *testing.T) {
	got := English.Terms("Can you list the open issues in my repository?")
	want := []string{"list", "open", "issu", "repositori"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Terms mismatch (-want +got):\n%s", diff)
	}
}

// FuzzASCIIWords checks the ASCII fast path against the general one, which
// must give the same tokens for any ASCII text, typed in fullwidth forms
// too.
func FuzzASCIIWords(f *testing.F) {
	for _, s := range []string{"createPullRequest", "HTTPServer v2 getS3Object", "list_pull-requests.now", "ABC", "aB1cD", "x", "", "  --  ", "Re-run the FAILED jobs; e.g. CI"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !IsASCII(s) {
			return
		}
		var fast, slow []string
		appendASCIIWords(s, func(w string) { fast = append(fast, w) })
		appendRuneWords(s, func(w string) { slow = append(slow, w) })
		if !slices.Equal(fast, slow) {
			t.Fatalf("%q: ASCII path %q, general path %q", s, fast, slow)
		}
		// Typed in fullwidth forms, the same text gives the same words.
		wide := []rune(s)
		for i, r := range wide {
			if 0x21 <= r && r <= 0x7E {
				wide[i] = r + 0xFEE0
			}
		}
		if got := Words(string(wide)); !slices.Equal(got, fast) {
			t.Fatalf("%q in fullwidth forms: %q, want %q", s, got, fast)
		}
	})
}

// FuzzWords: every token is non-empty UTF-8, and a token with a character
// of a script written without spaces is one or two of them (each with its
// marks) and nothing else.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"发送消息到频道", "API文档 和 getS3Object", "ファイルをアップロード", "파일 공유 링크를", "x图y", "ー々", "\xff发", "ส่งข้อความ", "संदेश भेजें", "cafe\u0301", "ــ", "شَ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range Words(s) {
			if w == "" || !utf8.ValidString(w) {
				t.Fatalf("%q: token %q", s, w)
			}
			cjk, bases := 0, 0
			for _, r := range w {
				if unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me) {
					continue
				}
				bases++
				if unspaced(r) {
					cjk++
				}
			}
			if cjk > 0 && (cjk != bases || bases > 2) {
				t.Fatalf("%q: token %q mixes scripts or is longer than a pair", s, w)
			}
		}
		// Text reads as its NFKC form, and the same with a character no
		// reader sees between any two of its characters.
		want := Words(s)
		if got := Words(norm.NFKC.String(s)); !slices.Equal(got, want) {
			t.Fatalf("%q: %q, but its NFKC form %q", s, want, got)
		}
		// A word read with a letter drawn as the ASCII one it looks like
		// reads as that word.
		if IsASCII(s) {
			b := []byte(s)
			var mixed strings.Builder
			for i, c := range b {
				if c == 'e' && i > 0 && (isLower(b[i-1]) || isUpper(b[i-1])) {
					mixed.WriteString("\u0435")
				} else {
					mixed.WriteByte(c)
				}
			}
			if got := Words(mixed.String()); !slices.Equal(got, want) {
				t.Fatalf("%q: %q, but with Cyrillic е %q", s, want, got)
			}
		}
		for i := 0; i < len(s); i += 1 + len(s)/32 { // at most 32 places
			if got := Words(s[:i] + "\u00ad" + s[i:]); utf8.RuneStart(s[i]) && !slices.Equal(got, want) {
				t.Fatalf("%q: %q, but with a soft hyphen at %d %q", s, want, i, got)
			}
		}
	})
}
