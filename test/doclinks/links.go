// Package doclinks checks the repository's Markdown as GitHub shows it: every
// relative link of the README and of docs/ names a file or directory that
// exists, and every #anchor a heading (or an id) of the page it points to,
// by GitHub's rules for a heading's anchor. A page split, a heading renamed
// or a file moved then fails a test instead of leaving a dead link.
package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is one link of a Markdown document: its destination as written and
// the line it is on (from 1).
type Link struct {
	Line   int
	Target string
}

var (
	// inline is the destination of an inline link or image, `](dest)` or
	// `](dest "title")`, or `](<dest>)`.
	inline = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+"[^"]*")?\s*\)`)
	// definition is a link reference definition, `[label]: dest`.
	definition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	// attribute is an HTML link or source: href="..." or src="...".
	attribute = regexp.MustCompile(`\b(?:href|src)="([^"]*)"`)
	// explicitID is an anchor an HTML element sets: id="..." or name="...".
	explicitID = regexp.MustCompile(`<[a-zA-Z][^>]*\b(?:id|name)="([^"]*)"`)
	// heading is an ATX heading: one to six #, then its text.
	heading = regexp.MustCompile(`^\s{0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	// codeSpan is an inline code span (one or two backticks).
	codeSpan = regexp.MustCompile("``[^`]+``|`[^`]+`")
	// inlineLink is a link or image in a heading's text, whose text is kept.
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// tag is an HTML tag in a heading's text, which GitHub drops.
	tag = regexp.MustCompile(`<[^>]+>`)
)

// lines calls f with each line of doc that is not inside a fenced code block,
// and its number. A fence is a line starting, after any indentation (a list
// item's), with ``` or ~~~; it ends at the next fence of the same kind.
func lines(doc string, f func(n int, line string)) {
	fence := ""
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		f(i+1, line)
	}
}

// Links returns the links of doc outside code: inline links and images,
// reference definitions and HTML href and src attributes.
func Links(doc string) []Link {
	var links []Link
	lines(doc, func(n int, line string) {
		line = codeSpan.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, re := range []*regexp.Regexp{inline, definition, attribute} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				target := strings.TrimSuffix(strings.TrimPrefix(m[1], "<"), ">")
				links = append(links, Link{Line: n, Target: target})
			}
		}
	})
	return links
}

// Anchors returns the anchors of doc: each heading's, as GitHub makes them
// (Slug, with -1, -2... for a repeated one), and every id or name an HTML
// element sets.
func Anchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	lines(doc, func(_ int, line string) {
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// Slug is GitHub's anchor for a heading whose Markdown text is text: the text
// as shown (code spans' content, links' text, no emphasis markers or tags),
// lower-cased, with every character but letters, digits, marks, connector
// punctuation (the underscore), hyphens and spaces dropped, and each space
// made a hyphen.
func Slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = tag.ReplaceAllString(text, "")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lineAnchor is GitHub's anchor of a line of a file shown as code (#L12,
// #L12-L20), which no heading makes.
var lineAnchor = regexp.MustCompile(`^L[0-9]+(-L[0-9]+)?$`)

// Check returns one problem for each relative link of the Markdown file at
// file (a path relative to root, in slashes) that does not resolve: a file or
// directory that does not exist, or is outside root, or an anchor no heading
// of the page it points to makes. Links with a scheme (https:, mailto:) are
// not followed.
func Check(root, file string) ([]string, error) {
	doc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, l := range Links(string(doc)) {
		if p := checkLink(root, file, string(doc), l.Target); p != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, l.Line, l.Target, p))
		}
	}
	return problems, nil
}

// checkLink judges one link of file, whose text is doc; "" when it resolves.
func checkLink(root, file, doc, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Sprintf("not a URL: %v", err)
	}
	if u.Scheme != "" || u.Host != "" {
		return ""
	}
	if target == "" {
		return "an empty link"
	}
	if strings.HasPrefix(u.Path, "/") {
		return "a path from the site's root: write it relative to the file"
	}
	page := file
	if u.Path != "" {
		page = path.Join(path.Dir(file), u.Path)
		if page == ".." || strings.HasPrefix(page, "../") {
			return "outside the repository"
		}
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			return "no such file or directory"
		}
		if info.IsDir() || u.Fragment == "" {
			return ""
		}
	}
	if u.Fragment == "" || lineAnchor.MatchString(u.Fragment) {
		return ""
	}
	if !strings.HasSuffix(page, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	if page != file {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			return err.Error()
		}
		doc = string(b)
	}
	if !Anchors(doc)[u.Fragment] {
		return fmt.Sprintf("%s has no heading whose anchor is #%s", page, u.Fragment)
	}
	return ""
}
