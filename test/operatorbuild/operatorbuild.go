// Package operatorbuild builds the operator's binary from the working tree
// for the tests that run it as a process of its own, as a cluster would (the
// fault suite, the instancer's replicas, a Helm install's operator): once per
// test process however many tests ask, since the build is slower than most of
// those tests.
package operatorbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

var (
	once sync.Once
	// dir holds the binary; Remove deletes it.
	dir  string
	path string
	err  error
)

// Binary returns the path of the operator's binary, built from the working
// tree (`go build .` at the repository root) into a temporary directory on
// the first call. A failed build fails every call, with the compiler's output.
func Binary() (string, error) {
	once.Do(func() { path, err = build() })
	return path, err
}

func build() (string, error) {
	var err error
	if dir, err = os.MkdirTemp("", "operator-build-"); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "challenge-operator")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = controlplane.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the operator: %w\n%s", err, out)
	}
	return bin, nil
}

// Remove deletes the binary and its directory. A TestMain calls it once its
// tests have run: the binary outlives any one test, so no test can.
func Remove() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
