// Package flagwritecmd is the `challenge-operator write-flags` subcommand:
// the ephemeral container the operator adds to a pooled instance's pod when
// a team claims it, to deliver the team's flags into the running challenge
// container without restarting it. Its exit code 0, which the kubelet
// reports in the pod's ephemeralContainerStatuses, is the operator's proof
// that the team's flags are in place.
//
// Syntax, one --file per flag, at least one:
//
//	challenge-operator write-flags --file PATH=ENV:MODE:SHA256 [--file ...]
//
// where:
//   - PATH is the file to write: absolute, clean (no ".", "..", "//" or
//     trailing "/"), not "/", each PATH once. It is split from the rest at
//     the last "=", which the rest cannot contain.
//   - ENV names the environment variable holding the value (a secretKeyRef
//     to the instance's Secret): [A-Za-z_][A-Za-z0-9_]*.
//   - MODE is the file's mode: 0 and three octal digits, such as 0444 (as
//     %04o writes it), so at most 0777: no setuid, setgid or sticky bit.
//   - SHA256 is the SHA-256 of the value the operator expects, 64 lower-case
//     hex digits.
//
// The kubelet may hand the container a stale value of the Secret from its
// cache, so every value is checked against its SHA-256 before any file is
// written: one stale value writes nothing, not even the files before it, and
// the error wraps ErrStale so that the operator retries with a new container.
// Each file is then written in order, atomically (a temporary file in the
// same directory, synced, given its mode, renamed over PATH) and read back.
// No value is ever printed: errors name paths, variables and expected hashes.
package flagwritecmd

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ErrStale is wrapped by the error of a value whose SHA-256 is not the one
// expected: the kubelet's copy of the Secret is older than the operator's
// write, and a new ephemeral container may read the new one.
var ErrStale = errors.New("a stale Secret")

// ExitStale is the exit code of a run refused for a stale value (ErrStale),
// and ExitFailed that of any other failure: refused arguments, a value
// missing, a file not written.
const (
	ExitStale  = 3
	ExitFailed = 2
)

// ExitCode is the exit code for Run's error: 0 for none.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrStale):
		return ExitStale
	}
	return ExitFailed
}

// file is one flag to deliver, as one --file names it.
type file struct {
	path string
	env  string
	mode fs.FileMode
	sum  [sha256.Size]byte
}

