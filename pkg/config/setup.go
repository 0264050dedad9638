package config

import (
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// Setup is the search setup for cat under this file: its core whitelist
// and templates. API keys are not included: a key_env names an
// environment variable, which only the command reads.
func (f *File) Setup(cat *catalog.Catalog) *search.Setup {
	s := &search.Setup{Catalog: cat, Core: f.Core, Templates: make(map[string]search.Template, len(f.Templates))}
	for name, t := range f.Templates {
		s.Templates[name] = search.Template{Description: t.Description, Tools: t.Tools}
	}
	return s
}

// DefaultSetup is the embedded default catalog under the embedded default
// config, as `toolsearch serve` runs with nothing configured.
func DefaultSetup() (*search.Setup, error) {
	cat, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	f, err := Default()
	if err != nil {
		return nil, err
	}
	return f.Setup(cat), nil
}
