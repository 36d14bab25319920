package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type schema = apiextensionsv1.JSONSchemaProps

// walker writes the rows of one table, a field's row before its own fields'.
// A struct met more than once (a component's probes are the primary's) has
// its fields written once, at its home: the shallowest path it is met at,
// the first of them in the table's order (the primary's, not a component's);
// its other rows name that path instead of repeating its fields.
type walker struct {
	b *strings.Builder
	// home maps a struct's schema, its own description left out, to the
	// path its fields are written under.
	home map[string]string
}

// newWalker plans the table of the fields of s, at path, written to b.
func newWalker(b *strings.Builder, path string, s *schema) *walker {
	w := &walker{b: b, home: map[string]string{}}
	visit(path, s, func(under string, inner *schema) {
		key := structKey(inner)
		if first, ok := w.home[key]; !ok || depth(under) < depth(first) {
			w.home[key] = under
		}
	})
	return w
}

// visit calls f with every struct below s, s being at path, in the table's
// order, and the path its fields are under.
func visit(path string, s *schema, f func(under string, inner *schema)) {
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		child := s.Properties[name]
		under, inner := fieldsOf(path+"."+name, &child)
		if len(inner.Properties) > 0 {
			f(under, inner)
			visit(under, inner, f)
		}
	}
}

// depth is how many fields deep a path is.
func depth(path string) int {
	return strings.Count(path, ".") + strings.Count(path, "[]")
}

// fieldsOf is the struct whose fields follow the field s at path, and the
// path they are under: s itself, its items for a list, its values for a map.
func fieldsOf(path string, s *schema) (string, *schema) {
	switch {
	case s.Items != nil && s.Items.Schema != nil:
		return path + "[]", s.Items.Schema
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return path + ".*", s.AdditionalProperties.Schema
	}
	return path, s
}

// children writes the rows of s's fields, s being at path.
func (w *walker) children(path string, s *schema) {
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		child := s.Properties[name]
		w.field(path+"."+name, &child, slices.Contains(s.Required, name))
	}
}

// field writes the row of the field at path, then, at their home, those of
// its fields.
func (w *walker) field(path string, s *schema, required bool) {
	under, inner := fieldsOf(path, s)
	desc := description(s, inner)
	nested := len(inner.Properties) > 0
	if home := w.home[structKey(inner)]; nested && home != under {
		desc = strings.TrimSpace(desc + " Same fields as `" + home + "`.")
		nested = false
	}
	yes := ""
	if required {
		yes = "yes"
	}
	fmt.Fprintf(w.b, "| `%s` | %s | %s | %s | %s |\n", path, typeCell(s), yes, defaultOf(s), desc)
	if nested {
		w.children(under, inner)
	}
}

// structKey identifies a struct's schema whatever the field holding it says
// of it.
func structKey(s *schema) string {
	c := *s
	c.Description = ""
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // a schema read from YAML always marshals
	}
	return string(b)
}

// description is a field's description, its items' or values' own type's
// description when that says more, and the messages of their CEL rules.
func description(s, inner *schema) string {
	text := cell(s.Description)
	if inner != s && inner.Description != "" && inner.Description != s.Description {
		text = joinParagraphs(text, cell(inner.Description))
	}
	var rules []string
	for _, v := range slices.Concat(s.XValidations, validationsOf(s, inner)) {
		switch {
		case v.Message != "":
			rules = append(rules, cell(v.Message))
		case v.MessageExpression != "":
			rules = append(rules, code(v.MessageExpression))
		default:
			rules = append(rules, code(v.Rule))
		}
	}
	if len(rules) > 0 {
		text = joinParagraphs(text, "Rules: "+strings.Join(rules, "; ")+".")
	}
	return text
}

// validationsOf are inner's rules when it is not s itself.
func validationsOf(s, inner *schema) apiextensionsv1.ValidationRules {
	if inner == s {
		return nil
	}
	return inner.XValidations
}

// joinParagraphs joins two cells' texts as paragraphs.
func joinParagraphs(a, b string) string {
	if a == "" {
		return b
	}
	return a + "<br><br>" + b
}

// typeCell is a field's type, then what it allows.
func typeCell(s *schema) string {
	t := typeOf(s)
	c := constraints(s)
	switch {
	case s.Items != nil && s.Items.Schema != nil:
		c = append(c, prefixed("each ", constraints(s.Items.Schema))...)
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		c = append(c, prefixed("each value ", constraints(s.AdditionalProperties.Schema))...)
	}
	if len(c) == 0 {
		return t
	}
	return t + "; " + strings.Join(c, "; ")
}

// prefixed is each of words after prefix.
func prefixed(prefix string, words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = prefix + w
	}
	return out
}

// typeOf names a schema's type as Go would write it.
func typeOf(s *schema) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + typeOf(s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + typeOf(s.AdditionalProperties.Schema)
	case s.Type == "object" && len(s.Properties) == 0 && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "object (any fields)"
	case s.Type == "":
		return "any"
	case s.Type == "string" && s.Format != "":
		return "string (" + s.Format + ")"
	}
	return s.Type
}

// constraints says what values s allows besides its type: its enumeration
// (intersected with those of its allOf), its bounds, and how a list is keyed.
func constraints(s *schema) []string {
	var c []string
	if enum := enumOf(s); len(enum) > 0 {
		c = append(c, "one of "+strings.Join(enum, ", "))
	}
	c = appendRange(c, s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum)
	c = appendCount(c, s.MinLength, s.MaxLength, "character")
	c = appendCount(c, s.MinItems, s.MaxItems, "item")
	c = appendCount(c, s.MinProperties, s.MaxProperties, "entry")
	switch {
	case s.XListType != nil && *s.XListType == "map":
		c = append(c, "keyed by "+strings.Join(codes(s.XListMapKeys), ", "))
	case s.XListType != nil && *s.XListType == "set":
		c = append(c, "no repeats")
	}
	return c
}

