package instancer_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

// writeFile writes a file of a mounted volume at once (write, then rename),
// as the kubelet swaps a volume's content.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp-"+name)
	NewWithT(t).Expect(os.WriteFile(tmp, []byte(content), 0o600)).To(Succeed())
	NewWithT(t).Expect(os.Rename(tmp, filepath.Join(dir, name))).To(Succeed())
}

// metric returns the value of the series of r's metrics that line starts
// with (name{labels}), or "" when it has none.
func metric(t *testing.T, r *replica, series string) string {
	t.Helper()
	res, err := http.Get(r.metricsURL)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer func() { _ = res.Body.Close() }()
	data, err := io.ReadAll(res.Body)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(data)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// TestKeySetIsExactlyTheValidKeyFilesPresent runs a replica of its own on a
// key directory the test changes as a rotation would: a short key and a
// public ca.crt beside the key neither stop it nor become keys (each is
// reported in a metric); a rotation adding a bad file still brings in the
// good new key; a removed key and an emptied directory revoke.
func TestKeySetIsExactlyTheValidKeyFilesPresent(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	key2026, key2027 := strings.Repeat("6", 32), strings.Repeat("7", 40)
	caCrt := "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUeXample" + strings.Repeat("A", 64) + "\n-----END CERTIFICATE-----\n"
	writeFile(t, dir, "2026", key2026)
	writeFile(t, dir, "short", "0123456789")
	writeFile(t, dir, "ca.crt", caCrt)
	r, err := startReplica("keys", "--key-dir="+dir, "--key-reload-interval=100ms")
	g.Expect(err).NotTo(HaveOccurred(), "a short key and a certificate beside the keys do not stop the instancer")
	t.Cleanup(r.process.Kill)

	team := uniqueName("team")
	signed := func(kid, key string) string {
		raw, err := token.MintFor(token.Keys{kid: []byte(key)}, kid, team, audience, time.Hour, time.Now())
		g.Expect(err).NotTo(HaveOccurred())
		return raw
	}
	status := func(tok string) func() int {
		return func() int { return callAt(t, r.URL, tok, "GET", "/api/v1/instances", nil, nil) }
	}
	g.Expect(status(signed("2026", key2026))()).To(Equal(http.StatusOK))
	g.Expect(status(signed("ca.crt", caCrt))()).To(Equal(http.StatusUnauthorized), "a certificate is not a key")
	g.Expect(status(signed("short", "0123456789"))()).To(Equal(http.StatusUnauthorized), "nor is a short key")
	g.Expect(metric(t, r, "challenge_instancer_token_keys")).To(Equal("1"))
	g.Expect(metric(t, r, `challenge_instancer_token_key_files_skipped{reason="short"}`)).To(Equal("1"))
	g.Expect(metric(t, r, `challenge_instancer_token_key_files_skipped{reason="name"}`)).To(Equal("1"))

	// A rotation adds a key and, by mistake, a bad one: the good key is in force.
	writeFile(t, dir, "2027", key2027)
	writeFile(t, dir, "typo", "not a key")
	g.Eventually(status(signed("2027", key2027)), timeout, interval).Should(Equal(http.StatusOK))
	g.Expect(status(signed("2026", key2026))()).To(Equal(http.StatusOK))
	g.Expect(metric(t, r, `challenge_instancer_token_key_files_skipped{reason="short"}`)).To(Equal("2"))

	// The old key goes: its tokens with it.
	g.Expect(os.Remove(filepath.Join(dir, "2026"))).To(Succeed())
	g.Eventually(status(signed("2026", key2026)), timeout, interval).Should(Equal(http.StatusUnauthorized))
	g.Expect(status(signed("2027", key2027))()).To(Equal(http.StatusOK))

	// The Secret emptied: no key, every token refused, the instancer still up.
	for _, name := range []string{"2027", "short", "ca.crt", "typo"} {
		g.Expect(os.Remove(filepath.Join(dir, name))).To(Succeed())
	}
	g.Eventually(status(signed("2027", key2027)), timeout, interval).Should(Equal(http.StatusUnauthorized))
	g.Expect(metric(t, r, "challenge_instancer_token_keys")).To(Equal("0"))
	g.Expect(r.process.Running()).To(BeTrue())
	res, err := http.Get(r.URL + "/")
	g.Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), "the page is still served")
}

// TestATeamsTokensAreRevokedUpToATime: a revocation file for a team (a
// ConfigMap entry) refuses its tokens issued before that time, not the ones
// issued since nor other teams'; a file that holds no time refuses them all.
func TestATeamsTokensAreRevokedUpToATime(t *testing.T) {
	g := NewWithT(t)
	revocations := t.TempDir()
	r, err := startReplica("revocations", "--revocations-dir="+revocations, "--key-reload-interval=100ms")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(r.process.Kill)
	team, other := uniqueName("team"), uniqueName("other")
	now := time.Now().Truncate(time.Second)
	mintAt := func(team string, at time.Time) string {
		raw, err := token.MintFor(keys, "", team, audience, time.Hour, at)
		g.Expect(err).NotTo(HaveOccurred())
		return raw
	}
	status := func(tok string) func() int {
		return func() int { return callAt(t, r.URL, tok, "GET", "/api/v1/instances", nil, nil) }
	}
	leaked, otherTeams := mintAt(team, now.Add(-time.Minute)), mintAt(other, now.Add(-time.Minute))
	g.Expect(status(leaked)()).To(Equal(http.StatusOK))

	writeFile(t, revocations, team, now.Format(time.RFC3339)+"\n")
	g.Eventually(status(leaked), timeout, interval).Should(Equal(http.StatusUnauthorized), "a token issued before the revocation")
	g.Expect(status(mintAt(team, now))()).To(Equal(http.StatusOK), "the team's new token")
	g.Expect(status(otherTeams)()).To(Equal(http.StatusOK), "another team's")
	g.Expect(metric(t, r, "challenge_instancer_token_revocations")).To(Equal("1"))

	writeFile(t, revocations, team, "soon")
	g.Eventually(status(mintAt(team, now)), timeout, interval).Should(Equal(http.StatusUnauthorized), "a revocation without a time refuses every token of the team")
	g.Expect(metric(t, r, "challenge_instancer_token_revocation_files_invalid")).To(Equal("1"))
}
