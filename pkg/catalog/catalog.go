// Package catalog defines the MCP tools the service searches: how they are
// loaded from files, validated, identified and turned into text.
package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Limits from the MCP naming advice and this service's own budgets.
const (
	MaxNameBytes       = 256     // longer names are an error
	MaxAdvisedNameLen  = 128     // the MCP advice; longer names are a warning
	MaxDescEmbedBytes  = 8 << 10 // longer descriptions are truncated for embedding
	maxSchemaDepth     = 8       // deeper schema nesting is not walked for text
	maxSchemaTextBytes = 16 << 10
)

// MaxTools bounds a catalog far above what a process can embed (4M tools
// are 16 GiB of vectors at 1,024 dimensions), so that a row number fits
// the bits a keyword posting gives it (bm25.MaxDocs).
const MaxTools = 1 << 22

// maxTools is MaxTools, lowered by a test that cannot afford 4M tools.
var maxTools = MaxTools

// Tool is one MCP tool, the fields of a tools/list entry, plus the server
// that owns it. The schemas and annotations are kept as JSON, compact, so
// that they are handed back to callers as the catalog gave them.
type Tool struct {
	Server      string
	Name        string
	Title       string
	Description string
	Schemas     Schemas
	Tasks       TaskSupport // its execution.taskSupport
}

// TaskSupport is whether a tool may, or must, be run as an MCP task
// (execution.taskSupport): one that must answers a plain tools/call with
// an error.
type TaskSupport uint8

// A tool's task support; TasksForbidden is a tool's without one.
const (
	TasksForbidden TaskSupport = iota
	TasksOptional
	TasksRequired
)

var taskSupports = []string{"forbidden", "optional", "required"}

func (t TaskSupport) String() string { return taskSupports[t] }

// ParseTaskSupport reads an execution.taskSupport value.
func ParseTaskSupport(s string) (TaskSupport, bool) {
	i := slices.Index(taskSupports, s)
	return TaskSupport(max(i, 0)), i >= 0
}

// Execution is a tools/list entry's execution, nil for a tool without
// task support.
func (t Tool) Execution() *Execution {
	if t.Tasks == TasksForbidden {
		return nil
	}
	return &Execution{TaskSupport: t.Tasks.String()}
}

// Execution is the execution of a tools/list entry.
type Execution struct {
	TaskSupport string `json:"taskSupport"`
}

// Entry is a tools/list entry: an MCP Tool.
type Entry struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Execution    *Execution      `json:"execution,omitempty"`
}

// Entry is t as a tools/list entry, its schemas and annotations as given.
func (t Tool) Entry() Entry {
	return Entry{t.Name, t.Title, t.Description, t.Schemas.Input(), t.Schemas.Output(), t.Schemas.Annotations(), t.Execution()}
}

// MarshalJSON writes t as a tools/list entry, without its server.
func (t Tool) MarshalJSON() ([]byte, error) { return json.Marshal(t.Entry()) }

// ID is the tool's qualified name, "server/tool". Tool names may themselves
// contain "/", so an ID is never split to recover its parts: use Resolve.
func (t Tool) ID() string { return t.Server + "/" + t.Name }

