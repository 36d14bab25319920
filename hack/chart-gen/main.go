// Command chart-gen writes the generated parts of the install chart
// (dist/chart: CRDs, RBAC, alerts, dashboard, values schema) from config/,
// the flags of the operator and the instancer, and values.schema.json beside
// it (internal/installchart). `make manifests` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/challenge-operator/challenge-operator/internal/installchart"
)

func main() {
	root := flag.String("dir", ".", "Repository root: reads config/ and hack/chart-gen, writes dist/chart.")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "chart-gen:", err)
		os.Exit(1)
	}
}

// write replaces the generated paths of the chart, so a removed file does not linger.
func write(root string) error {
	files, err := installchart.Generate(root)
	if err != nil {
		return err
	}
	chart := filepath.Join(root, installchart.Dir)
	for _, p := range installchart.Generated {
		if err := os.RemoveAll(filepath.Join(chart, p)); err != nil {
			return err
		}
	}
	for p, data := range files {
		dest := filepath.Join(chart, p)
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dest, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
