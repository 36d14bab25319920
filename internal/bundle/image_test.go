package bundle

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestImageLayoutMatchesTheManagerArgs lays out the files as the Dockerfile
// copies them, then loads the watches file the manager Deployment names from
// the working directory the Dockerfile sets: the image can only start if this works.
func TestImageLayoutMatchesTheManagerArgs(t *testing.T) {
	g := NewWithT(t)
	image := t.TempDir()
	workdir := "/"
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	final := false
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
		case fields[0] == "FROM":
			final = strings.Contains(scanner.Text(), "distroless")
		case final && fields[0] == "WORKDIR":
			workdir = fields[1]
		case final && fields[0] == "USER":
			g.Expect(fields[1]).NotTo(HavePrefix("0"), "runs as non-root")
		case final && fields[0] == "COPY" && !strings.HasPrefix(fields[1], "--from"):
			dest := filepath.Join(image, fields[2])
			g.Expect(os.MkdirAll(filepath.Dir(dest), 0o755)).To(Succeed())
			g.Expect(exec.Command("cp", "-r", filepath.Join(root, fields[1]), dest).Run()).To(Succeed(), "COPY %s", fields[1])
		}
	}
	g.Expect(final).To(BeTrue(), "the last stage is distroless")

	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var watchesFile string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var d appsv1.Deployment
		g.Expect(yaml.Unmarshal([]byte(doc), &d)).To(Succeed())
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--watches-file="); ok {
					watchesFile = v
				}
			}
		}
	}
	g.Expect(watchesFile).NotTo(BeEmpty(), "config/manager sets --watches-file")

	t.Chdir(filepath.Join(image, workdir))
	ws, err := watches.Load(filepath.Join(image, watchesFile))
	g.Expect(err).NotTo(HaveOccurred(), "watches.yaml and the chart are where the manager looks")
	g.Expect(ws).To(HaveLen(1))
	g.Expect(ws[0].Chart.Metadata.Name).To(Equal("challenge"))
}
