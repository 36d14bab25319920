package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// controllerNames are the names the product's controllers are registered
// under, read from the code below dir: the argument of every builder's
// Named("...") and every constant whose name ends in ControllerName (the
// Helm controllers, which are built without the builder).
func controllerNames(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Named" && len(n.Args) == 1 {
					names = appendString(names, n.Args[0])
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if strings.HasSuffix(id.Name, "ControllerName") && i < len(n.Values) {
						names = appendString(names, n.Values[i])
					}
				}
			}
			return true
		})
		return nil
	})
	return names, err
}

// appendString appends e's value if it is a string literal.
func appendString(names []string, e ast.Expr) []string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return names
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return names
	}
	return append(names, s)
}

// listedController is an entry of the architecture page's list of
// controllers: a bullet that opens with the controller's name in bold code.
var listedController = regexp.MustCompile("(?m)^- \\*\\*`([a-z0-9-]+)`\\*\\*")

// TestArchitectureListsEveryController fails when the architecture page's
// list of the operator's controllers and the controllers the code registers
// differ: a controller added, renamed or removed without the page saying so
// (the page once said four where there were ten).
func TestArchitectureListsEveryController(t *testing.T) {
	g := NewWithT(t)
	inCode, err := controllerNames("../../internal")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inCode).To(ContainElements("challenge-controller", "challenge-status"), "the code's controllers are found")
	page, err := os.ReadFile("../../docs/architecture.md")
	g.Expect(err).NotTo(HaveOccurred())
	var listed []string
	for _, m := range listedController.FindAllStringSubmatch(string(page), -1) {
		listed = append(listed, m[1])
	}
	g.Expect(listed).To(ConsistOf(inCode), "docs/architecture.md lists the controllers the code registers, each once")
}

func TestControllerNames(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "c.go"), []byte(`package c
const HelmControllerName = "helm"
const other = "not-a-controller"
func setup() { b.Named("status").For(x); NewNamed("no"); b.Named(name) }
`), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "c_test.go"), []byte(`package c
func init() { b.Named("a-test") }
`), 0o644)).To(Succeed())
	names, err := controllerNames(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(ConsistOf("helm", "status"))
}
