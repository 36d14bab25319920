package flagwritecmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The values tests deliver; no output may contain one, nor its hash unless
// it was the one expected.
const (
	flagA = "CTF{team-a-first-9f8e7d}"
	flagB = "CTF{team-a-second-1c2b3a}"
	stale = "CTF{the-last-team-s-flag}"
)

func sumOf(v string) string {
	s := sha256.Sum256([]byte(v))
	return hex.EncodeToString(s[:])
}

// fileArg is the --file flag writing the value v of env to path.
func fileArg(path, env, mode, v string) []string {
	return []string{"--file", fmt.Sprintf("%s=%s:%s:%s", path, env, mode, sumOf(v))}
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// expectNoValue fails if text holds any of the values, or the hash of a
// value that was not the one expected.
func expectNoValue(g Gomega, text string, values ...string) {
	for _, v := range values {
		g.Expect(text).NotTo(ContainSubstring(v))
	}
	g.Expect(text).NotTo(ContainSubstring(sumOf(stale)))
}

// entries lists dir's names, to show no temporary file is left behind.
func entries(g Gomega, dir string) []string {
	des, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestRunWritesEachFileWithItsContentAndMode(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.Mkdir(filepath.Join(dir, "web"), 0o755)).To(Succeed())
	a, b := filepath.Join(dir, "flag.txt"), filepath.Join(dir, "web", "flag")
	args := append(fileArg(a, "FLAG_0", "0444", flagA), fileArg(b, "FLAG_1", "0400", flagB)...)
	var stderr bytes.Buffer

	err := Run(args, envOf(map[string]string{"FLAG_0": flagA, "FLAG_1": flagB}), &stderr)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ExitCode(err)).To(Equal(0))

	for _, tt := range []struct {
		path, want string
		mode       fs.FileMode
	}{{a, flagA, 0o444}, {b, flagB, 0o400}} {
		got, err := os.ReadFile(tt.path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(got)).To(Equal(tt.want))
		st, err := os.Stat(tt.path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Mode()).To(Equal(tt.mode), tt.path)
	}
	g.Expect(entries(g, dir)).To(ConsistOf("flag.txt", "web"))
	g.Expect(entries(g, filepath.Join(dir, "web"))).To(ConsistOf("flag"))
	g.Expect(stderr.String()).To(Equal(fmt.Sprintf("wrote %s (mode 0444)\nwrote %s (mode 0400)\n", a, b)))
	expectNoValue(g, stderr.String(), flagA, flagB)
}

func TestRunWritesNothingWhenAValueIsStale(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	g.Expect(os.WriteFile(a, []byte("the pool's placeholder"), 0o444)).To(Succeed())
	args := append(fileArg(a, "FLAG_0", "0444", flagA), fileArg(b, "FLAG_1", "0444", flagB)...)
	args = append(args, fileArg(c, "FLAG_2", "0444", flagA)...)
	var stderr bytes.Buffer

	// The kubelet's cache still holds the previous value of the second flag.
	err := Run(args, envOf(map[string]string{"FLAG_0": flagA, "FLAG_1": stale, "FLAG_2": flagA}), &stderr)

	g.Expect(err).To(MatchError(ErrStale))
	g.Expect(ExitCode(err)).To(Equal(ExitStale))
	g.Expect(err.Error()).To(Equal("the value of FLAG_1 is not the one expected (a stale Secret; want sha256 " + sumOf(flagB) + "): nothing written"))
	expectNoValue(g, err.Error()+stderr.String(), flagA, flagB, stale)
	got, rerr := os.ReadFile(a)
	g.Expect(rerr).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal("the pool's placeholder"), "the first file, before the stale one, is not written either")
	g.Expect(entries(g, dir)).To(ConsistOf("a"))
	g.Expect(stderr.String()).To(BeEmpty())
}

func TestRunRefusesAMissingOrEmptyValue(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{name: "missing", env: map[string]string{"FLAG_0": flagA}},
		{name: "empty", env: map[string]string{"FLAG_0": flagA, "FLAG_1": ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			args := append(fileArg(a, "FLAG_0", "0444", flagA), fileArg(b, "FLAG_1", "0444", flagB)...)
			var stderr bytes.Buffer

			err := Run(args, envOf(tt.env), &stderr)

			g.Expect(err).To(MatchError("the variable FLAG_1 (for " + b + ") is empty or not set: nothing written"))
			g.Expect(ExitCode(err)).To(Equal(ExitFailed))
			expectNoValue(g, err.Error()+stderr.String(), flagA, flagB)
			g.Expect(entries(g, dir)).To(BeEmpty())
		})
	}
}

