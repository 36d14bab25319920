// Package ctfflag derives and resolves the flag of a challenge instance. A
// dynamic flag is an HMAC, so a platform verifies a submission by recomputing
// it from the same key, the template name and the participant.
package ctfflag

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
)

// Derive returns format with its %s replaced by the first length hex
// characters of HMAC-SHA256(key, challenge + "\x00" + participant). The NUL
// separator keeps ("ab", "c") and ("a", "bc") apart.
func Derive(key []byte, challenge, participant, format string, length int) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(challenge + "\x00" + participant))
	digest := hex.EncodeToString(mac.Sum(nil))
	if length > 0 && length < len(digest) {
		digest = digest[:length]
	}
	return fmt.Sprintf(format, digest)
}

// Resolve returns the flag of participant's instance of tmpl, reading the
// Secret the template names through secrets, which reads only what the
// template may.
func Resolve(ctx context.Context, secrets organisersecret.Reader, tmpl *ctfv1alpha1.ChallengeTemplate, participant string) (string, error) {
	f := tmpl.Spec.Flag
	switch {
	case f.Static != nil:
		value, err := secrets.Read(ctx, tmpl, "its flag", f.Static)
		if err != nil {
			return "", err
		}
		return string(value), Check(string(value), f.Static)
	case f.Dynamic != nil:
		key, err := secrets.Read(ctx, tmpl, "its flag", &f.Dynamic.SecretKey)
		if err != nil {
			return "", err
		}
		return Derive(key, tmpl.Name, participant, f.Dynamic.Format, int(f.Dynamic.Length)), nil
	}
	return "", fmt.Errorf("ChallengeTemplate %s: flag has neither static nor dynamic", tmpl.Name)
}

// MaxLength is the longest flag the chart accepts.
const MaxLength = 4096

// Check refuses a flag the chart's schema would refuse (Helm's error quotes
// the value, and would carry it into the status, Events and logs): it names
// the Secret and key, never the value.
func Check(value string, ref *ctfv1alpha1.SecretKeyRef) error {
	if problem := problemOf(value); problem != "" {
		return lifecycle.Errorf(lifecycle.ReasonFlagInvalid, "the flag in Secret %s/%s key %q %s; the value is never shown", ref.Namespace, ref.Name, ref.Key, problem)
	}
	return nil
}

// problemOf says what the chart's schema would refuse in a value, "" when nothing.
func problemOf(value string) string {
	switch {
	case !utf8.ValidString(value):
		return "is not UTF-8 text"
	case len(value) > MaxLength:
		return fmt.Sprintf("is longer than %d bytes", MaxLength)
	case strings.IndexFunc(value, unprintable) >= 0:
		return "has a line break or control character (a trailing newline, as echo writes, is one: use printf or echo -n)"
	}
	return ""
}

// ResolveEnv reads the values of a template's secretEnv, in order, each
// checked as a flag is: an error names the Secret and key, never the value.
func ResolveEnv(ctx context.Context, secrets organisersecret.Reader, tmpl *ctfv1alpha1.ChallengeTemplate) ([]string, error) {
	return ResolveSecretEnv(ctx, secrets, tmpl, "secretEnv", tmpl.Spec.SecretEnv)
}

// ResolveSecretEnv reads the values of one of tmpl's containers' secretEnv
// (what names it in errors: "secretEnv", "component db's secretEnv"), in
// order, each checked as a flag is: an error names the Secret and key,
// never the value. Every namespace is judged before any Secret is read, so
// a variable from a namespace not allowed is the error whatever the others.
func ResolveSecretEnv(ctx context.Context, secrets organisersecret.Reader, tmpl *ctfv1alpha1.ChallengeTemplate, what string, env []ctfv1alpha1.SecretEnvVar) ([]string, error) {
	for _, e := range env {
		if err := secrets.Namespaces.Allow(tmpl, what+" "+e.Name, e.Secret.Namespace); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(env))
	for _, e := range env {
		value, err := secrets.Read(ctx, tmpl, what+" "+e.Name, &e.Secret)
		if err != nil {
			return nil, err
		}
		if problem := problemOf(string(value)); problem != "" {
			return nil, lifecycle.Errorf(lifecycle.ReasonSecretEnvInvalid, "%s %s: Secret %s/%s key %q %s; the value is never shown",
				what, e.Name, e.Secret.Namespace, e.Secret.Name, e.Secret.Key, problem)
		}
		out = append(out, string(value))
	}
	return out, nil
}

