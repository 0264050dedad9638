package inspect

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// Two servers with a near-duplicate pair across them, and a key that sees
// only one: the audit names the shadowing tool to a key that sees both, and
// nothing of it to the key that sees one.
const doc = `{"servers":[
	{"name":"mail","tools":[
		{"name":"send_email","description":"Send an email message to one or more recipients with a subject and body."},
		{"name":"list_folders","description":"List the mailbox folders of the account."}]},
	{"name":"outbox","tools":[
		{"name":"send_email","description":"Send an email message to one or more recipients with a subject and body."},
		{"name":"purge_outbox","description":"Remove every queued message."}]}]}`

func newService(t *testing.T) *search.Service {
	t.Helper()
	part, err := catalog.Parse("t.json", []byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		t.Fatal(err)
	}
	svc := search.New(search.Config{Embedder: embedding.NewLocal(256)})
	_, err = svc.Build(context.Background(), &search.Setup{Catalog: cat, Keys: []access.Key{
		{Name: "all", Hash: sha256.Sum256([]byte("k-all"))},
		{Name: "mail", Hash: sha256.Sum256([]byte("k-mail")), Visibility: access.Visibility{Servers: []string{"mail"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestCatalog(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()

	all, err := Catalog(ctx, svc, access.Caller{Key: "all"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Tools) != 4 || !all.Audit.Ran {
		t.Fatalf("%d tools, audit %+v", len(all.Tools), all.Audit)
	}
	var misses []string
	nearDup := false
	for _, tool := range all.Tools {
		for _, m := range tool.Misses {
			misses = append(misses, tool.Server+"/"+tool.Name+" < "+m.OutrankedBy)
		}
		for _, f := range tool.Findings {
			nearDup = nearDup || (f.Rule == "duplicate" || f.Rule == "near-duplicate") && f.Other != ""
		}
	}
	if !slices.ContainsFunc(misses, func(s string) bool {
		return s == "mail/send_email < outbox/send_email" || s == "outbox/send_email < mail/send_email"
	}) {
		t.Errorf("the audit missed the near-duplicate pair: %v", misses)
	}
	if !nearDup {
		t.Error("no duplicate finding for the two send_email tools")
	}

	mine, err := Catalog(ctx, svc, access.Caller{Key: "mail"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range mine.Tools {
		if tool.Server != "mail" || len(tool.Misses) > 0 {
			t.Errorf("the mail-only key sees %s/%s, misses %+v", tool.Server, tool.Name, tool.Misses)
		}
		for _, f := range tool.Findings {
			if f.Other != "" {
				t.Errorf("the mail-only key sees a pair with %s", f.Other)
			}
		}
	}
	if len(mine.Servers) != 1 {
		t.Errorf("servers %+v", mine.Servers)
	}

	var unknown *UnknownServerError
	if _, err := Catalog(ctx, svc, access.Caller{Key: "mail"}, []string{"outbox"}); !errors.As(err, &unknown) {
		t.Errorf("a hidden server: %v, want UnknownServerError", err)
	}
	if _, err := Catalog(ctx, svc, access.Caller{}, nil); !errors.Is(err, access.ErrUnauthorized) {
		t.Errorf("no key: %v", err)
	}
}
