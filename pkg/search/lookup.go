package search

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/hints"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// ErrUnknownTool is returned by Lookup for a tool that does not exist or
// that the caller may not see: Lookup searches the caller's view, where
// the two are the same.
var ErrUnknownTool = errors.New("unknown tool")

// Found is a tool with its safety hints, as the snapshot holds them: what
// the search filters on is what the MCP side shows and gates calls on.
type Found struct {
	catalog.Tool
	Hints hints.Hints
}

// Lookup finds a tool the caller may see: by exact server and name when
// server is given, else by reference (a bare name where unambiguous, or
// server/tool).
func (s *Service) Lookup(caller access.Caller, server, name string) (Found, error) {
	snap, err := s.View(caller)
	if err != nil {
		return Found{}, err
	}
	row, err := snap.row(server, name)
	if err != nil {
		return Found{}, err
	}
	return snap.Found(row), nil
}

// row is the row of the tool Lookup finds in snap.
func (snap *Snapshot) row(server, name string) (int, error) {
	if server != "" {
		row, ok := snap.Catalog.Lookup(server, name)
		if !ok {
			if near, ok := snap.Catalog.NearName(name); ok && snap.Catalog.Tool(near).Server == server {
				return -1, fmt.Errorf("%w %s in server %s (did you mean %q?)", ErrUnknownTool, redact.Echo(name), redact.Echo(server), snap.Catalog.Tool(near).Name)
			}
			return -1, fmt.Errorf("%w %s in server %s", ErrUnknownTool, redact.Echo(name), redact.Echo(server))
		}
		return row, nil
	}
	row, err := snap.Catalog.Resolve(name)
	if err != nil {
		if errors.Is(err, catalog.ErrAmbiguousTool) {
			return -1, err // ambiguous within the caller's view
		}
		if near := snap.Catalog.NearRef(name); near != "" {
			return -1, fmt.Errorf("%w %s (did you mean %q?)", ErrUnknownTool, redact.Echo(name), near)
		}
		return -1, fmt.Errorf("%w %s", ErrUnknownTool, redact.Echo(name))
	}
	return row, nil
}

// Found is row's tool and hints.
func (snap *Snapshot) Found(row int) Found {
	t := snap.Catalog.Tool(row)
	return Found{Tool: t, Hints: snap.hints.At(row, t.Schemas.Annotations())}
}

// View is the snapshot the caller searches: the whole index, or the view
// its key's visibility allows, built with it so that nothing outside shows
// through (counts, BM25 statistics, near neighbours).
func (s *Service) View(caller access.Caller) (*Snapshot, error) {
	snap := s.cur.Load()
	if snap == nil {
		return nil, ErrNotReady
	}
	return snap.viewFor(caller)
}

// MaxServerPage is the most servers one page of ServersPage lists.
const MaxServerPage = 200

// ServerCount is a server and how many of its tools the caller may see.
type ServerCount struct {
	Name  string `json:"name"`
	Tools int    `json:"tools"`
}

// Servers lists the servers with tools the caller may see, in catalog
// order, those whose name contains query (any case) when query is set.
func (s *Service) Servers(caller access.Caller, query string) ([]ServerCount, error) {
	snap, err := s.View(caller)
	if err != nil {
		return nil, err
	}
	return snap.ServerCounts(query), nil
}

// ServerCounts lists the snapshot's servers with their tool counts, in
// catalog order, those whose name contains query (any case) when set.
func (snap *Snapshot) ServerCounts(query string) []ServerCount {
	q := strings.ToLower(strings.TrimSpace(query))
	out := []ServerCount{}
	for i, name := range snap.Catalog.Servers() {
		if n := snap.serverTools[i]; n > 0 && (q == "" || strings.Contains(strings.ToLower(name), q)) {
			out = append(out, ServerCount{Name: name, Tools: int(n)})
		}
	}
	return out
}

// ServerPage is one page of the servers a caller may see.
type ServerPage struct {
	Servers    []ServerCount
	Total      int    // servers in the listing, on every page
	NextCursor string // empty on the last page
}

// ServersPage is Servers a page at a time: limit servers (1 to
// MaxServerPage) from where cursor, one this listing issued, left off.
// A model reads what it lists; 3,205 servers were 280 KB in one answer.
func (s *Service) ServersPage(caller access.Caller, query string, limit int, cursor string) (ServerPage, error) {
	if limit < 1 || limit > MaxServerPage {
		return ServerPage{}, badRequest("invalid_limit", `"limit" must be from 1 to %d, got %d`, MaxServerPage, limit)
	}
	snap, err := s.View(caller)
	if err != nil {
		return ServerPage{}, err
	}
	all := snap.ServerCounts(query)
	scope := access.ScopeOf("servers", snap.Catalog.Hash(), caller.Key, strings.ToLower(strings.TrimSpace(query)))
	start, end, next, err := window(snap.cursorKey(s.cfg.CursorKey), scope, cursor, len(all), limit)
	if err != nil {
		return ServerPage{}, err
	}
	return ServerPage{Servers: all[start:end], Total: len(all), NextCursor: next}, nil
}