// envName is what ENV may be: a C identifier, as the API's flag.envName.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Run parses args, checks every value, then writes every file; see the
// package comment. It prints one line per file written to stderr.
func Run(args []string, env func(string) string, stderr io.Writer) error {
	files, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	values, err := check(files, env)
	if err != nil {
		return err
	}
	for i, f := range files {
		if err := write(f, values[i]); err != nil {
			return fmt.Errorf("writing %s (%d of %d files written before it): %w", f.path, i, len(files), err)
		}
		if _, err := fmt.Fprintf(stderr, "wrote %s (mode %#o)\n", f.path, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// fileList is the repeated --file flag; it refuses a second --file for a
// path already given.
type fileList []file

func (l *fileList) String() string { return fmt.Sprintf("%d files", len(*l)) }

func (l *fileList) Set(s string) error {
	f, err := parseFile(s)
	if err != nil {
		return err
	}
	for _, g := range *l {
		if g.path == f.path {
			return fmt.Errorf("%s is given twice", f.path)
		}
	}
	*l = append(*l, f)
	return nil
}

// parseArgs reads the --file flags, and refuses anything else.
func parseArgs(args []string, stderr io.Writer) ([]file, error) {
	fset := flag.NewFlagSet("write-flags", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var files fileList
	fset.Var(&files, "file", "PATH=ENV:MODE:SHA256, once per file: write the value of ENV, whose SHA-256 is SHA256, to PATH with mode MODE.")
	if err := fset.Parse(args); err != nil {
		return nil, err
	}
	if fset.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every file is a --file", fset.Arg(0))
	}
	if len(files) == 0 {
		return nil, errors.New("no --file: nothing to write")
	}
	return files, nil
}

// parseFile parses one PATH=ENV:MODE:SHA256.
func parseFile(s string) (file, error) {
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return file{}, errors.New("want PATH=ENV:MODE:SHA256")
	}
	parts := strings.Split(s[i+1:], ":")
	if len(parts) != 3 {
		return file{}, errors.New("want PATH=ENV:MODE:SHA256")
	}
	f := file{path: s[:i], env: parts[0]}
	if err := checkPath(f.path); err != nil {
		return file{}, err
	}
	if !envName.MatchString(f.env) {
		return file{}, fmt.Errorf("variable %q: want a name of letters, digits and _, not starting with a digit", f.env)
	}
	var err error
	if f.mode, err = parseMode(parts[1]); err != nil {
		return file{}, err
	}
	if f.sum, err = parseSum(parts[2]); err != nil {
		return file{}, err
	}
	return f, nil
}

// checkPath refuses a path that is not absolute and clean, or names the root.
func checkPath(p string) error {
	switch {
	case !filepath.IsAbs(p):
		return fmt.Errorf("path %q is not absolute", p)
	case p == "/":
		return errors.New("path / is a directory")
	case strings.Contains(p+"/", "/../"):
		return fmt.Errorf("path %q has a .. segment", p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("path %q is not clean (a . segment, // or a trailing /)", p)
	}
	return nil
}

// parseMode parses a mode written as 0 and three octal digits (as %04o
// writes it): the permission bits, no setuid, setgid or sticky bit. The
// leading 0 is required so that a mode written in decimal, such as 292 for
// 0444, is refused rather than read as another mode.
func parseMode(s string) (fs.FileMode, error) {
	if len(s) != 4 || s[0] != '0' || strings.Trim(s[1:], "01234567") != "" {
		return 0, fmt.Errorf("mode %q: want 0 and three octal digits, at most 0777, such as 0444", s)
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("mode %q: %w", s, err)
	}
	return fs.FileMode(m), nil
}

// parseSum parses a SHA-256 written as 64 lower-case hex digits.
func parseSum(s string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size || hex.EncodeToString(b) != s {
		return sum, fmt.Errorf("sha256 %q: want 64 lower-case hex digits", s)
	}
	copy(sum[:], b)
	return sum, nil
}

// check reads every value and judges every file before any is written: a
// value missing, empty or not the one expected, or a path no file can be
// renamed to, fails the whole run with nothing written.
func check(files []file, env func(string) string) ([][]byte, error) {
	values := make([][]byte, len(files))
	for i, f := range files {
		v := env(f.env)
		if v == "" {
			return nil, fmt.Errorf("the variable %s (for %s) is empty or not set: nothing written", f.env, f.path)
		}
		sum := sha256.Sum256([]byte(v))
		if subtle.ConstantTimeCompare(sum[:], f.sum[:]) != 1 {
			return nil, fmt.Errorf("the value of %s is not the one expected (%w; want sha256 %x): nothing written", f.env, ErrStale, f.sum)
		}
		if err := checkTarget(f.path); err != nil {
			return nil, fmt.Errorf("%w: nothing written", err)
		}
		values[i] = []byte(v)
	}
	return values, nil
}

// checkTarget refuses a path whose directory is missing or which is a
// directory itself, which would fail the rename only after earlier files
// were written.
func checkTarget(p string) error {
	if st, err := os.Stat(filepath.Dir(p)); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(p))
	}
	if st, err := os.Lstat(p); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// write replaces f.path with value atomically, then reads it back: the
// challenge container sees the old file or the new one, never a part.
func write(f file, value []byte) error {
	dir := filepath.Dir(f.path)
	// CreateTemp makes the file 0600: nobody else reads it before it is whole.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".tmp-*")
	if err != nil {
		return err
	}
	err = fill(tmp, value, f.mode)
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name()) // best effort: the error to report is err
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return readBack(f, value)
}

// fill writes value into tmp, syncs it, gives it mode and closes it.
func fill(tmp *os.File, value []byte, mode fs.FileMode) error {
	_, err := tmp.Write(value)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		// Chmod, not the create's mode, so that the umask has no say.
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes the rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readBack proves the file at f.path is the one written: a regular file
// with f's mode that holds value.
func readBack(f file, value []byte) error {
	st, err := os.Lstat(f.path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != f.mode {
		return fmt.Errorf("read back, %s is %s, not a regular file of mode %#o", f.path, st.Mode(), f.mode)
	}
	got, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, value) {
		return fmt.Errorf("read back, %s does not hold the value written", f.path)
	}
	return nil
}
