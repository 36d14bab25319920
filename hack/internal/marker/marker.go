// Package marker replaces the generated part of a hand-written Markdown file:
// the lines between a pair of HTML comments naming the part, so that a
// generator owns that part and the prose around it stays the author's.
package marker

import (
	"fmt"
	"strings"
)

// Begin and End are the comments around the part called name.
func Begin(name string) string { return "<!-- BEGIN " + name + " -->" }

// End closes the part Begin opens.
func End(name string) string { return "<!-- END " + name + " -->" }

// Replace returns doc with the lines between the markers of name replaced by
// content. It fails when the markers are missing, repeated or out of order,
// rather than guessing where the part goes.
func Replace(doc, name, content string) (string, error) {
	begin, end := Begin(name), End(name)
	if strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		return "", fmt.Errorf("want exactly one %q and one %q", begin, end)
	}
	i := strings.Index(doc, begin) + len(begin)
	j := strings.Index(doc, end)
	if j < i {
		return "", fmt.Errorf("%q comes before %q", end, begin)
	}
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return doc[:i] + "\n" + content + doc[j:], nil
}

// Section is the whole part called name with its markers, to append to a
// file that does not have it yet.
func Section(name, content string) string {
	s, _ := Replace(Begin(name)+End(name), name, content)
	return s
}
