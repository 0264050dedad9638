package search

import (
	"fmt"
	"slices"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// TestMisspelledQueries: a query that misspells the catalog's words ranks
// as the query spelt right does, in every mode. Before, each of these
// found nothing confidently and put other tools first. What the catalog
// lacks stays absent: its words are English, not misspellings of the
// catalog's.
func TestMisspelledQueries(t *testing.T) {
	svc := newService(t, nil)
	if _, err := svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ misspelt, right string }{
		{"sedn a mesage to slakc", "send a message to slack"},
		{"serch githb issues", "search github issues"},
		{"craete a calendar evnet", "create a calendar event"},
		{"qeury the postgers databse", "query the postgres database"},
		// Each sentence is ranked apart as well, from the same reading.
		{"Sedn a mesage to slakc. Then craete a calendar evnet.", "Send a message to slack. Then create a calendar event."},
	}
	for _, mode := range []Mode{ModeKeyword, ModeSemantic, ModeHybrid} {
		for _, tt := range tests {
			got := readsAs(t, svc, mode, tt.misspelt, tt.right, false)
			if mode == ModeHybrid && (got.Confident == nil || !*got.Confident || got.NoMatch) {
				t.Errorf("%s %q: confident %v, no_match %v", mode, tt.misspelt, got.Confident, got.NoMatch)
			}
		}
	}
	for _, q := range []string{"book a flight to Lisbon", "translate this paragraph into French"} {
		if res := mustSearch(t, svc, Request{Query: q, TopK: ptr(3)}); !res.NoMatch {
			t.Errorf("%q: no_match %v, want a query about what the catalog lacks to stay one", q, res.NoMatch)
		}
	}
}

// TestUnaccentedQueries: a query typed without the accents of a French or
// German catalog ranks as the query typed with them, in every mode: a
// word's accents had made it a different word, which nothing matched. So
// does a query with accents a catalog's words lack.
func TestUnaccentedQueries(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "compta", Name: "lister", Description: "Lister les factures impayées d'un client, avec leur échéance."},
		{Server: "compta", Name: "supprimer", Description: "Supprimer une facture brouillon qui n'a pas été émise."},
		{Server: "compta", Name: "relancer", Description: "Envoyer une relance de paiement par courriel au client."},
		{Server: "rh", Name: "absence", Description: "Déposer une demande de congés payés pour un employé."},
		{Server: "rh", Name: "equipe", Description: "Consulter le planning de l'équipe pour la semaine à venir."},
		{Server: "stadt", Name: "melden", Description: "Schäden an Straßen und Brücken der Stadt melden."},
		{Server: "stadt", Name: "muell", Description: "Abholtermine für Müll und Altpapier anzeigen."},
		{Server: "hiring", Name: "screen", Description: "Screen a candidate's resume against the job's requirements."},
		{Server: "hiring", Name: "schedule", Description: "Schedule an interview with a candidate at a cafe nearby."},
	}
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test"})
	if _, err := svc.Build(t.Context(), &Setup{Catalog: catalogOf(t, tools)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ plain, accented string }{
		{"factures impayees et leur echeance", "factures impayées et leur échéance"},
		{"deposer une demande de conges pour un employe", "déposer une demande de congés pour un employé"},
		{"schaden an strassen melden", "schäden an straßen melden"},
		{"abholtermine fur mull", "abholtermine für müll"},
		{"screen the resume of a candidate", "screen the résumé of a candidate"},
		{"interview at a cafe", "interview at a café"},
		{"+echeance des factures", "+échéance des factures"},
	}
	for _, mode := range []Mode{ModeKeyword, ModeSemantic, ModeHybrid} {
		for _, tt := range tests {
			readsAs(t, svc, mode, tt.plain, tt.accented, true)
		}
	}
}

// readsAs searches q and as in mode, top 3, and reports an error unless
// q's tools are as's (and, with scores, their scores too); it returns
// q's answer.
func readsAs(t *testing.T, svc *Service, mode Mode, q, as string, scores bool) *Response {
	t.Helper()
	want := mustSearch(t, svc, Request{Query: as, Mode: mode, TopK: ptr(3)})
	got := mustSearch(t, svc, Request{Query: q, Mode: mode, TopK: ptr(3)})
	same := slices.Equal(ids(got.Tools), ids(want.Tools))
	if scores {
		same = same && slices.EqualFunc(got.Tools, want.Tools, func(a, b Hit) bool { return *a.Score == *b.Score })
	}
	if !same {
		t.Errorf("%s %q: %v; %q: %v", mode, q, hits(got.Tools), as, hits(want.Tools))
	}
	return got
}

func hits(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%s/%s %.4f", h.Server, h.Name, *h.Score))
	}
	return out
}
