// The console, driven in headless Chromium against the real binary: the
// page loads under its CSP without errors, reads status, runs a search and
// shows why the first tool matched, switches provider formats, lists the
// catalog with a lint finding, diffs two real eval reports with the
// regression highlighted, and shows a key none of the tools it cannot see,
// in any view. With CONSOLE_SCREENSHOTS=DIR it also writes the docs'
// screenshots (make screenshots).
package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

var wholeNumber73 = regexp.MustCompile(`\b73\b`)

const (
	opsKey     = "ops-key-for-the-console-test"
	supportKey = "support-key-for-the-console-test"
	adminToken = "admin-token-for-the-console-test"
)

// keys: ops sees everything; support sees two servers, as in docs/api.md's
// example, and must never see a github tool.
const keysYAML = `
auth:
  keys:
    - {name: ops, key_env: CONSOLE_OPS_KEY}
    - {name: support, key_env: CONSOLE_SUPPORT_KEY, visible_servers: [slack, jira]}
learning:
  refresh: 1s
`

func TestConsole(t *testing.T) {
	chrome, root, dir, bin := prepare(t)

	// Two real reports: the default ranking, and keyword ranking alone, which
	// loses some of the project's own cases: the regressions to highlight.
	base, now := filepath.Join(dir, "baseline.json"), filepath.Join(dir, "report.json")
	run(t, root, nil, bin, "eval", "-cases", "evals/cases.jsonl", "-k", "5", "-format", "json", "-out", base)
	run(t, root, nil, bin, "eval", "-cases", "evals/cases.jsonl", "-k", "5", "-mode", "keyword", "-format", "json", "-out", now)

	defaults, err := os.ReadFile(filepath.Join(root, "pkg/config/default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, append(defaults, keysYAML...), 0o600); err != nil {
		t.Fatal(err)
	}
	url := serve(t, bin, []string{"TOOLSEARCH_CONFIG=" + cfg, "TOOLSEARCH_DRAIN_DELAY=0s", "TOOLSEARCH_LEARNING_PATH=" + filepath.Join(dir, "learned.db"),
		"TOOLSEARCH_ADMIN_TOKEN=" + adminToken, "CONSOLE_OPS_KEY=" + opsKey, "CONSOLE_SUPPORT_KEY=" + supportKey})

	ctx, cancel := browser(t, chrome)
	defer cancel()
	problems := watch(ctx)
	shots := os.Getenv("CONSOLE_SCREENSHOTS")

	steps := []struct {
		name string
		do   func(t *testing.T, ctx context.Context)
	}{
		{"the root redirects to the console and status reads ready", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible(css("#status-state")))
			if loc := get(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/console/#status") {
				t.Errorf("location %q, want the console's status view", loc)
			}
			if state := text(t, ctx, "#status-state"); !strings.Contains(state, "ready") {
				t.Errorf("status says %q, want ready", state)
			}
		}},
		{"every control has a label", func(t *testing.T, ctx context.Context) {
			unlabelled := eval[[]string](t, ctx, `[...document.querySelectorAll('input,select,textarea')]
				.filter(e => !e.labels || e.labels.length === 0).map(e => e.id || e.name)`)
			if len(unlabelled) > 0 {
				t.Errorf("controls without a label: %v", unlabelled)
			}
		}},
		{"the admin token shows full status and enables rebuild", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.SendKeys(css("#api-key"), opsKey), chromedp.SendKeys(css("#admin-token"), adminToken),
				chromedp.Click(css("#keys button[type=submit]")),
				chromedp.WaitVisible(css("#status-visible")),
				until(`document.getElementById('status-body').textContent.includes('hashed-tfidf-v6')`))
			body := text(t, ctx, "#status-body")
			for _, want := range []string{"embedded:default", "local", "hashed-tfidf-v6", "full"} {
				if !strings.Contains(body, want) {
					t.Errorf("status view lacks %q:\n%s", want, body)
				}
			}
			if eval[bool](t, ctx, `document.getElementById('rebuild').disabled`) {
				t.Error("rebuild is disabled with the admin token set")
			}
			stored := eval[string](t, ctx, `sessionStorage.getItem('toolsearch.key')`)
			if loc := get(t, ctx, chromedp.Location()); stored != opsKey || strings.Contains(loc, opsKey) {
				t.Errorf("key in session storage %q, location %q: want it stored, and never in the URL", stored, loc)
			}
			do(t, ctx, chromedp.Click(css("#rebuild")),
				until(`document.getElementById('status-updated').textContent.startsWith('rebuilt')`))
			screenshot(t, ctx, shots, "status")
		}},
		{"arrow keys move between tabs", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.Focus(css("#tab-status")), chromedp.KeyEvent(kb.ArrowRight))
			if eval[bool](t, ctx, `document.getElementById('view-search').hidden`) {
				t.Error("ArrowRight on the status tab did not open the search view")
			}
		}},
		{"a search shows its first tool and why it matched", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.Navigate(url+"/console/#search"),
				chromedp.WaitVisible(css("#query")),
				chromedp.SendKeys(css("#query"), "merge the approved pull request"),
				chromedp.Click(css("#search-form button[type=submit]")),
				chromedp.WaitVisible(css("#results tbody tr")))
			if first := text(t, ctx, "#results tbody tr:first-child .name"); first != "merge_pull_request" {
				t.Errorf("first result %q, want merge_pull_request", first)
			}
			why := text(t, ctx, "#results tbody tr:first-child .explain")
			for _, want := range []string{"merg", "name", "semantic #", "keyword #"} {
				if !strings.Contains(why, want) {
					t.Errorf("explanation %q lacks %q", why, want)
				}
			}
		}},
		{"show as switches provider formats", func(t *testing.T, ctx context.Context) {
			for _, c := range []struct{ format, want string }{
				{"openai", `"type": "function"`}, {"openai_responses", `"strict": false`}, {"anthropic", `"input_schema"`}, {"gemini", `"parameters"`}, {"mcp", `"inputSchema"`},
			} {
				do(t, ctx, chromedp.Click(css(`input[name=format][value=`+c.format+`]`)),
					until(`document.getElementById('definitions').dataset.format === '`+c.format+`'`))
				defs := text(t, ctx, "#definitions")
				if !strings.Contains(defs, c.want) || !strings.Contains(defs, "merge_pull_request") {
					t.Errorf("%s definitions lack %s or the tool:\n%.300s", c.format, c.want, defs)
				}
			}
			do(t, ctx, chromedp.Click(css("#copy-defs")), until(`document.getElementById('copy-state').textContent !== ''`))
			screenshot(t, ctx, shots, "search")
		}},
		{"a conversation is searched as one", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.Click(css(`input[name=input][value=messages]`)),
				chromedp.SetValue(css("#query"), "user: The standup with the platform team is on Tuesday at 10am.\nassistant: Got it. Should I change anything?\nuser: push it back to Wednesday, same time"),
				chromedp.Evaluate[chromedp.Void](`document.getElementById('results').remove()`),
				chromedp.Click(css("#search-form button[type=submit]")),
				chromedp.WaitVisible(css("#results tbody tr")))
			// The newest turn alone ranks update_event fifth, under tools
			// that match "back"; the earlier turns lift it into the top two.
			top := text(t, ctx, "#results tbody tr:first-child .name") + " " + text(t, ctx, "#results tbody tr:nth-child(2) .name")
			do(t, ctx, chromedp.Click(css(`input[name=input][value=query]`)))
			if !strings.Contains(top, "update_event") {
				t.Errorf("conversation's first two results %q, want update_event among them", top)
			}
		}},
		{"the catalog shows a lint finding next to its tool", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.Click(css("#tab-catalog")),
				chromedp.WaitVisible(css(`[data-server="github"] summary`)),
				chromedp.Click(css(`[data-server="github"] summary`)),
				chromedp.WaitVisible(css(`[data-tool="github/create_issue"] .finding`)))
			if f := text(t, ctx, `[data-tool="github/create_issue"] .finding`); !strings.Contains(f, "param-description") {
				t.Errorf("create_issue's finding %q, want param-description", f)
			}
			do(t, ctx, chromedp.SendKeys(css("#catalog-filter"), "pull request"))
			if shown := eval[int](t, ctx, `document.querySelectorAll('#catalog-body .tool').length`); shown == 0 || shown > 10 {
				t.Errorf("the filter 'pull request' shows %d tools", shown)
			}
			do(t, ctx, input("#catalog-filter", ""), chromedp.Click(css("#catalog-problems")))
			screenshot(t, ctx, shots, "catalog")
			do(t, ctx, chromedp.Click(css("#catalog-problems")))
		}},
		{"the catalog shows what callers taught a tool, and the admin token forgets it", func(t *testing.T, ctx context.Context) {
			// Two keys, two sessions each, use slack/post_message after the
			// same search: past the thresholds (two callers, three sessions).
			for _, key := range []string{opsKey, supportKey, opsKey, supportKey} {
				teach(t, url, key, "announce the outage to everyone", "slack/post_message")
			}
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(getJSON(t, url+"/mcp/tool-search/learned?tool=slack/post_message", opsKey), "outag") {
				if time.Now().After(deadline) {
					t.Fatal("the index never took in what was taught")
				}
				time.Sleep(200 * time.Millisecond)
			}
			// The console reads the catalog once per key: a reload reads it anew.
			do(t, ctx, chromedp.Navigate(url+"/console/#catalog"), chromedp.Reload(),
				chromedp.WaitVisible(css(`[data-server="slack"] summary`)),
				chromedp.Click(css(`[data-server="slack"] summary`)),
				chromedp.WaitVisible(css(`[data-tool="slack/post_message"] .learned`)))
			if got := text(t, ctx, `[data-tool="slack/post_message"] .learned`); !strings.Contains(got, "searched as") || !strings.Contains(got, "outag") {
				t.Errorf("post_message's learned line %q, want its learned words", got)
			}
			screenshot(t, ctx, shots, "learned")
			do(t, ctx, chromedp.Click(css(`[data-tool="slack/post_message"] .forget-learned`)),
				until(`document.querySelector('[data-tool="slack/post_message"]') && !document.querySelector('[data-tool="slack/post_message"] .learned')`))
			if got := getJSON(t, url+"/mcp/tool-search/learned?tool=slack/post_message", opsKey); strings.Contains(got, "outag") {
				t.Errorf("after forget: %s", got)
			}
		}},
		{"an eval diff puts the regressed cases first", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.Click(css("#tab-evals")),
				chromedp.SetUploadFiles(css("#eval-report"), []string{now}),
				chromedp.SetUploadFiles(css("#eval-baseline"), []string{base}),
				chromedp.Click(css("#eval-form button[type=submit]")),
				chromedp.WaitVisible(css("#eval-diff tbody tr")))
			if class := eval[string](t, ctx, `document.querySelector('#eval-diff tbody tr').className`); class != "worse" {
				t.Errorf("first diff row is %q, want worse (%s)", class, text(t, ctx, "#eval-diff-summary"))
			}
			if m := text(t, ctx, "#eval-metrics"); !strings.Contains(m, "recall") || !strings.Contains(m, "hit@1") {
				t.Errorf("metrics table: %q", m)
			}
			if bars := eval[int](t, ctx, `document.querySelectorAll('#eval-body svg rect').length`); bars == 0 {
				t.Error("no chart drawn")
			}
			screenshot(t, ctx, shots, "evals")
		}},
		{"a bad report is refused, a report alone is shown", func(t *testing.T, ctx context.Context) {
			bad := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(bad, []byte(`{"not":"a report"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			do(t, ctx, chromedp.SetUploadFiles(css("#eval-report"), []string{bad}),
				chromedp.Click(css("#eval-form button[type=submit]")),
				chromedp.WaitVisible(css("#eval-error")))
			if msg := text(t, ctx, "#eval-error"); !strings.Contains(msg, "not a toolsearch eval report") {
				t.Errorf("error %q", msg)
			}
			// A report alone: its metrics, charts and misses, no diff.
			do(t, ctx, chromedp.SetUploadFiles(css("#eval-report"), []string{now}),
				chromedp.Evaluate[chromedp.Void](`document.getElementById('eval-baseline').value = ''`),
				chromedp.Click(css("#eval-form button[type=submit]")),
				chromedp.WaitNotVisible(css("#eval-error")))
			if body := text(t, ctx, "#eval-body"); !strings.Contains(body, "Cases with no expected tool in the top 5") || strings.Contains(body, "Per-case diff") {
				t.Errorf("a report without baseline shows:\n%.400s", body)
			}
		}},
		{"a key never sees a server it may not", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.Navigate(url+"/console/#status"), chromedp.WaitVisible(css("#forget")),
				chromedp.Click(css("#forget")),
				chromedp.SendKeys(css("#api-key"), supportKey),
				chromedp.Click(css("#keys button[type=submit]")),
				chromedp.WaitVisible(css("#status-visible")))
			visible := text(t, ctx, "#status-visible")
			if visible != "19" { // slack's 10 tools and jira's 9
				t.Errorf("the key's card says %s tools, want 19", visible)
			}
			// 73 as a number: the version's commit hash may hold the digits.
			if st := text(t, ctx, "#status-body"); wholeNumber73.MatchString(st) || strings.Contains(st, "memory") {
				t.Errorf("the status view shows index-wide counts to a limited key:\n%s", st)
			}
			texts := map[string]string{"status": text(t, ctx, "body")}
			do(t, ctx, chromedp.Click(css("#tab-search")),
				chromedp.SetValue(css("#query"), "merge the approved pull request on github"),
				chromedp.Click(css("#search-form button[type=submit]")),
				chromedp.WaitVisible(css("#search-state")),
				chromedp.Click(css(`input[name=format][value=openai]`)),
				until(`document.getElementById('definitions').dataset.format === 'openai'`))
			texts["search"] = text(t, ctx, "body") + text(t, ctx, "#definitions")
			do(t, ctx, chromedp.Click(css("#tab-catalog")), chromedp.WaitVisible(css(`[data-server="slack"]`)),
				chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#catalog-body details').forEach(d => d.open = true)`))
			texts["catalog"] = text(t, ctx, "body")
			for view, got := range texts {
				for _, hidden := range []string{"github", "merge_pull_request", "postgres", "files/"} {
					if strings.Contains(strings.ToLower(got), hidden) {
						t.Errorf("the %s view shows %q to a key limited to slack and jira", view, hidden)
					}
				}
			}
			if !strings.Contains(texts["catalog"], "slack") || !strings.Contains(texts["catalog"], "jira") {
				t.Error("the catalog view lacks the key's own servers")
			}
			if n := eval[int](t, ctx, `document.querySelectorAll('#catalog-server option').length - 1`); n != 2 {
				t.Errorf("the server filter offers %d servers, want 2 (slack, jira); the key sees %s tools", n, visible)
			}
		}},
		{"a phone-width page does not scroll sideways", func(t *testing.T, ctx context.Context) {
			do(t, ctx, chromedp.EmulateViewport(390, 844),
				chromedp.Navigate(url+"/console/#search"), chromedp.WaitVisible(css("#query")),
				chromedp.SendKeys(css("#query"), "post a message to the team channel"),
				chromedp.Click(css("#search-form button[type=submit]")),
				chromedp.WaitVisible(css("#results tbody tr")))
			if eval[bool](t, ctx, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
				t.Error("the search view scrolls sideways at 390 px")
			}
			screenshot(t, ctx, shots, "phone")
			do(t, ctx, chromedp.EmulateViewport(1280, 800))
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.do(t, ctx) }) {
			break // later steps build on earlier ones
		}
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors (a CSP violation or a script error):\n%s", strings.Join(p, "\n"))
	}
}

