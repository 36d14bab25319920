package instancer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/token"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// instanceOfTeam creates, as another instancer (or an older one) would, an
// instance of template for team under name.
func instanceOfTeam(t *testing.T, name, template, team string) *ctfv1alpha1.Challenge {
	t.Helper()
	ch := builders.FromTemplate(instancesNamespace, name, team, template,
		builders.Labelled(ctfv1alpha1.ParticipantLabel, team), builders.Labelled(ctfv1alpha1.CreatedByLabel, "instancer"))
	NewWithT(t).Expect(k8s.Create(context.Background(), ch)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ch) })
	return ch
}

// TestTeamsNeverShareNorBlockAnInstanceName: instance names ended in 40 bits
// of an unkeyed hash, and a colliding pair of team ids took seconds to
// compute; the second team's start was refused (409) for the first's
// instance. Here another team's instance holds the very name a team's
// start computes: the team still starts one of its own, sees and stops
// only that one, and the other's is untouched and still its owner's.
func TestTeamsNeverShareNorBlockAnInstanceName(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tmpl := startableTemplate(t, nil)
	team, other := uniqueName("team"), uniqueName("other")
	squatter := instanceOfTeam(t, nameOf(tmpl, team), tmpl, other)

	tok := mint(t, team)
	var got instancer.Instance
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &got)).To(Equal(http.StatusCreated), "%+v", got)
	g.Expect(got.Name).NotTo(Equal(squatter.Name))
	g.Expect(challengesOf(t, team)).To(ConsistOf(HaveField("Spec.Participant", team)))
	g.Eventually(func(g Gomega) {
		var inst instancer.Instance
		g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &inst)).To(Equal(http.StatusOK))
		g.Expect(inst.Name).To(Equal(got.Name), "the team sees its own instance")
		var mine instancer.Instance
		g.Expect(call(t, mint(t, other), "GET", instancePath(tmpl), nil, &mine)).To(Equal(http.StatusOK))
		g.Expect(mine.Name).To(Equal(squatter.Name), "and the other team its own")
	}, timeout, interval).Should(Succeed())

	g.Expect(call(t, tok, "DELETE", instancePath(tmpl), nil, nil)).To(Equal(http.StatusAccepted))
	h.EventuallyGone(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: got.Name}}, timeout, "the team's instance goes")
	held := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(squatter), held)).To(Succeed())
	g.Expect(held.DeletionTimestamp).To(BeNil(), "the other team's instance is untouched")
	g.Expect(metric(t, api, "challenge_instancer_instance_name_conflicts_total")).NotTo(BeElementOf("", "0"), "the organisers see it")
}

// TestARotationKeepsEveryRunningInstance: names are keyed with the lowest
// key id's key; a rotation that removes it changes the name a start
// computes, and the team still finds, restarts and stops its instance.
func TestARotationKeepsEveryRunningInstance(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	before, after := token.Keys{"2026": []byte(strings.Repeat("6", 32))}, token.Keys{"2027": []byte(strings.Repeat("7", 32))}
	writeFile(t, dir, "2026", string(before["2026"]))
	r, err := startReplica("rotation", "--key-dir="+dir, "--key-reload-interval=100ms")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(r.process.Kill)
	tmpl := startableTemplate(t, nil)
	team := uniqueName("team")
	tokBefore, err := token.MintFor(before, "", team, audience, time.Hour, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	var started instancer.Instance
	g.Expect(callAt(t, r.URL, tokBefore, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &started)).To(Equal(http.StatusCreated))
	g.Expect(started.Name).To(Equal(instancer.InstanceName(instancer.NameKey(before), tmpl, team)))

	writeFile(t, dir, "2027", string(after["2027"]))
	g.Expect(os.Remove(filepath.Join(dir, "2026"))).To(Succeed())
	tok, err := token.MintFor(after, "", team, audience, time.Hour, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		var got instancer.Instance
		g.Expect(callAt(t, r.URL, tok, "GET", instancePath(tmpl), nil, &got)).To(Equal(http.StatusOK))
		g.Expect(got.Name).To(Equal(started.Name))
	}, timeout, interval).Should(Succeed())
	var got instancer.Instance
	g.Expect(callAt(t, r.URL, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &got)).To(Equal(http.StatusOK), "a start finds it")
	g.Expect(got.Name).To(Equal(started.Name))
	g.Expect(callAt(t, r.URL, tok, "DELETE", instancePath(tmpl), nil, nil)).To(Equal(http.StatusAccepted))
	h.EventuallyGone(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: started.Name}}, timeout, "a stop removes it")
	g.Expect(challengesOf(t, team)).To(BeEmpty())
}

// TestEveryDNSLabelTeamAndTemplateStarts: a team id or a template name with
// "--" (every punycode name, xn--...) made an instance name the Challenge
// CRD refuses, and the team was told "refused".
func TestEveryDNSLabelTeamAndTemplateStarts(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplateNamed(t, uniqueName("web--x"), nil)
	team := uniqueName("xn--bcher-kva")
	tok := mint(t, team)
	var got instancer.Instance
	var e apiError
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &e)).To(Equal(http.StatusCreated), "%+v", e)
	g.Expect(challengesOf(t, team)).To(ConsistOf(HaveField("Spec.Template", tmpl)))
	g.Eventually(func(g Gomega) {
		g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &got)).To(Equal(http.StatusOK))
		g.Expect(got.Phase).To(Equal("Running"), "%s: %s", got.Reason, got.Message)
	}, timeout, interval).Should(Succeed())
	g.Expect(got.Name).NotTo(ContainSubstring("--"))
}

// oldInstanceName is the name instancers before keyed names gave an
// instance: "<template>-<team>" and 10 hex digits of SHA-256.
func oldInstanceName(template, team string) string {
	sum := sha256.Sum256([]byte(template + "\x00" + team))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	readable := template + "-" + team
	if len(readable) > 53-len(suffix) {
		readable = readable[:53-len(suffix)]
	}
	return strings.TrimRight(readable, "-") + suffix
}

// TestAnUpgradeKeepsEveryRunningInstance: an instance an older instancer
// made (under the former names) stays the team's after an upgrade: shown,
// not started twice, stopped.
func TestAnUpgradeKeepsEveryRunningInstance(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	team := uniqueName("team")
	old := instanceOfTeam(t, oldInstanceName(tmpl, team), tmpl, team)
	tok := mint(t, team)
	g.Eventually(func(g Gomega) {
		var got instancer.Instance
		g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &got)).To(Equal(http.StatusOK))
		g.Expect(got.Name).To(Equal(old.Name))
	}, timeout, interval).Should(Succeed())
	var got instancer.Instance
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &got)).To(Equal(http.StatusOK))
	g.Expect(got.Name).To(Equal(old.Name), "a start finds it")
	g.Expect(challengesOf(t, team)).To(HaveLen(1))
	g.Expect(call(t, tok, "DELETE", instancePath(tmpl), nil, nil)).To(Equal(http.StatusAccepted))
	h.EventuallyGone(t, old, timeout, "a stop removes it")
}