func TestRunRefusesATargetNoRenameCouldReach(t *testing.T) {
	for _, tt := range []struct {
		name    string
		second  func(dir string) string
		wantErr string
	}{
		{name: "a missing directory", second: func(dir string) string { return filepath.Join(dir, "nodir", "flag") }, wantErr: "no such file or directory"},
		{name: "a directory's path", second: func(dir string) string {
			p := filepath.Join(dir, "flag")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, wantErr: "flag is a directory"},
		{name: "a file's path as directory", second: func(dir string) string {
			p := filepath.Join(dir, "file")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(p, "flag")
		}, wantErr: "file is not a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			a := filepath.Join(dir, "a")
			b := tt.second(dir)
			before := entries(g, dir)
			args := append(fileArg(a, "FLAG_0", "0444", flagA), fileArg(b, "FLAG_1", "0444", flagB)...)

			err := Run(args, envOf(map[string]string{"FLAG_0": flagA, "FLAG_1": flagB}), &bytes.Buffer{})

			g.Expect(err).To(MatchError(And(ContainSubstring(tt.wantErr), HaveSuffix(": nothing written"))))
			expectNoValue(g, err.Error(), flagA, flagB)
			g.Expect(entries(g, dir)).To(Equal(before), "the first file is not written")
		})
	}
}

func TestRunNamesThePathWhoseWriteFailed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc, a directory where nobody, root included, creates a file")
	}
	g := NewWithT(t)
	a := filepath.Join(t.TempDir(), "a")
	args := append(fileArg(a, "FLAG_0", "0444", flagA), fileArg("/proc/flag", "FLAG_1", "0444", flagB)...)
	var stderr bytes.Buffer

	err := Run(args, envOf(map[string]string{"FLAG_0": flagA, "FLAG_1": flagB}), &stderr)

	g.Expect(err).To(MatchError(HavePrefix("writing /proc/flag (1 of 2 files written before it): ")))
	expectNoValue(g, err.Error()+stderr.String(), flagA, flagB)
	g.Expect(stderr.String()).To(Equal("wrote " + a + " (mode 0444)\n"))
}

func TestRunReplacesAnExistingFileAtomically(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "flag.txt")
	g.Expect(os.WriteFile(path, []byte("the pool's placeholder, longer than the flag"), 0o600)).To(Succeed())
	// A reader that opened the old file keeps reading the old file whole: the
	// new one replaces the name, not the content in place.
	old, err := os.Open(path)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = old.Close() }()

	g.Expect(Run(fileArg(path, "FLAG", "0444", flagA), envOf(map[string]string{"FLAG": flagA}), &bytes.Buffer{})).To(Succeed())

	got, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(flagA))
	st, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode()).To(Equal(fs.FileMode(0o444)))
	was, err := os.ReadFile(old.Name())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(was)).To(Equal(flagA))
	var held bytes.Buffer
	_, err = held.ReadFrom(old)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(held.String()).To(Equal("the pool's placeholder, longer than the flag"))
	g.Expect(entries(g, dir)).To(ConsistOf("flag.txt"))
}

func TestRunReplacesASymlinkNotItsTarget(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	g.Expect(os.WriteFile(target, []byte("not the writer's to touch"), 0o644)).To(Succeed())
	path := filepath.Join(dir, "flag.txt")
	g.Expect(os.Symlink(target, path)).To(Succeed())

	g.Expect(Run(fileArg(path, "FLAG", "0444", flagA), envOf(map[string]string{"FLAG": flagA}), &bytes.Buffer{})).To(Succeed())

	st, err := os.Lstat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode().IsRegular()).To(BeTrue())
	got, err := os.ReadFile(target)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal("not the writer's to touch"))
}