// TestConsoleLargeCatalog: past 2,000 tools the catalog view asks for a
// server instead of loading the report on every tool (28 MB at 100,000),
// and shows the server chosen.
func TestConsoleLargeCatalog(t *testing.T) {
	chrome, root, dir, bin := prepare(t)
	cat := filepath.Join(dir, "catalog.json")
	run(t, root, nil, "go", "run", "./cmd/catgen", "-tools", "3000", "-out", cat)
	url := serve(t, bin, []string{"TOOLSEARCH_CATALOG=" + cat, "TOOLSEARCH_DRAIN_DELAY=0s",
		"TOOLSEARCH_LEARNING_PATH=" + filepath.Join(dir, "learned.db")})
	var list struct {
		Servers []struct {
			Name  string `json:"name"`
			Tools int    `json:"tools"`
		} `json:"servers"`
		Tools int `json:"tools"`
	}
	if err := json.Unmarshal([]byte(getJSON(t, url+"/mcp/tool-search/servers", "")), &list); err != nil || list.Tools != 3000 || len(list.Servers) < 2 {
		t.Fatalf("servers: %+v, %v", list, err)
	}

	ctx, cancel := browser(t, chrome)
	defer cancel()
	problems := watch(ctx)
	do(t, ctx, chromedp.Navigate(url+"/console/#catalog"),
		until(`document.getElementById('catalog-summary').textContent.includes('choose a server')`))
	if n := eval[int](t, ctx, `document.querySelectorAll('#catalog-body .tool').length`); n != 0 {
		t.Errorf("%d tools shown before a server was chosen", n)
	}
	whole := eval[[]string](t, ctx, `performance.getEntriesByType('resource').map(e => e.name).filter(u => new URL(u).pathname.endsWith('/catalog') && !new URL(u).search)`)
	if len(whole) > 0 {
		t.Errorf("the console asked for the report on every tool: %v", whole)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#catalog-server option').length - 1`); n != len(list.Servers) {
		t.Errorf("the server choice offers %d servers, want %d", n, len(list.Servers))
	}
	s := list.Servers[1]
	do(t, ctx, chromedp.SetValue(css("#catalog-server"), s.Name),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('catalog-server').dispatchEvent(new Event('change'))`),
		until(fmt.Sprintf(`document.querySelectorAll('#catalog-body .tool').length === %d`, s.Tools)))
	if sum := text(t, ctx, "#catalog-summary"); !strings.HasPrefix(sum, fmt.Sprintf("%d tools in ", s.Tools)) {
		t.Errorf("summary of server %s (%d tools): %q", s.Name, s.Tools, sum)
	}
	do(t, ctx, chromedp.SetValue(css("#catalog-server"), ""),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('catalog-server').dispatchEvent(new Event('change'))`),
		until(`document.querySelectorAll('#catalog-body .tool').length === 0 && document.getElementById('catalog-summary').textContent.includes('choose a server')`))
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors (a CSP violation or a script error):\n%s", strings.Join(p, "\n"))
	}
}

