package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/challenge-operator/challenge-operator/internal/importer"
)

// secret stands for what lies beside the challenge's folder on the
// organiser's machine (a kubeconfig's token): no import may carry it.
const secret = "organiser-kubeconfig-token-7f3a"

// TestImportReadsOnlyItsFolder: a compose file that names a file outside its
// own directory, by ../, an absolute path, ~, a link inside that points out,
// as a bind mount, env_file, config, secret, label_file, extends or include,
// never has that file's content in what the import writes (the template, the
// report or the error), and the refusal is reported, naming the file.
func TestImportReadsOnlyItsFolder(t *testing.T) {
	for _, tt := range []struct {
		name string
		// compose is the file; {{out}} stands for the outside directory.
		compose string
		// links are symbolic links made in the folder, to their targets.
		links map[string]string
		// files are other files of the folder.
		files map[string]string
		// refused is what the refusal names; "" where nothing is read at all
		// (the content must be absent all the same).
		refused string
	}{
		{name: "bind mount by ../", compose: bind("../outside/secret.txt"), refused: "secret.txt"},
		{name: "bind mount by absolute path", compose: bind("{{out}}/secret.txt"), refused: "secret.txt"},
		{name: "bind mount by ~", compose: bind("~/.kube/config"), refused: ".kube/config"},
		{name: "bind mount of a link pointing out", compose: bind("./cfg"), links: map[string]string{"cfg": "{{out}}/secret.txt"}, refused: "cfg"},
		{name: "bind mount under a linked directory", compose: bind("./etc/secret.txt"), links: map[string]string{"etc": "{{out}}"}, refused: "etc/secret.txt"},
		{name: "env_file by ../", compose: envFile("../outside/secret.env"), refused: "secret.env"},
		{name: "env_file by absolute path", compose: envFile("{{out}}/secret.env"), refused: "secret.env"},
		{name: "env_file by ~", compose: envFile("~/secret.env"), refused: "secret.env"},
		{name: "env_file of a link pointing out", compose: envFile("./app.env"), links: map[string]string{"app.env": "{{out}}/secret.env"}, refused: "app.env"},
		{name: "env_file of a pre_start hook", compose: `
services:
  web:
    image: busybox
    pre_start:
      - command: ["true"]
        env_file: ../outside/secret.env
`, refused: "secret.env"},
		{name: "config by ../", compose: config("../outside/secret.txt"), refused: "secret.txt"},
		{name: "config of a link pointing out", compose: config("./cfg"), links: map[string]string{"cfg": "{{out}}/secret.txt"}, refused: "cfg"},
		{name: "secret by ../", compose: `
services:
  web:
    image: busybox
    secrets: [token]
secrets:
  token:
    file: ../outside/secret.txt
`},
		{name: "label_file by ../", compose: `
services:
  web:
    image: busybox
    label_file: ../outside/secret.env
`},
		{name: "build context by ../", compose: `
services:
  web:
    build: ../outside
`},
		{name: "extends by ../", compose: extends("../outside/secret.yml"), refused: "secret.yml"},
		{name: "extends by absolute path", compose: extends("{{out}}/secret.yml"), refused: "secret.yml"},
		{name: "extends of a link pointing out", compose: extends("./base.yml"), links: map[string]string{"base.yml": "{{out}}/secret.yml"}, refused: "base.yml"},
		{name: "include by ../", compose: "include: [../outside/secret.yml]\n" + bind("./nothing"), refused: "secret.yml"},
		{name: "include of a link pointing out", compose: "include: [./base.yml]\n" + bind("./nothing"), links: map[string]string{"base.yml": "{{out}}/secret.yml"}, refused: "base.yml"},
		{name: "include's env_file", compose: `
include:
  - path: ./inc/compose.yml
    env_file: ../outside/secret.env
`, files: map[string]string{"inc/compose.yml": usesToken}, refused: "env_file"},
		{name: "include's project_directory", compose: `
include:
  - path: ./inc/compose.yml
    project_directory: ../outside
`, files: map[string]string{"inc/compose.yml": usesToken}, refused: "project_directory"},
		{name: "include whose .env links out", compose: "include: [./inc/compose.yml]\n",
			files: map[string]string{"inc/compose.yml": usesToken}, links: map[string]string{"inc/.env": "{{out}}/secret.env"}, refused: ".env"},
		{name: "include that includes out", compose: "include: [./inc/compose.yml]\n",
			files: map[string]string{"inc/compose.yml": "include: [../../outside/secret.yml]\n" + usesToken}, refused: "secret.yml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir, out := folder(t)
			for name, content := range tt.files {
				g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
			}
			for name, target := range tt.links {
				g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
				g.Expect(os.Symlink(strings.ReplaceAll(target, "{{out}}", out), filepath.Join(dir, name))).To(Succeed())
			}
			compose := filepath.Join(dir, "docker-compose.yml")
			g.Expect(os.WriteFile(compose, []byte(strings.ReplaceAll(tt.compose, "{{out}}", out)), 0o644)).To(Succeed())

			res, err := importer.FromCompose(context.Background(), "chal", compose, importer.Options{})
			written := ""
			if err != nil {
				written = err.Error()
			} else {
				y, yerr := res.YAML()
				g.Expect(yerr).NotTo(HaveOccurred())
				written = string(y) + strings.Join(res.Report.Lines(), "\n")
			}
			// Not Expect(written).NotTo(ContainSubstring(secret)): a failure would print it.
			g.Expect(strings.Contains(written, secret)).To(BeFalse(), "the outside file's content is in the import's output")
			if tt.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			if err != nil {
				g.Expect(err.Error()).To(And(ContainSubstring(tt.refused), ContainSubstring("outside")), "the error names the file and why")
				return
			}
			g.Expect(res.Report.Lines()).To(ContainElement(And(HavePrefix("refused: "), ContainSubstring(tt.refused), ContainSubstring("outside"))),
				"the report names the refused file and why")
		})
	}
}

