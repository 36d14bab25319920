// Command bundle-gen writes the OLM bundle built from config/manifests (with
// the kustomize library): bundle/manifests, bundle/metadata and bundle.Dockerfile.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/challenge-operator/challenge-operator/internal/bundle"
)

func main() {
	var opts bundle.Options
	var channels, out string
	flag.StringVar(&opts.Version, "version", "", "Operator version (semver).")
	flag.StringVar(&opts.Image, "image", "", "Operator image.")
	flag.StringVar(&opts.CreatedAt, "created-at", "", "CSV createdAt annotation.")
	flag.StringVar(&channels, "channels", "stable,candidate", "Channels; the first is the default.")
	flag.StringVar(&out, "dir", ".", "Repository root: reads config/manifests, writes bundle/ and bundle.Dockerfile.")
	flag.Parse()
	opts.Channels = strings.Split(channels, ",")
	files, err := bundle.FromKustomization(filepath.Join(out, "config", "manifests"), opts)
	if err == nil {
		err = write(out, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundle-gen:", err)
		os.Exit(1)
	}
}

// write replaces bundle/ with files, so a removed manifest does not linger.
func write(root string, files map[string][]byte) error {
	if err := os.RemoveAll(filepath.Join(root, "bundle")); err != nil {
		return err
	}
	for path, data := range files {
		dest := filepath.Join(root, "bundle", path)
		if path == "bundle.Dockerfile" {
			dest = filepath.Join(root, path)
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dest, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