// TestConsoleUpstreams: the status view's upstream table shows an
// upstream that refuses toolsearch's token as failing, its breaker, its
// error and when it is listed again; the errors card shows the query
// breaker closed.
func TestConsoleUpstreams(t *testing.T) {
	chrome, root, dir, bin := prepare(t)
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "invalid token", http.StatusUnauthorized)
	}))
	defer locked.Close()
	cfg := filepath.Join(dir, "upstreams.yaml")
	if err := os.WriteFile(cfg, []byte("upstreams:\n  - {name: locked, url: '"+locked.URL+"/mcp', headers: {Authorization: Bearer wrong}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := serve(t, bin, []string{"TOOLSEARCH_CONFIG=" + cfg, "TOOLSEARCH_CATALOG=" + filepath.Join(root, "pkg/catalog/default.yaml"),
		"TOOLSEARCH_DRAIN_DELAY=0s", "TOOLSEARCH_LEARNING_PATH=" + filepath.Join(dir, "learned.db")})
	ctx, cancel := browser(t, chrome)
	defer cancel()
	problems := watch(ctx)
	do(t, ctx, chromedp.Navigate(url+"/console/#status"),
		until(`[...document.querySelectorAll('#status-body tbody tr')].some(r => r.textContent.startsWith('locked'))`))
	cells := eval[[]string](t, ctx, `[...[...document.querySelectorAll('#status-body tbody tr')].find(r => r.textContent.startsWith('locked')).cells].map(c => c.textContent)`)
	if len(cells) != 8 || !strings.HasPrefix(cells[1], "failing") || cells[2] == "–" || !strings.Contains(cells[5], "Unauthorized") || cells[6] == "–" || cells[7] != "–" {
		t.Errorf("the refusing upstream's row: %q; want failing, its breaker, the error, a next retry and no way its changes are seen", cells)
	}
	if body := text(t, ctx, "#status-body"); !strings.Contains(body, "query breaker") || strings.Contains(body, "Bearer wrong") {
		t.Errorf("status view: %s", body)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors (a CSP violation or a script error):\n%s", strings.Join(p, "\n"))
	}
}