// TestImportReadsItsFolder: files of the compose file's own directory,
// through links that stay inside it too, are carried as before.
func TestImportReadsItsFolder(t *testing.T) {
	g := NewWithT(t)
	dir, _ := folder(t)
	for name, content := range map[string]string{
		"conf/app.env":     "MODE=inside\n",
		"conf/nginx.conf":  "worker_processes 1;\n",
		"base/compose.yml": "services:\n  base:\n    image: busybox\n    environment:\n      FROM_BASE: \"yes\"\n",
		"inc/compose.yml":  "services:\n  cache:\n    image: redis\n    environment:\n      LEVEL: ${LEVEL}\n",
		"inc/.env":         "LEVEL=from-include-env\n",
		"docker-compose.yml": `
include: [./inc/compose.yml]
services:
  web:
    extends:
      file: ./base/compose.yml
      service: base
    env_file: ./app.env
    volumes:
      - ./nginx.conf:/etc/nginx/nginx.conf:ro
`,
	} {
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	g.Expect(os.Symlink("conf/app.env", filepath.Join(dir, "app.env"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Join(dir, "conf", "nginx.conf"), filepath.Join(dir, "nginx.conf"))).To(Succeed())

	res, err := importer.FromCompose(context.Background(), "chal", filepath.Join(dir, "docker-compose.yml"), importer.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Report.Lines()).NotTo(ContainElement(HavePrefix("refused: ")))
	spec := res.Template.Spec
	g.Expect(spec.Env).To(ContainElement(HaveField("Value", "from-include-env")), "the included file's .env")
	g.Expect(spec.Components).To(HaveLen(1))
	web := spec.Components[0]
	g.Expect(web.Env).To(ContainElements(HaveField("Value", "inside"), HaveField("Value", "yes")), "env_file through a link, and extends")
	g.Expect(web.Files).To(HaveExactElements(HaveField("Content", "worker_processes 1;\n")), "a file through a link")
}

// usesToken is a compose file that carries $TOKEN into a service.
const usesToken = "services:\n  inc:\n    image: busybox\n    environment:\n      TOKEN: ${TOKEN:-unset}\n"

// folder makes a challenge's folder beside a directory holding the secret in
// every form a compose file could read it, and a home directory holding it
// too ($HOME for ~).
func folder(t *testing.T) (dir, out string) {
	base := t.TempDir()
	dir, out, home := filepath.Join(base, "challenge"), filepath.Join(base, "outside"), filepath.Join(base, "home")
	for name, content := range map[string]string{
		filepath.Join(out, "secret.txt"):           secret + "\n",
		filepath.Join(out, "secret.env"):           "TOKEN=" + secret + "\n",
		filepath.Join(out, "secret.yml"):           "services:\n  base:\n    image: busybox\n    environment:\n      TOKEN: " + secret + "\n",
		filepath.Join(out, ".env"):                 "TOKEN=" + secret + "\n",
		filepath.Join(home, ".kube", "config"):     "token: " + secret + "\n",
		filepath.Join(home, "secret.env"):          "TOKEN=" + secret + "\n",
		filepath.Join(dir, "nothing", "README.md"): "",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	return dir, out
}

func bind(source string) string {
	return "services:\n  web:\n    image: busybox\n    volumes:\n      - " + source + ":/etc/app.conf:ro\n"
}

func envFile(path string) string {
	return "services:\n  web:\n    image: busybox\n    env_file: " + path + "\n"
}

func config(path string) string {
	return "services:\n  web:\n    image: busybox\n    configs:\n      - source: app\n        target: /etc/app.conf\nconfigs:\n  app:\n    file: " + path + "\n"
}

func extends(path string) string {
	return "services:\n  web:\n    extends:\n      file: " + path + "\n      service: base\n"
}
