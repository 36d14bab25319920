// Command bundle-gen writes the OLM bundle built from config/manifests (with
// the kustomize library): bundle/manifests, bundle/metadata and bundle.Dockerfile.
//
// With --namespaced-rbac it writes config/namespaced/role.yaml instead: the
// manager's ClusterRole (config/rbac/role.yaml, from the markers) split by
// scope into a Role and a small ClusterRole, the way the bundle's
// permissions and clusterPermissions are split. `make manifests` runs it.
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
	var namespacedRBAC bool
	flag.StringVar(&opts.Version, "version", "", "Operator version (semver).")
	flag.StringVar(&opts.Image, "image", "", "Operator image.")
	flag.StringVar(&opts.CreatedAt, "created-at", "", "CSV createdAt annotation.")
	flag.StringVar(&channels, "channels", "stable,candidate", "Channels; the first is the default.")
	flag.StringVar(&out, "dir", ".", "Repository root: reads config/, writes bundle/ and bundle.Dockerfile (or config/namespaced/role.yaml).")
	flag.BoolVar(&namespacedRBAC, "namespaced-rbac", false, "Write config/namespaced/role.yaml (the manager's role split by scope) instead of the bundle.")
	flag.Parse()
	if namespacedRBAC {
		if err := writeNamespacedRBAC(out); err != nil {
			fmt.Fprintln(os.Stderr, "bundle-gen:", err)
			os.Exit(1)
		}
		return
	}
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

// writeNamespacedRBAC writes the Role and ClusterRole of config/namespaced.
func writeNamespacedRBAC(root string) error {
	config := filepath.Join(root, "config")
	data, err := bundle.NamespacedRBAC(filepath.Join(config, "rbac", "role.yaml"), filepath.Join(config, "crd"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(config, "namespaced", "role.yaml"), data, 0o644)
}