// holdJS wraps the page's fetch: an answer whose request body holds
// window.holdFor is kept from the page until window.release() is called,
// and window.handled turns true once the page has done with it (the
// timer runs after every continuation its JSON resolved).
const holdJS = `(() => {
  const real = window.fetch.bind(window);
  window.fetch = async (path, opts) => {
    const res = await real(path, opts);
    const body = (opts && opts.body) || '';
    if (!window.holdFor || !body.includes(window.holdFor)) return res;
    window.holdFor = '';
    await new Promise((r) => { window.release = r; window.holding = true; });
    const json = res.json.bind(res);
    res.json = async () => { const v = await json(); setTimeout(() => { window.handled = true; }, 0); return v; };
    return res;
  };
})()`

// TestConsoleAnswersInOrder: an answer that comes after a later request's
// was drawn is dropped: a search typed over, a provider format chosen
// again. The earlier answer is held in the page until the later one is
// shown, then let through.
func TestConsoleAnswersInOrder(t *testing.T) {
	chrome, _, dir, bin := prepare(t)
	url := serve(t, bin, []string{"TOOLSEARCH_DRAIN_DELAY=0s", "TOOLSEARCH_LEARNING_PATH=" + filepath.Join(dir, "learned.db")})
	ctx, cancel := browser(t, chrome)
	defer cancel()
	problems := watch(ctx)
	first := `(document.querySelector('#results tbody tr:first-child .name') || {}).textContent`
	search := func(query string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(chromedp.SetValue(css("#query"), query), chromedp.Click(css("#search-form button[type=submit]")))
	}
	release := func() {
		do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.release()`), until(`window.handled === true`),
			chromedp.Evaluate[chromedp.Void](`window.handled = false; window.holding = false`))
	}
	do(t, ctx, chromedp.Navigate(url+"/console/#search"), chromedp.WaitVisible(css("#query")),
		chromedp.Evaluate[chromedp.Void](holdJS),
		chromedp.Evaluate[chromedp.Void](`window.holdFor = '"query":"merge the approved pull request"'`),
		search("merge the approved pull request"), until(`window.holding === true`),
		search("post a message to the team channel"), until(first+` !== undefined`))
	later := eval[string](t, ctx, first)
	if later == "merge_pull_request" {
		t.Fatalf("the later search's first tool is %q: the queries do not tell their answers apart", later)
	}
	release()
	if got := eval[string](t, ctx, first); got != later {
		t.Errorf("after the earlier search's answer came, the first tool shown is %q, want the later search's %q", got, later)
	}

	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.holdFor = '"format":"anthropic"'`),
		chromedp.Click(css(`input[name=format][value=anthropic]`)), until(`window.holding === true`),
		chromedp.Click(css(`input[name=format][value=openai]`)),
		until(`document.getElementById('definitions').dataset.format === 'openai'`))
	release()
	if got := eval[string](t, ctx, `document.getElementById('definitions').dataset.format`); got != "openai" {
		t.Errorf("after the format chosen first came, the definitions shown are %s, want openai's", got)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page logged errors (a CSP violation or a script error):\n%s", strings.Join(p, "\n"))
	}
}

