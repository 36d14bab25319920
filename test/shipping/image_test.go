package shipping

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

var root = controlplane.RepoRoot()

// TestImageBuildsFromItsContext builds the operator image without a container
// engine: it assembles the build context exactly as .dockerignore filters it,
// replays every stage of the Dockerfile (COPY from the context or an earlier
// stage, WORKDIR, ARG, RUN in the stage's working directory), then starts the
// binary at the entrypoint and loads the watches file the manager Deployment
// names, from the working directory the image sets. A file the build needs
// but the context lacks fails here as it would in a real build.
func TestImageBuildsFromItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the operator")
	}
	g := NewWithT(t)
	buildContext := assembleContext(t)

	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	ast, err := parser.Parse(f)
	g.Expect(err).NotTo(HaveOccurred())
	stages, _, err := instructions.Parse(ast.AST, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stages).To(HaveLen(2), "a build stage and the image")

	g.Expect(goVersionOf(stages[0].BaseName)).To(Equal(goDirective(t)), "the build stage's Go is go.mod's")
	roots := map[string]string{}
	var image *stageRun
	for _, st := range stages {
		image = &stageRun{t: t, root: t.TempDir(), workdir: "/", context: buildContext, stages: roots}
		for _, cmd := range st.Commands {
			image.run(cmd)
		}
		roots[st.Name] = image.root
	}
	final := stages[len(stages)-1]
	g.Expect(final.BaseName).To(HavePrefix("gcr.io/distroless/static"), "the image is distroless")
	g.Expect(image.user).NotTo(BeEmpty(), "the image names its user")
	g.Expect(image.user).NotTo(HavePrefix("0"), "the image runs as non-root")
	g.Expect(image.user).NotTo(HavePrefix("root"), "the image runs as non-root")

	g.Expect(image.entrypoint).NotTo(BeEmpty())
	help, err := exec.Command(image.path(image.entrypoint[0]), "--help").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "the entrypoint runs: %s", help)
	g.Expect(string(help)).To(ContainSubstring("-watches-file"))
	token, _ := exec.Command(image.path(image.entrypoint[0]), "token").CombinedOutput()
	g.Expect(string(token)).To(ContainSubstring("give --key-dir or --key-secret"), "the token subcommand is built in")

	watchesFile := managerWatchesFile(t)
	t.Chdir(image.path(image.workdir))
	ws, err := watches.Load(image.path(watchesFile))
	g.Expect(err).NotTo(HaveOccurred(), "watches.yaml and the chart are where the manager looks")
	g.Expect(ws).To(HaveLen(1))
	g.Expect(ws[0].Chart.Metadata.Name).To(Equal("challenge"))
}

// assembleContext copies the repository's files that .dockerignore admits
// into a new directory, as a builder sends its context.
func assembleContext(t *testing.T) string {
	g := NewWithT(t)
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	patterns, err := ignorefile.ReadAll(f)
	g.Expect(err).NotTo(HaveOccurred())
	pm, err := patternmatcher.New(patterns)
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		excluded, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && excluded && !pm.Exclusions():
			return filepath.SkipDir
		case d.IsDir() || excluded:
			return nil
		}
		n++
		return copyFile(p, filepath.Join(dir, rel))
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 0))
	return dir
}

// stageRun is one stage being replayed into a directory that stands for its
// root filesystem.
type stageRun struct {
	t          *testing.T
	root       string
	workdir    string
	context    string
	stages     map[string]string
	env        []string
	user       string
	entrypoint []string
}

// path maps a path of the stage (absolute, or relative to its WORKDIR) into
// the directory that stands for its root.
func (s *stageRun) path(p string) string {
	if !path.IsAbs(p) {
		p = path.Join(s.workdir, p)
	}
	return filepath.Join(s.root, filepath.FromSlash(p))
}

func (s *stageRun) run(cmd instructions.Command) {
	g := NewWithT(s.t)
	switch c := cmd.(type) {
	case *instructions.WorkdirCommand:
		s.workdir = path.Join(s.workdir, c.Path)
		g.Expect(os.MkdirAll(s.path("."), 0o755)).To(Succeed())
	case *instructions.ArgCommand:
		for _, a := range c.Args {
			if a.Value != nil {
				s.env = append(s.env, a.Key+"="+*a.Value)
			}
		}
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			s.env = append(s.env, kv.Key+"="+kv.Value)
		}
	case *instructions.CopyCommand:
		s.copy(c)
	case *instructions.RunCommand:
		g.Expect(c.PrependShell).To(BeTrue(), "RUN in shell form")
		line := strings.Join(c.CmdLine, " ")
		g.Expect(absolutePath.FindString(line)).To(BeEmpty(), "RUN %q writes only below WORKDIR, so that it can be replayed", line)
		run := exec.Command("sh", "-c", line)
		run.Dir = s.path(".")
		run.Env = append(os.Environ(), s.env...)
		out, err := run.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "RUN %s:\n%s", line, out)
	case *instructions.UserCommand:
		s.user = c.User
	case *instructions.EntrypointCommand:
		g.Expect(c.PrependShell).To(BeFalse(), "ENTRYPOINT in exec form: distroless has no shell")
		s.entrypoint = c.CmdLine
	default:
		s.t.Fatalf("the replay does not know %s", c.Name())
	}
}

// absolutePath finds an absolute path in a shell command line.
var absolutePath = regexp.MustCompile(`(^|[\s=])/[^\s]*`)

// copy replays COPY: from the context, or --from an earlier stage; a
// directory source copies its contents.
func (s *stageRun) copy(c *instructions.CopyCommand) {
	g := NewWithT(s.t)
	g.Expect(c.Chown + c.Chmod).To(BeEmpty())
	from := s.context
	if c.From != "" {
		g.Expect(s.stages).To(HaveKey(c.From), "COPY --from an earlier stage")
		from = s.stages[c.From]
	}
	dest := s.path(c.DestPath)
	intoDir := strings.HasSuffix(c.DestPath, "/") || len(c.SourcePaths) > 1
	for _, src := range c.SourcePaths {
		matches, err := filepath.Glob(filepath.Join(from, filepath.FromSlash(src)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(matches).NotTo(BeEmpty(), "COPY %s: not in the build context", src)
		for _, m := range matches {
			info, err := os.Stat(m)
			g.Expect(err).NotTo(HaveOccurred())
			switch {
			case info.IsDir():
				g.Expect(copyTree(m, dest)).To(Succeed())
			case intoDir:
				g.Expect(copyFile(m, filepath.Join(dest, filepath.Base(m)))).To(Succeed())
			default:
				g.Expect(copyFile(m, dest)).To(Succeed())
			}
		}
	}
}

func copyTree(src, dest string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		return copyFile(p, filepath.Join(dest, rel))
	})
}

func copyFile(src, dest string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dest, data, info.Mode().Perm())
}

// goVersionOf is the Go release of a golang image tag ("golang:1.26" -> 1.26).
func goVersionOf(image string) string {
	_, tag, _ := strings.Cut(image, ":")
	tag, _, _ = strings.Cut(tag, "-")
	return majorMinor(tag)
}

// goDirective is the release go.mod asks for.
func goDirective(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(data)
	NewWithT(t).Expect(m).NotTo(BeNil(), "go.mod has a go directive")
	return majorMinor(string(m[1]))
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// managerWatchesFile is the --watches-file the manager Deployment passes.
func managerWatchesFile(t *testing.T) string {
	g := NewWithT(t)
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
	return watchesFile
}
