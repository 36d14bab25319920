// Package trusttable reads docs/security.md's table of who writes each
// field and route, the data the trust sweep tests are driven by.
package trusttable

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Tiers are who may write a field or call a route, from the admin down.
var Tiers = []string{"admin", "organiser", "platform", "team", "operator", "anyone"}

// Row is one line of the table: a field ("Kind path") or a route
// ("METHOD /path"), the tier that writes or calls it, and what bounds it.
type Row struct{ What, Tier, Bound string }

// cell is a first cell: the field or route in backquotes.
var cell = regexp.MustCompile("^`([^`]+)`$")

// Read reads the table from docs/security.md in the repository at root.
func Read(root string) ([]Row, error) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- trust-table:begin -->")
	body, _, ok2 := strings.Cut(rest, "<!-- trust-table:end -->")
	if !ok || !ok2 {
		return nil, fmt.Errorf("docs/security.md has no trust table between its markers")
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("docs/security.md's trust table has no rows")
	}
	var rows []Row
	for _, line := range lines[2:] { // after the header and its rule
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 {
			return nil, fmt.Errorf("a row of three cells: %q", line)
		}
		m := cell.FindStringSubmatch(cells[0])
		if m == nil {
			return nil, fmt.Errorf("a row names its field or route in backquotes: %q", line)
		}
		rows = append(rows, Row{What: m[1], Tier: cells[1], Bound: cells[2]})
	}
	return rows, nil
}

// Of is the rows of rows whose tier is tier.
func Of(rows []Row, tier string) []Row {
	var out []Row
	for _, r := range rows {
		if r.Tier == tier {
			out = append(out, r)
		}
	}
	return out
}