// prepare finds Chromium, skipping without it, and builds the binary into
// a directory of the test's own; root is the repository's.
func prepare(t *testing.T) (chrome, root, dir, bin string) {
	chrome = findChrome()
	if chrome == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome): make console-test installs Debian's chromium")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "toolsearch")
	run(t, root, nil, "go", "build", "-o", bin, "./cmd/toolsearch")
	return chrome, root, dir, bin
}

// do runs browser steps with a bound on each batch (not on the browser).
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatal(err)
	}
}

// get runs one browser action and returns its value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, chromedp.Text(chromedp.CSS(sel)))
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	return get(t, ctx, chromedp.Evaluate[T](js))
}

// until waits for a JavaScript condition to hold.
func until(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](js)(ctx, tg)
		return err
	})
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// input sets a field's value as typing would, input event included.
func input(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event('input')); })()`, sel, value))
}

// screenshot saves the viewport as DIR/console-NAME.png when DIR is set.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	if dir == "" {
		return
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`), chromedp.Sleep(200*time.Millisecond))
	png := get(t, ctx, chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// watch collects script exceptions and error-level console entries, which
// is where Chromium reports CSP violations.
func watch(ctx context.Context) func() []string {
	var mu sync.Mutex
	var seen []string
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			// A failed fetch the page handles (401, 404) is logged by the
			// browser as a network error: not the page's fault.
			if (m.Type == chromedp.ConsoleError || m.IsException()) && m.Source != "network" {
				mu.Lock()
				seen = append(seen, m.String())
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func browser(t *testing.T, chrome string) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	// The first run starts the browser: no timeout on it, or the timeout
	// would end the browser with it.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting %s: %v", chrome, err)
	}
	return ctx, func() { cancelCtx(); cancelAlloc() }
}

func findChrome() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve starts the binary on a free loopback address and waits until it
// is ready; it is stopped when the test ends, and its log is shown if the
// test failed. It returns the server's URL. A port found free is free only
// until something binds it: when the server exits because another process
// took its port first, it is started again on another, up to three times.
func serve(t *testing.T, bin string, env []string) string {
	t.Helper()
	for try := 1; ; try++ {
		addr := freeAddr(t)
		url := "http://" + addr
		logs, err := start(t, bin, append(env[:len(env):len(env)], "TOOLSEARCH_ADDR="+addr), url)
		if err == nil {
			return url
		}
		if try == 3 || !strings.Contains(logs, "listen tcp "+addr+": bind: address already in use") {
			t.Fatalf("%v\nserver log:\n%s", err, logs)
		}
	}
}

// start runs the binary with env and waits until url answers ready; on a
// failure it returns the process's log so far.
func start(t *testing.T, bin string, env []string, url string) (string, error) {
	var logs syncBuffer
	cmd := exec.Command(bin, "serve", "-metrics-addr", "off")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	// A port taken by something that accepts and never answers would
	// hold a request without a timeout for good.
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return logs.String(), errors.New("the server exited before it was ready")
		default:
		}
		res, err := client.Get(url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				t.Cleanup(func() {
					stop()
					if t.Failed() {
						t.Logf("server log:\n%s", logs.String())
					}
				})
				return "", nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return logs.String(), errors.Join(fmt.Errorf("the server at %s was not ready in 30s", url), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer the process's output goroutines and the
// test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// teach searches query as key and reports tool as used.
func teach(t *testing.T, url, key, query, tool string) {
	t.Helper()
	var res struct {
		SearchID string `json:"search_id"`
	}
	if err := json.Unmarshal([]byte(postJSON(t, url+"/mcp/tool-search", key, `{"query":"`+query+`","top_k":10}`)), &res); err != nil || res.SearchID == "" {
		t.Fatalf("search: no search_id (%v)", err)
	}
	if got := postJSON(t, url+"/mcp/tool-search/feedback", key, `{"id":"`+res.SearchID+`","used":["`+tool+`"]}`); !strings.Contains(got, `"learned":1`) {
		t.Fatalf("feedback: %s", got)
	}
}

func postJSON(t *testing.T, url, key, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return send(t, req)
}

func getJSON(t *testing.T, url, key string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	return send(t, req)
}

func send(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
