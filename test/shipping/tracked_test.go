package shipping

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// maxTrackedSize is the largest file the repository may track, documentation
// aside: anything bigger is a build output or a data dump (a 108 MB binary
// was once committed at the root unnoticed).
const maxTrackedSize = 1 << 20

// TestNoBuildOutputIsTracked fails on any tracked file over 1 MiB that is not
// documentation. `make verify` runs it.
func TestNoBuildOutputIsTracked(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var big []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		info, err := os.Stat(filepath.Join(root, name))
		if err != nil || isDocumentation(name) {
			continue // deleted in the work tree, or allowed
		}
		if info.Size() > maxTrackedSize {
			big = append(big, name)
		}
	}
	g.Expect(big).To(BeEmpty(), "tracked files over 1 MiB: build outputs belong in .gitignore")
}

// isDocumentation tells the files that may be large: docs/ and the
// documents and pictures beside the code.
func isDocumentation(name string) bool {
	if strings.HasPrefix(name, "docs/") {
		return true
	}
	switch filepath.Ext(name) {
	case ".md", ".png", ".svg", ".jpg":
		return true
	}
	return false
}

func TestIsDocumentation(t *testing.T) {
	g := NewWithT(t)
	for name, want := range map[string]bool{
		"bench": false, "hack/bench/bench": false, "bin/manager": false, "charts/challenge/values.yaml": false,
		"docs/benchmarks.json": true, "README.md": true, "docs/instancer.png": true,
	} {
		g.Expect(isDocumentation(name)).To(Equal(want), name)
	}
}