// MaxFileLength is the largest secret file the chart accepts.
const MaxFileLength = 64 << 10

// ResolveFile reads the content of one of tmpl's secret files (what names
// it in errors), checked as the chart's schema would: UTF-8 text of at most
// MaxFileLength bytes, with no control character but tab and line breaks.
// An error names the field, the Secret and the key, never the value.
func ResolveFile(ctx context.Context, secrets organisersecret.Reader, tmpl *ctfv1alpha1.ChallengeTemplate, what string, ref *ctfv1alpha1.SecretKeyRef) (string, error) {
	value, err := secrets.Read(ctx, tmpl, what, ref)
	if err != nil {
		return "", err
	}
	problem := ""
	switch s := string(value); {
	case !utf8.ValidString(s):
		problem = "is not UTF-8 text"
	case len(s) > MaxFileLength:
		problem = fmt.Sprintf("is longer than %d bytes", MaxFileLength)
	case strings.IndexFunc(s, binary) >= 0:
		problem = "has a control character other than a tab or a line break"
	}
	if problem != "" {
		return "", lifecycle.Errorf(lifecycle.ReasonSecretFileInvalid, "%s: Secret %s/%s key %q %s; the value is never shown",
			what, ref.Namespace, ref.Name, ref.Key, problem)
	}
	return string(value), nil
}

// binary is what the chart's schema refuses in a file: a C0 control
// character other than a tab or a line break, and DEL.
func binary(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
}

// unprintable is what the chart's schema refuses in a flag: control
// characters and the line and paragraph separators YAML breaks lines at.
func unprintable(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

// PerTeam is team's flag name of template, in format: its one %s replaced,
// as text, by the body codec seals for the team (never through a format
// verb, whatever the format holds).
func PerTeam(codec *flagtag.Codec, template, name, team, format string) string {
	return strings.Replace(format, "%s", codec.Body(template, name, team), 1)
}

// BodyOf is the flag body of submission in format: what stands where the
// format's %s does, if the submission has the format's text around it.
func BodyOf(format, submission string) (string, bool) {
	prefix, suffix, ok := strings.Cut(format, "%s")
	if !ok || len(submission) < len(prefix)+len(suffix) || !strings.HasPrefix(submission, prefix) || !strings.HasSuffix(submission, suffix) {
		return "", false
	}
	return submission[len(prefix) : len(submission)-len(suffix)], true
}

// ErrNoFlagKey refuses a per-team flag when the operator has no flag key.
var ErrNoFlagKey = lifecycle.Errorf(lifecycle.ReasonFlagInvalid,
	"the template has a perTeam flag, but the operator has no flag key: the cluster admin creates the Secret challenge-operator-flag-key (see --flag-key-file)")

// ResolveNamed returns the value of the named flag f of tmpl for team:
// its static Secret's value (checked as a flag is) or the team's own
// (PerTeam, with codec; nil when the operator has no flag key).
func ResolveNamed(ctx context.Context, secrets organisersecret.Reader, codec *flagtag.Codec, tmpl *ctfv1alpha1.ChallengeTemplate, f *ctfv1alpha1.NamedFlag, team string) (string, error) {
	if f.Static != nil {
		value, err := secrets.Read(ctx, tmpl, "flag "+f.Name, f.Static)
		if err != nil {
			return "", err
		}
		return string(value), Check(string(value), f.Static)
	}
	if codec == nil {
		return "", ErrNoFlagKey
	}
	return PerTeam(codec, tmpl.Name, f.Name, team, cmp.Or(f.PerTeam.Format, DefaultFormat)), nil
}

// DefaultFormat is a flag's format when its template names none.
const DefaultFormat = "flag{%s}"
