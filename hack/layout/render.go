package main

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// render writes the layout part: the picture, the rule, and one table per
// layer. Its links lead from the page through toRoot to the module's root.
func render(pkgs []pkg, toRoot string) string {
	var b strings.Builder
	b.WriteString("```mermaid\n")
	b.WriteString(mermaid(pkgs))
	b.WriteString("```\n\n")
	b.WriteString("The product's layers: an arrow is a layer's code importing another's, and the figure counts ")
	b.WriteString("the package imports; the tests and the tools may import any of them. A package may import packages ")
	b.WriteString("of its own layer and of those its layer's heading lists below; `make docs` fails on any other import by a ")
	b.WriteString("package's code (tests of a product package may also use the test helpers), and on a package ")
	fmt.Fprintf(&b, "no layer holds ([hack/layout/layers.go](%shack/layout/layers.go)).\n", toRoot)
	for _, l := range layers {
		in := inLayer(pkgs, l.ID)
		if len(in) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n**%s** (imports %s)\n\n| package | what |\n|---|---|\n", l.Title, mayImport(l))
		for _, p := range in {
			fmt.Fprintf(&b, "| %s | %s |\n", rowName(p.Rel), strings.ReplaceAll(p.Doc, "|", `\|`))
		}
	}
	return b.String()
}

// mayImport names the layers l may import, or says it imports none.
func mayImport(l layer) string {
	if len(l.MayImport) == 0 {
		return "no other layer"
	}
	names := make([]string, len(l.MayImport))
	for i, id := range l.MayImport {
		names[i] = layerByID(id).Short
	}
	return strings.Join(names, ", ")
}

// rowName is how the table names a package: its path, or main.go for the
// module's root.
func rowName(rel string) string {
	if rel == "." {
		return "`main.go` (`.`)"
	}
	return "`" + rel + "`"
}

// mermaid draws the product's layers, each with its packages' names, and the
// imports between them; the highest layer first, so that arrows point down.
// The tests and the tools, which may import anything, would only add arrows.
func mermaid(pkgs []pkg) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, l := range slices.Backward(layers) {
		in := inLayer(pkgs, l.ID)
		if !l.Product || len(in) == 0 {
			continue
		}
		names := make([]string, len(in))
		for i, p := range in {
			names[i] = shortName(p.Rel)
		}
		fmt.Fprintf(&b, "  %s[\"<b>%s</b><br/>%s\"]\n", l.ID, l.Short, wrap(names, 4))
	}
	edges := layerEdges(pkgs)
	keys := make([]edge, 0, len(edges))
	for e := range edges {
		if layerByID(e.From).Product {
			keys = append(keys, e)
		}
	}
	order := func(id string) int { return slices.IndexFunc(layers, func(l layer) bool { return l.ID == id }) }
	slices.SortFunc(keys, func(a, b edge) int {
		if d := order(b.From) - order(a.From); d != 0 {
			return d
		}
		return order(b.To) - order(a.To)
	})
	for _, e := range keys {
		fmt.Fprintf(&b, "  %s -->|%d| %s\n", e.From, edges[e], e.To)
	}
	return b.String()
}

// inLayer is the packages of the layer, by path.
func inLayer(pkgs []pkg, id string) []pkg {
	var in []pkg
	for _, p := range pkgs {
		if p.Layer == id {
			in = append(in, p)
		}
	}
	slices.SortFunc(in, func(a, b pkg) int { return strings.Compare(a.Rel, b.Rel) })
	return in
}

// shortName is how the picture names a package: its path without the
// internal/, hack/ or test/ every package of its layer shares; main for the
// module's root.
func shortName(rel string) string {
	if rel == "." {
		return "main"
	}
	for _, prefix := range []string{"internal/", "hack/", "test/"} {
		if rest, ok := strings.CutPrefix(rel, prefix); ok {
			return rest
		}
	}
	return path.Base(rel)
}

// wrap joins the names, n to a line.
func wrap(names []string, n int) string {
	var lines []string
	for chunk := range slices.Chunk(names, n) {
		lines = append(lines, strings.Join(chunk, ", "))
	}
	return strings.Join(lines, "<br/>")
}