// enumOf is the values s allows, as code: its own enumeration, narrowed by
// every enumeration of its allOf.
func enumOf(s *schema) []string {
	var allowed []string
	set := false
	for _, e := range append([][]apiextensionsv1.JSON{s.Enum}, enumsOf(s.AllOf)...) {
		if len(e) == 0 {
			continue
		}
		vals := make([]string, len(e))
		for i, v := range e {
			vals[i] = code(literal(v.Raw))
		}
		if !set {
			allowed, set = vals, true
			continue
		}
		allowed = slices.DeleteFunc(allowed, func(v string) bool { return !slices.Contains(vals, v) })
	}
	return allowed
}

// enumsOf are the enumerations of schemas.
func enumsOf(schemas []schema) [][]apiextensionsv1.JSON {
	out := make([][]apiextensionsv1.JSON, 0, len(schemas))
	for _, s := range schemas {
		out = append(out, s.Enum)
	}
	return out
}

// appendRange appends a numeric range, as "1 to 65535", "at least 0" or
// "at most 8" ("above"/"below" when exclusive).
func appendRange(c []string, lo, hi *float64, exLo, exHi bool) []string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case lo != nil && hi != nil && !exLo && !exHi:
		return append(c, num(*lo)+" to "+num(*hi))
	case lo != nil && hi != nil:
		return append(c, bound(exLo, "at least ", "above ")+num(*lo), bound(exHi, "at most ", "below ")+num(*hi))
	case lo != nil:
		return append(c, bound(exLo, "at least ", "above ")+num(*lo))
	case hi != nil:
		return append(c, bound(exHi, "at most ", "below ")+num(*hi))
	}
	return c
}

// bound is inclusive's word, else exclusive's.
func bound(exclusive bool, inclusive, strict string) string {
	if exclusive {
		return strict
	}
	return inclusive
}

// appendCount appends a bound on a count of things ("at most 64 items",
// "1 to 8 characters").
func appendCount(c []string, lo, hi *int64, thing string) []string {
	plural := func(n int64) string {
		if n == 1 {
			return thing
		}
		if strings.HasSuffix(thing, "y") {
			return strings.TrimSuffix(thing, "y") + "ies"
		}
		return thing + "s"
	}
	switch {
	case lo != nil && hi != nil && *lo > 0:
		return append(c, fmt.Sprintf("%d to %d %s", *lo, *hi, plural(*hi)))
	case hi != nil:
		return append(c, fmt.Sprintf("at most %d %s", *hi, plural(*hi)))
	case lo != nil && *lo > 0:
		return append(c, fmt.Sprintf("at least %d %s", *lo, plural(*lo)))
	}
	return c
}

// defaultOf is a field's default as code, or nothing.
func defaultOf(s *schema) string {
	if s.Default == nil {
		return ""
	}
	return code(literal(s.Default.Raw))
}

// literal is a JSON value as a reader writes it in YAML: a string bare,
// anything else as compact JSON.
func literal(raw []byte) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// codes is each word as code.
func codes(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = code(w)
	}
	return out
}

// code is text as a code span inside a table cell: one backtick more than
// the text's longest run of them, and its pipes escaped as a table needs.
func code(text string) string {
	fence := "`"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(text, "|", `\|`) + pad + fence
}

var (
	// codeSpan is a code span of a description, whose text is shown as it
	// is: nothing in it is escaped but pipes.
	codeSpan = regexp.MustCompile("`[^`]+`")
	// listItem starts a line that is an item of a list in a doc comment.
	listItem = regexp.MustCompile(`^\s*(?:[-*]|[0-9]+\.)\s`)
	// markdown escapes what Markdown would read as markup outside code:
	// tags and entities, emphasis, links, backslash escapes. An underscore
	// is escaped only where it may open or close emphasis (plain):
	// CHALLENGE_HOST reads as written.
	markdown = strings.NewReplacer(`\`, `\\`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "*", `\*`,
		"[", `\[`, "]", `\]`, "~", `\~`, "|", `\|`)
)

// cell is a doc comment as the text of one table cell: its lines joined,
// its paragraphs and list items kept apart by line breaks, and escaped, so
// that a cell shows the comment's words as written.
func cell(text string) string {
	var paragraphs []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		var b strings.Builder
		for i, line := range strings.Split(strings.TrimSpace(p), "\n") {
			switch {
			case i == 0:
			case listItem.MatchString(line):
				b.WriteString("<br>")
			default:
				b.WriteString(" ")
			}
			b.WriteString(escape(strings.TrimSpace(line)))
		}
		if b.Len() > 0 {
			paragraphs = append(paragraphs, b.String())
		}
	}
	return strings.Join(paragraphs, "<br><br>")
}

// escape escapes a line of a doc comment outside its code spans.
func escape(line string) string {
	var b strings.Builder
	last := 0
	for _, loc := range codeSpan.FindAllStringIndex(line, -1) {
		b.WriteString(plain(line[last:loc[0]]))
		b.WriteString(strings.ReplaceAll(line[loc[0]:loc[1]], "|", `\|`))
		last = loc[1]
	}
	b.WriteString(plain(line[last:]))
	return b.String()
}

// plain escapes text outside code.
func plain(text string) string {
	runes := []rune(markdown.Replace(text))
	var b strings.Builder
	for i, r := range runes {
		if r == '_' && !(i > 0 && wordRune(runes[i-1]) && i+1 < len(runes) && wordRune(runes[i+1])) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wordRune is a letter or a digit: an underscore between two of them never
// opens or closes emphasis.
func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