// Warning is a problem that does not stop a tool from being indexed.
type Warning struct {
	Source  string `json:"source"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Message string `json:"message"`
	// Rule is the lint rule that reports the warning, where lint's own
	// checks cannot read it from the tool served (the text it removed, the
	// schema's $refs); "" where they can.
	Rule string `json:"-"`
}

func (w Warning) String() string {
	if w.Tool == "" { // the server's own
		return fmt.Sprintf("%s: server %q: %s", w.Source, w.Server, w.Message)
	}
	return fmt.Sprintf("%s: server %q: tool %q: %s", w.Source, w.Server, w.Tool, w.Message)
}

// clipName bounds a name quoted in an error or warning (a warning's names
// are clipped as it is made, since status shows its fields): a valid name
// is at most MaxNameBytes, and an upstream's 1 MB one must not become a
// megabyte of log line and status.
func clipName(s string) string { return redact.Clip(s, MaxNameBytes, "…") }

// Catalog is an immutable, validated set of tools from one or more sources.
// Tools keep the order of their sources; the index rows follow it.
type Catalog struct {
	tools    []Tool
	servers  []string
	sources  []string
	warnings []Warning
	skipped  []Warning
	hash     string
	bytes    int64 // Bytes
	// byKey finds a tool by server and name, and by "server/name" tried
	// at each "/" (two tools can share one: "a"+"b/c", "a/b"+"c"); byName
	// finds the tools of a bare name, one or several servers'.
	byKey, byName rowTable
	// sorted is the rows in name order (Sorted), made on first use.
	sorted     []int32
	sortedOnce sync.Once
	// near is the rows in the order of their names read without case,
	// forwards and backwards (NearName), made on first use.
	near     [2][]int32
	nearOnce sync.Once
}

func newCatalog(sources []string, tools int) *Catalog {
	return &Catalog{sources: sources, tools: make([]Tool, 0, tools), byKey: newRowTable(tools), byName: newRowTable(tools)}
}

// add appends t, a tool of a server not yet holding its name, whose
// schemas as given take schemaBytes (its caller has them read back, or
// has not: Schemas.Len reads them to count).
func (c *Catalog) add(t Tool, schemaBytes int) {
	i := len(c.tools)
	c.tools = append(c.tools, t)
	c.bytes += int64(len(t.Name) + len(t.Title) + len(t.Description) + schemaBytes)
	c.byKey.add(c.byKey.keyHash(t.Server, t.Name), i)
	c.byName.add(c.byName.nameHash(t.Name), i)
}

// named is the rows of the tools called name, in row order.
func (c *Catalog) named(name string) []int {
	var rows []int
	c.byName.each(c.byName.nameHash(name), func(r int) bool {
		if c.tools[r].Name == name {
			rows = append(rows, r)
		}
		return true
	})
	return rows
}

// ErrNoTools is returned by New when no source yields a tool.
var ErrNoTools = errors.New("catalog: no tools")

// ErrUnknownTool and ErrAmbiguousTool are returned by Resolve.
var (
	ErrUnknownTool   = errors.New("unknown tool")
	ErrAmbiguousTool = errors.New("ambiguous tool name")
)

// New builds a catalog from already-parsed servers and checks it. Servers of
// the same name (from different sources) are merged; a tool name repeated
// within a server is an error.
func New(parts []Part) (*Catalog, error) {
	n := 0
	for _, p := range parts {
		for _, s := range p.Servers {
			n += len(s.Tools)
		}
	}
	if n > maxTools {
		return nil, fmt.Errorf("catalog: %d tools, more than the %d a catalog may hold", n, maxTools)
	}
	c := newCatalog(nil, n)
	var errs []error
	seenSource := map[string]bool{}
	seenServer := map[string]bool{}
	// Rows are added part by part, so ends[i], the row count after
	// parts[i], says which part added a row: a repeat's message names it.
	ends := make([]int, 0, len(parts))
	var raw rawSchemas
	h := newToolHasher()
	for _, p := range parts {
		if !seenSource[p.Source] {
			seenSource[p.Source] = true
			c.sources = append(c.sources, p.Source)
		}
		entry := make(map[string]int, len(p.Servers)) // a server's first entry in this part
		for j, s := range p.Servers {
			if first, again := entry[s.Name]; again {
				// Across files, one server's tools in several is how a
				// catalog is split; within one, a second entry is more
				// likely a pasted copy or a misnamed server than a plan.
				c.warnings = append(c.warnings, Warning{Source: p.Source, Server: clipName(s.Name), Rule: "servers",
					Message: fmt.Sprintf("server listed again (entries %d and %d of this source); its tools are served as one server's", first+1, j+1)})
			} else {
				entry[s.Name] = j
			}
			if err := checkName(s.Name); err != nil {
				if p.Lenient {
					c.skipped = append(c.skipped, Warning{Source: p.Source, Server: clipName(s.Name), Message: "server name " + err.Error()})
				} else {
					errs = append(errs, &Error{Source: p.Source, Server: s.Name, Index: -1, Problem: "server name " + err.Error()})
				}
				continue
			}
			if !seenServer[s.Name] {
				seenServer[s.Name] = true
				c.servers = append(c.servers, s.Name)
			}
			for i, t := range s.Tools {
				t.Server = s.Name
				raw.read(t.Schemas)
				t, hws := revealHidden(t, &raw)
				ws, err := t.check(&raw)
				ws = append(hws, ws...)
				if r, dup := c.Lookup(t.Server, t.Name); err == nil && dup {
					err = errors.New("name repeated within its server")
					if first := definedBy(parts, ends, r, p); first != p.Source {
						// Say where the definition that stands came from: a
						// catalog file beside an upstream of its server's
						// name, or two files.
						err = fmt.Errorf("name defined by %s already", first)
					}
				}
				if err != nil {
					if p.Lenient {
						c.skipped = append(c.skipped, Warning{Source: p.Source, Server: clipName(s.Name), Tool: clipName(t.Name), Message: err.Error()})
					} else {
						errs = append(errs, &Error{Source: p.Source, Server: s.Name, Tool: t.Name, Index: i, Problem: err.Error()})
					}
					continue
				}
				for _, w := range ws {
					c.warnings = append(c.warnings, Warning{Source: p.Source, Server: clipName(s.Name), Tool: clipName(t.Name), Message: w.msg, Rule: w.rule})
				}
				c.add(t, raw.len())
				h.add(t, &raw)
			}
		}
		ends = append(ends, len(c.tools))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(c.tools) == 0 {
		return nil, ErrNoTools
	}
	if len(c.servers) > 0 {
		// A server all of whose tools were skipped has nothing to list.
		has := make(map[string]bool, len(c.servers))
		for _, t := range c.tools {
			has[t.Server] = true
		}
		kept := c.servers[:0]
		for _, name := range c.servers {
			if has[name] {
				kept = append(kept, name)
			}
		}
		c.servers = kept
	}
	c.hash = h.sum()
	return c, nil
}

// Error is a catalog problem that stops start-up. It names where it is.
type Error struct {
	Source, Server, Tool string
	Index                int // position of the tool within its server; -1 when the problem is the server's
	Problem              string
}

func (e *Error) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("catalog %s: server %q: %s", e.Source, clipName(e.Server), e.Problem)
	}
	return fmt.Sprintf("catalog %s: server %q: tool #%d %q: %s", e.Source, clipName(e.Server), e.Index+1, clipName(e.Tool), e.Problem)
}

// hashTools is a SHA-256 over every field of every tool, each written
// after its length so that no two catalogs' fields run together the same
// way. Schemas and annotations are compact (the decoder's raw, or an encoder's
// output for upstream tools), so an indented file hashes as its compact
// form does. It reads them as they are: encoding each tool as JSON to
// hash it took 0.25 s at 100,000 tools.
// The schemas are hashed as given, so a catalog's hash does not depend on
// how they are held; New hashes each tool as it adds it, from the schemas
// its checks read back.
func hashTools(tools []Tool) string {
	h := newToolHasher()
	var raw rawSchemas
	for _, t := range tools {
		raw.read(t.Schemas)
		h.add(t, &raw)
	}
	return h.sum()
}

// toolHasher is hashTools, a tool at a time.
type toolHasher struct {
	h   hash.Hash
	buf []byte
}

func newToolHasher() *toolHasher { return &toolHasher{h: sha256.New()} }

// add hashes t, whose schemas read back are raw.
func (h *toolHasher) add(t Tool, raw *rawSchemas) {
	buf := appendField(h.buf[:0], t.Server)
	buf = appendField(buf, t.Name)
	buf = appendField(buf, t.Title)
	buf = appendField(buf, t.Description)
	buf = appendField(buf, raw.in)
	buf = appendField(buf, raw.out)
	buf = appendField(buf, raw.ann)
	if t.Tasks != TasksForbidden {
		// Only then, so that a catalog without tasks hashes as before
		// (its snapshots still match); as a field no server's name can
		// be (checkName refuses control characters), so unambiguous.
		buf = appendField(buf, "\x00"+t.Tasks.String())
	}
	h.h.Write(buf)
	h.buf = buf
}

func (h *toolHasher) sum() string { return hex.EncodeToString(h.h.Sum(nil)) }

// appendField appends f after its length.
func appendField[T string | []byte](buf []byte, f T) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(f))), f...)
}

// Tools returns the tools in index order. The slice must not be modified.
func (c *Catalog) Tools() []Tool { return c.tools }

// Len is the number of tools.
func (c *Catalog) Len() int { return len(c.tools) }

// Sorted is every row in the order of its tool's name, then server: the
// order lists are paged in. It is made on first use and shared; callers
// must not change it.
func (c *Catalog) Sorted() []int32 {
	c.sortedOnce.Do(func() {
		rows := make([]int32, len(c.tools))
		for i := range rows {
			rows[i] = int32(i)
		}
		slices.SortFunc(rows, func(x, y int32) int { return c.CompareNames(int(x), int(y)) })
		c.sorted = rows
	})
	return c.sorted
}

// CompareNames orders rows x and y as Sorted does.
func (c *Catalog) CompareNames(x, y int) int {
	tx, ty := &c.tools[x], &c.tools[y]
	return cmp.Or(strings.Compare(tx.Name, ty.Name), strings.Compare(tx.Server, ty.Server))
}

// Tool returns the i-th tool.
func (c *Catalog) Tool(i int) Tool { return c.tools[i] }

// Bytes is the size of the tools' names, titles, descriptions, schemas
// and annotations as given (schemas and annotations compact JSON; they
// are held coded, in fewer bytes: Schemas): what the memory a catalog
// takes grows with beside its count of tools, its keyword index being
// made of the same text (docs/operations.md, "Memory").
func (c *Catalog) Bytes() int64 { return c.bytes }

// Same reports whether o holds what c does: the same tools in the same
// order (Hash), from the same sources, with the same warnings and skipped
// tools. A catalog loaded again unchanged is the Same as before.
func (c *Catalog) Same(o *Catalog) bool {
	return c.hash == o.hash && slices.Equal(c.sources, o.sources) &&
		slices.Equal(c.warnings, o.warnings) && slices.Equal(c.skipped, o.skipped)
}

// Servers lists the server names in the order they were first seen.
func (c *Catalog) Servers() []string { return c.servers }

// Sources lists where the tools came from (file paths, or "embedded:default").
func (c *Catalog) Sources() []string { return c.sources }

// Warnings lists problems that did not stop indexing.
func (c *Catalog) Warnings() []Warning { return c.warnings }

// Skipped lists the tools of lenient parts that could not be indexed, and
// why.
func (c *Catalog) Skipped() []Warning { return c.skipped }

// Hash is a SHA-256 over the tools' content, independent of file formatting.
func (c *Catalog) Hash() string { return c.hash }

// Resolve finds a tool by reference: first an exact bare tool name that only
// one server has, then an exact "server/tool". It never splits on "/", since
// tool and server names may contain it.
func (c *Catalog) Resolve(ref string) (int, error) {
	switch rows := c.named(ref); {
	case len(rows) == 1:
		return rows[0], nil
	case len(rows) > 1:
		if i, n := c.findID(ref, nil); n == 1 {
			return i, nil
		}
		return -1, fmt.Errorf("%w %s: in servers %q; qualify it as server/tool", ErrAmbiguousTool, redact.Echo(ref), c.serversOf(rows))
	}
	switch i, n := c.findID(ref, nil); n {
	case 0:
		return -1, fmt.Errorf("%w %s", ErrUnknownTool, redact.Echo(ref))
	case 1:
		return i, nil
	default:
		var rows []int
		c.findID(ref, func(i int) { rows = append(rows, i) })
		return -1, fmt.Errorf("%w %s: names a tool in each of servers %q", ErrAmbiguousTool, redact.Echo(ref), c.serversOf(rows))
	}
}

// ByID finds the one tool whose server/name is id, exactly: "a/b/c" may
// name a tool of each of servers a and a/b, and then names none.
func (c *Catalog) ByID(id string) (int, bool) {
	if i, n := c.findID(id, nil); n == 1 {
		return i, true
	}
	return -1, false
}

// findID counts the tools whose server/name is id, trying each "/" in id
// as the one between them, and returns the first (each to found, if not
// nil), so that no map of ids is kept beside byKey.
func (c *Catalog) findID(id string, found func(int)) (first, n int) {
	first = -1
	if len(id) > 2*MaxNameBytes+1 {
		return first, 0 // no tool's id is longer; and a caller's id of many "/" costs a lookup each
	}
	for at := strings.IndexByte(id, '/'); at >= 0; {
		if i, ok := c.Lookup(id[:at], id[at+1:]); ok {
			if n == 0 {
				first = i
			}
			n++
			if found != nil {
				found(i)
			}
		}
		next := strings.IndexByte(id[at+1:], '/')
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return first, n
}

// Lookup finds the tool named name in server, exactly.
func (c *Catalog) Lookup(server, name string) (int, bool) {
	found := -1
	c.byKey.each(c.byKey.keyHash(server, name), func(r int) bool {
		if t := &c.tools[r]; t.Server == server && t.Name == name {
			found = r
			return false
		}
		return true
	})
	return found, found >= 0
}

func (c *Catalog) serversOf(ix []int) []string {
	servers := make([]string, len(ix))
	for j, i := range ix {
		servers[j] = c.tools[i].Server
	}
	sort.Strings(servers)
	return servers
}

// Subset returns the catalog of just the tools at rows, in catalog order,
// as if they had been the only tools loaded: its servers, name lookups,
// warnings and hash know nothing of the others. An API key's view is
// built from it, so nothing outside the view can shape an answer.
func (c *Catalog) Subset(rows []int) *Catalog {
	s := newCatalog(c.sources, len(rows))
	keep := make(map[[2]string]bool, len(rows))
	servers := map[string]bool{}
	for _, r := range rows {
		t := c.tools[r]
		keep[[2]string{t.Server, t.Name}] = true
		servers[t.Server] = true
	}
	for _, t := range c.tools {
		if !keep[[2]string{t.Server, t.Name}] {
			continue
		}
		s.add(t, t.Schemas.Len())
	}
	for _, name := range c.servers {
		if servers[name] {
			s.servers = append(s.servers, name)
		}
	}
	for _, w := range c.warnings {
		if keep[[2]string{w.Server, w.Tool}] {
			s.warnings = append(s.warnings, w)
		}
	}
	s.hash = hashTools(s.tools)
	return s
}

// definedBy is the source of the part that added row r: one of parts,
// whose rows end at ends, or cur, the part still being added.
func definedBy(parts []Part, ends []int, r int, cur Part) string {
	if i := sort.SearchInts(ends, r+1); i < len(ends) {
		return parts[i].Source
	}
	return cur.Source
}
