package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// check returns the tool's warnings, or an error when the tool cannot be
// indexed at all. Real catalogs break the naming advice routinely (spaces,
// slashes), so only what would corrupt identification or the index is an
// error.
func (t Tool) check() (warnings []string, err error) {
	if err := checkName(t.Name); err != nil {
		return nil, fmt.Errorf("name %w", err)
	}
	if len(t.InputSchema) > 0 && !isJSONObject(t.InputSchema) {
		return nil, errors.New("inputSchema is present but not a JSON object")
	}
	if len(t.OutputSchema) > 0 && !isJSONObject(t.OutputSchema) {
		return nil, errors.New("outputSchema is present but not a JSON object")
	}
	if !utf8.ValidString(t.Description) || !utf8.ValidString(t.Title) {
		return nil, errors.New("title or description is not valid UTF-8")
	}
	if !AdvisedName(t.Name) {
		warnings = append(warnings, fmt.Sprintf("name is outside the MCP naming advice (1-%d characters of A-Z a-z 0-9 _ - .)", MaxAdvisedNameLen))
	}
	switch {
	case len(bytes.TrimSpace([]byte(t.Description))) == 0:
		warnings = append(warnings, "empty description")
	case len(t.Description) > MaxDescEmbedBytes:
		warnings = append(warnings, fmt.Sprintf("description is %d bytes; only the first %d are embedded", len(t.Description), MaxDescEmbedBytes))
	}
	return warnings, nil
}

// checkName rejects names that cannot identify a tool safely. The returned
// error reads after the word "name".
func checkName(name string) error {
	switch {
	case len(bytes.TrimSpace([]byte(name))) == 0:
		return errors.New("is empty")
	case len(name) > MaxNameBytes:
		return fmt.Errorf("is %d bytes, over the limit of %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return errors.New("is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

// AdvisedName reports whether name follows the MCP naming advice: 1 to 128
// characters of A-Z a-z 0-9 _ - .
func AdvisedName(name string) bool {
	if len(name) == 0 || len(name) > MaxAdvisedNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isJSONObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) >= 2 && raw[0] == '{'
}