func TestRunRefusesBadArguments(t *testing.T) {
	sum := sumOf(flagA)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no file", args: nil, wantErr: "no --file: nothing to write"},
		{name: "a positional argument", args: []string{"--file", "/f/a=FLAG:0444:" + sum, "/f/b"}, wantErr: `unexpected argument "/f/b"`},
		{name: "an unknown flag", args: []string{"--path", "/f/a"}, wantErr: "flag provided but not defined: -path"},
		{name: "no =", args: []string{"--file", "/f/a:FLAG:0444:" + sum}, wantErr: "want PATH=ENV:MODE:SHA256"},
		{name: "two fields", args: []string{"--file", "/f/a=FLAG:" + sum}, wantErr: "want PATH=ENV:MODE:SHA256"},
		{name: "four fields", args: []string{"--file", "/f/a=FLAG:0444:" + sum + ":x"}, wantErr: "want PATH=ENV:MODE:SHA256"},
		{name: "a relative path", args: []string{"--file", "f/a=FLAG:0444:" + sum}, wantErr: `path "f/a" is not absolute`},
		{name: "an empty path", args: []string{"--file", "=FLAG:0444:" + sum}, wantErr: `path "" is not absolute`},
		{name: "the root", args: []string{"--file", "/=FLAG:0444:" + sum}, wantErr: "path / is a directory"},
		{name: "a .. segment", args: []string{"--file", "/f/../etc/passwd=FLAG:0444:" + sum}, wantErr: "has a .. segment"},
		{name: "a final .. segment", args: []string{"--file", "/f/..=FLAG:0444:" + sum}, wantErr: "has a .. segment"},
		{name: "a . segment", args: []string{"--file", "/f/./a=FLAG:0444:" + sum}, wantErr: "is not clean"},
		{name: "a double slash", args: []string{"--file", "/f//a=FLAG:0444:" + sum}, wantErr: "is not clean"},
		{name: "a trailing slash", args: []string{"--file", "/f/a/=FLAG:0444:" + sum}, wantErr: "is not clean"},
		{name: "the same path twice", args: []string{"--file", "/f/a=FLAG:0444:" + sum, "--file", "/f/a=OTHER:0400:" + sum}, wantErr: "/f/a is given twice"},
		{name: "an empty variable", args: []string{"--file", "/f/a=:0444:" + sum}, wantErr: `variable ""`},
		{name: "a variable with a dash", args: []string{"--file", "/f/a=FLAG-0:0444:" + sum}, wantErr: `variable "FLAG-0"`},
		{name: "a variable starting with a digit", args: []string{"--file", "/f/a=0FLAG:0444:" + sum}, wantErr: `variable "0FLAG"`},
		{name: "a mode above 0777", args: []string{"--file", "/f/a=FLAG:4755:" + sum}, wantErr: `mode "4755": want 0 and three octal digits, at most 0777`},
		{name: "a mode of 0777 and more", args: []string{"--file", "/f/a=FLAG:01777:" + sum}, wantErr: `mode "01777": want 0 and three octal digits`},
		{name: "a mode not octal", args: []string{"--file", "/f/a=FLAG:0448:" + sum}, wantErr: `mode "0448": want 0 and three octal digits`},
		{name: "a mode in decimal", args: []string{"--file", "/f/a=FLAG:292:" + sum}, wantErr: `mode "292": want 0 and three octal digits`},
		{name: "a mode in decimal that reads as octal", args: []string{"--file", "/f/a=FLAG:511:" + sum}, wantErr: `mode "511": want 0 and three octal digits`},
		{name: "a mode with 0o", args: []string{"--file", "/f/a=FLAG:0o44:" + sum}, wantErr: `mode "0o44": want 0 and three octal digits`},
		{name: "a signed mode", args: []string{"--file", "/f/a=FLAG:-444:" + sum}, wantErr: `mode "-444": want 0 and three octal digits`},
		{name: "a short mode", args: []string{"--file", "/f/a=FLAG:044:" + sum}, wantErr: `mode "044": want 0 and three octal digits`},
		{name: "an empty mode", args: []string{"--file", "/f/a=FLAG::" + sum}, wantErr: `mode "": want 0 and three octal digits`},
		{name: "an upper-case hash", args: []string{"--file", "/f/a=FLAG:0444:" + strings.ToUpper(sum)}, wantErr: "want 64 lower-case hex digits"},
		{name: "a short hash", args: []string{"--file", "/f/a=FLAG:0444:" + sum[:62]}, wantErr: "want 64 lower-case hex digits"},
		{name: "a long hash", args: []string{"--file", "/f/a=FLAG:0444:" + sum + "00"}, wantErr: "want 64 lower-case hex digits"},
		{name: "an odd hash", args: []string{"--file", "/f/a=FLAG:0444:" + sum[:63]}, wantErr: "want 64 lower-case hex digits"},
		{name: "a hash not hex", args: []string{"--file", "/f/a=FLAG:0444:" + sum[:63] + "g"}, wantErr: "want 64 lower-case hex digits"},
		{name: "an empty hash", args: []string{"--file", "/f/a=FLAG:0444:"}, wantErr: "want 64 lower-case hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var stderr bytes.Buffer
			// Every variable is set: only the arguments can be refused.
			err := Run(tt.args, func(string) string { return flagA }, &stderr)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(ExitCode(err)).To(Equal(ExitFailed))
			expectNoValue(g, err.Error()+stderr.String(), flagA)
		})
	}
}

func TestRunAcceptsAPathWithEqualsAndColons(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "a=b:c")
	g.Expect(os.Mkdir(dir, 0o755)).To(Succeed())
	path := filepath.Join(dir, "x=1:0444")

	g.Expect(Run(fileArg(path, "FLAG", "0644", flagA), envOf(map[string]string{"FLAG": flagA}), &bytes.Buffer{})).To(Succeed())

	got, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(flagA))
	st, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode()).To(Equal(fs.FileMode(0o644)))
}
