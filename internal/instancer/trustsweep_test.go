package instancer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/proofofwork"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
	"github.com/challenge-operator/challenge-operator/test/trusttable"
)

// TestTheTeamTierStaysWithinItsBounds is the team tier's trust sweep. For
// every route docs/security.md's table gives to teams (or to anyone), a
// team holding a valid token of its own does, as a hostile one, what that
// route lets it do, and the bounds the admin and the organiser set are read
// back from the API server, not from status codes alone. A route of those
// tiers without a probe here fails the sweep, and so does a probe of a route
// the table no longer gives them: the next route brings its probe.
func TestTheTeamTierStaysWithinItsBounds(t *testing.T) {
	all, err := trusttable.Read(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rows := append(trusttable.Of(all, "team"), trusttable.Of(all, "anyone")...)
	// The platform's routes too: its Challenges are test/trustsweep's.
	for _, row := range trusttable.Of(all, "platform") {
		if strings.Contains(row.What, " /") {
			rows = append(rows, row)
		}
	}
	s := &sweep{}
	probes := s.probes()
	placed := map[string]bool{}
	for _, row := range rows {
		placed[row.What] = true
		if probes[row.What] == nil {
			t.Errorf("%s (tier %s, bounded by %q) has no probe in the team tier's sweep: say how a team is bounded there", row.What, row.Tier, row.Bound)
		}
	}
	for what := range probes {
		if !placed[what] {
			t.Errorf("the team tier's sweep probes %s, which docs/security.md's table no longer gives to teams or anyone", what)
		}
	}
	if t.Failed() {
		return
	}
	s.setUp(t)
	for _, row := range rows {
		t.Run(row.What, probes[row.What])
	}
}

// sweep is the team tier's sweep: the organiser's templates, the victim
// team's Running instance, and a hostile team that never starts anything
// (the probes that start use teams of their own, each within its own
// starts per minute).
type sweep struct {
	// tmpl is the organiser's template: a perTeam flag, a Secret's value
	// and a value of its own in the environment, env overridable (by the
	// platform), a lifetime of 10 minutes, at most 15, renewed once.
	tmpl string
	// pow asks a proof of work; shared is served by the organiser's one
	// instance, sharedCh; closed is not startable.
	pow, shared, closed string
	sharedCh            *ctfv1alpha1.Challenge
	maxLifetime         time.Duration
	// victim is the team whose Running instance of tmpl is victimCh.
	victim, victimTok string
	victimCh          *ctfv1alpha1.Challenge
	// hostile is the team that tries to reach the victim's instance.
	hostile, hostileTok string
	// organiser are what no answer to any team holds (the template's image,
	// Secret, values); victims' what none to another team holds (its name,
	// its instance's name and address).
	organiser, victims []string
}

func (s *sweep) probes() map[string]func(*testing.T) {
	return map[string]func(*testing.T){
		"GET /api/v1/openapi.json":                   s.description,
		"GET /api/v1/templates":                      s.templates,
		"GET /api/v1/instances":                      s.list,
		"POST /api/v1/instances":                     s.start,
		"GET /api/v1/instances/{template}":           s.read,
		"DELETE /api/v1/instances/{template}":        s.stop,
		"POST /api/v1/instances/{template}/renew":    s.renew,
		"GET /api/v1/instances/{template}/challenge": s.puzzle,
		"GET /api/v1/instances/{template}/events":    s.events,
		"POST " + verifyPath:                         s.verification,
		"POST " + solvedPath:                         s.solveNotice,
	}
}

// setUp makes the organiser's templates, Secret and shared instance (gone
// when the sweep ends) and the victim's Running instance.
func (s *sweep) setUp(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	secretValue, note := uniqueName("organiser-secret-value-"), uniqueName("organiser-note-")
	secret := harness.OrganiserSecret(uniqueName("sweep-"), map[string][]byte{"key": []byte(secretValue)})
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	s.maxLifetime = 15 * time.Minute
	s.tmpl = startableTemplate(t, func(spec *ctfv1alpha1.ChallengeTemplateSpec) {
		spec.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: 10 * time.Minute},
			Max: &metav1.Duration{Duration: s.maxLifetime}, MaxRenewals: ptr.To[int32](1)}
		spec.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}}}
		spec.SecretEnv = []ctfv1alpha1.SecretEnvVar{{Name: "API_KEY",
			Secret: ctfv1alpha1.SecretKeyRef{Namespace: secret.Namespace, Name: secret.Name, Key: "key"}}}
		spec.Env = []ctfv1alpha1.EnvVar{{Name: "ORGANISER_NOTE", Value: note}}
		spec.OverridableValues = []ctfv1alpha1.ValuePath{"env"}
	})
	s.pow = powTemplate(t)
	s.shared = startableTemplate(t, func(spec *ctfv1alpha1.ChallengeTemplateSpec) { spec.Sharing = ctfv1alpha1.SharingShared })
	s.sharedCh = builders.FromTemplate(instancesNamespace, s.shared+"-organisers", "organisers", s.shared)
	g.Expect(k8s.Create(ctx, s.sharedCh)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), s.sharedCh) })
	closed := h.Template(t, uniqueName("closed"), nil)
	s.closed = closed.Name
	made := &ctfv1alpha1.ChallengeTemplate{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: s.tmpl}, made)).To(Succeed())

	s.victim, s.hostile = uniqueName("victim"), uniqueName("hostile")
	s.victimTok, s.hostileTok = mint(t, s.victim), mint(t, s.hostile)
	g.Expect(call(t, s.victimTok, "POST", "/api/v1/instances", map[string]string{"template": s.tmpl}, nil)).To(Equal(http.StatusCreated))
	s.victimCh = &ctfv1alpha1.Challenge{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(s.tmpl, s.victim)}, s.victimCh)).To(Succeed())
		g.Expect(s.victimCh.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", s.victimCh.Status.Reason, s.victimCh.Status.Message)
		g.Expect(s.victimCh.Status.Endpoint).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	var seen instancer.Instance
	g.Eventually(func(g Gomega) {
		g.Expect(call(t, s.victimTok, "GET", instancePath(s.tmpl), nil, &seen)).To(Equal(http.StatusOK))
		g.Expect(seen.Connect).NotTo(BeEmpty(), "the replica's cache sees it Running")
	}, timeout, interval).Should(Succeed())
	s.organiser = []string{made.Spec.Image, secret.Name, secretValue, note, "CTF{"}
	s.victims = []string{s.victim, s.victimCh.Name, seen.Connect}
}

// noRedirects answers a redirect (the mux's, of a path with "..") as it
// is: a hostile path is never followed to wherever it leads.
var noRedirects = &http.Client{Timeout: 20 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// ask sends method path with body, as it is, as the holder of tok, and
// returns the answer's status and bytes, whatever they are.
func ask(t *testing.T, tok, method, path string, body []byte) (int, []byte) {
	t.Helper()
	return askAt(t, api.URL, tok, method, path, body)
}

// askAt is ask of the instancer at base.
func askAt(t *testing.T, base, tok, method, path string, body []byte) (int, []byte) {
	t.Helper()
	_, res, data := send(t, noRedirects, base, tok, method, path, body, body != nil)
	return res.StatusCode, data
}

// askAsHostile is ask by a team other than the victim, whose answer holds
// nothing of the victim's nor of the organiser's, but what the request
// itself named.
func (s *sweep) askAsHostile(g Gomega, t *testing.T, tok, method, path string, body []byte) (int, []byte) {
	t.Helper()
	code, answer := ask(t, tok, method, path, body)
	s.holdsNothingOf(g, s.victims, method+" "+path+" "+string(body), answer)
	s.holdsNothingOf(g, s.organiser, method+" "+path+" "+string(body), answer)
	return code, answer
}

func (s *sweep) holdsNothingOf(g Gomega, private []string, request string, answer []byte) {
	for _, p := range private {
		if strings.Contains(request, p) {
			continue // an echo of the request tells nothing
		}
		g.ExpectWithOffset(2, string(answer)).NotTo(ContainSubstring(p), "%s", request)
	}
}

// refused expects a request not to succeed.
func refused(g Gomega, code int, answer []byte, why string) {
	g.ExpectWithOffset(1, code/100).NotTo(Equal(2), "%s: %s", why, answer)
}

// craftedNames are what a hostile team puts where a template's name goes
// to reach the victim's instance: its name, pieces of it, other cases,
// escapes, dot segments (a redirect of the mux, never followed here) and
// names longer than any.
func (s *sweep) craftedNames() []string {
	return []string{
		strings.ToUpper(s.tmpl),
		s.victimCh.Name,
		s.tmpl + "-" + s.victim,
		s.victim,
		s.tmpl + "%2F" + s.victim,
		s.victim + "%2F" + s.tmpl,
		"..%2F" + s.tmpl,
		"%2E%2E",
		"x/../" + s.tmpl,
		s.tmpl + "%00",
		s.tmpl + "%20",
		"%C3%A9" + s.tmpl,
		s.closed,
		strings.Repeat("a", 300),
		strings.Repeat(s.tmpl, 400),
	}
}

// victimUntouched expects the victim's instance as it was: the same one,
// not stopped, not renewed.
func (s *sweep) victimUntouched(g Gomega) {
	now := &ctfv1alpha1.Challenge{}
	g.ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKeyFromObject(s.victimCh), now)).To(Succeed())
	g.ExpectWithOffset(1, now.UID).To(Equal(s.victimCh.UID))
	g.ExpectWithOffset(1, now.DeletionTimestamp).To(BeNil())
	g.ExpectWithOffset(1, now.Spec.RenewedAt).To(Equal(s.victimCh.Spec.RenewedAt))
	g.ExpectWithOffset(1, s.challengesNaming(g, s.victim)).To(HaveLen(1), "the victim still has its one instance")
}

// verification: the platform, with its own key, learns a verdict and whose
// flag a submission is, never a flag or a Secret; a call goes once to a
// replica; a body asking more than a verdict is refused; nothing is stopped
// (the template does not destroy on solve).
func (s *sweep) verification(t *testing.T) {
	g := NewWithT(t)
	body, _ := json.Marshal(map[string]string{"team": s.hostile, "template": s.tmpl, "submission": flagOf(s.tmpl, s.victim)})
	tok := signed(t, verifyPath, body)
	var v instancer.Verification
	code, answer := ask(t, tok, "POST", verifyPath, body)
	g.Expect(code).To(Equal(http.StatusOK), "%s", answer)
	g.Expect(json.Unmarshal(answer, &v)).To(Succeed())
	g.Expect(v.Accepted).To(BeFalse(), "another team's flag is not the hostile team's")
	g.Expect(v.Owner).To(Equal(s.victim), "whose flag it is, for the organisers")
	g.Expect(string(answer)).NotTo(ContainSubstring(flagOf(s.tmpl, s.hostile)), "never the asker's own flag")
	s.holdsNothingOf(g, s.organiser[:len(s.organiser)-1], "", answer)
	code, answer = ask(t, tok, "POST", verifyPath, body)
	g.Expect(code).To(Equal(http.StatusUnauthorized), "a call goes once to a replica: %s", answer)
	for _, extra := range []map[string]any{{"stop": true}, {"flag": true}, {"reveal": "flag"}, {"participant": s.victim}} {
		fields := map[string]any{"team": s.hostile, "template": s.tmpl, "submission": "CTF{x}"}
		maps.Copy(fields, extra)
		body, _ := json.Marshal(fields)
		code, answer := ask(t, signed(t, verifyPath, body), "POST", verifyPath, body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", body, answer)
	}
	s.victimUntouched(g)
}

// solveNotice: the platform's notice of a solve stops nothing of a template
// that does not destroy on solve, even replayed to the other replica (an
// acting notice goes once across replicas:
// TestAReplayedSolveNoticeStopsNothingOnTheOtherReplica), and carries
// nothing but the team and the template.
func (s *sweep) solveNotice(t *testing.T) {
	g := NewWithT(t)
	body, _ := json.Marshal(map[string]string{"team": s.victim, "template": s.tmpl})
	tok := signed(t, solvedPath, body)
	var v instancer.Verification
	code, answer := ask(t, tok, "POST", solvedPath, body)
	g.Expect(code).To(Equal(http.StatusOK), "%s", answer)
	g.Expect(json.Unmarshal(answer, &v)).To(Succeed())
	g.Expect(v.Stopped).To(BeFalse(), "the template does not destroy on solve")
	code, answer = ask(t, tok, "POST", solvedPath, body)
	g.Expect(code).To(Equal(http.StatusUnauthorized), "a call goes once to a replica: %s", answer)
	code, answer = askAt(t, api2.URL, tok, "POST", solvedPath, body)
	g.Expect(code).To(BeElementOf(http.StatusOK, http.StatusUnauthorized), "%s", answer)
	g.Expect(string(answer)).NotTo(ContainSubstring(`"stopped":true`))
	for _, extra := range []map[string]any{{"stop": true}, {"name": s.victimCh.Name}, {"namespace": "kube-system"}} {
		fields := map[string]any{"team": s.victim, "template": s.tmpl}
		maps.Copy(fields, extra)
		body, _ := json.Marshal(fields)
		code, answer := ask(t, signed(t, solvedPath, body), "POST", solvedPath, body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", body, answer)
	}
	s.victimUntouched(g)
}

// description: anyone reads the description, the same bytes whoever asks
// and however: no template, team or instance in it.
func (s *sweep) description(t *testing.T) {
	g := NewWithT(t)
	want, err := os.ReadFile("openapi.json")
	g.Expect(err).NotTo(HaveOccurred())
	for _, asker := range []struct{ tok, query string }{
		{"", ""}, {s.hostileTok, ""}, {s.victimTok, "?template=" + s.tmpl + "&team=" + s.victim}, {"not a token", "?all=true"},
	} {
		code, answer := s.askAsHostile(g, t, asker.tok, "GET", "/api/v1/openapi.json"+asker.query, nil)
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(answer).To(Equal(want), "the embedded description, nothing added")
		for _, data := range []string{s.tmpl, s.pow, s.shared, s.victim, s.hostile} {
			g.Expect(string(answer)).NotTo(ContainSubstring(data))
		}
	}
}

// templates: the startable templates alone, each in its public fields only,
// whatever a query string asks for.
func (s *sweep) templates(t *testing.T) {
	g := NewWithT(t)
	public := []string{"name", "title", "lifetime", "maxRenewals", "proofOfWork", "shared"}
	for _, query := range []string{"", "?all=true", "?verbose=1&fields=image,values,secretEnv,flags,env",
		"?template=" + s.tmpl + "&participant=" + s.victim, "?startable=false&namespace=kube-system"} {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "GET", "/api/v1/templates"+query, nil)
		g.Expect(code).To(Equal(http.StatusOK), query)
		var list struct{ Templates []map[string]json.RawMessage }
		g.Expect(json.Unmarshal(answer, &list)).To(Succeed())
		var names []string
		for _, tmpl := range list.Templates {
			for key := range tmpl {
				g.Expect(public).To(ContainElement(key), "a new field of a template's view: is it organiser detail? (%s)", query)
			}
			var name string
			g.Expect(json.Unmarshal(tmpl["name"], &name)).To(Succeed())
			names = append(names, name)
		}
		g.Expect(names).To(ContainElements(s.tmpl, s.pow, s.shared), query)
		g.Expect(names).NotTo(ContainElement(s.closed), "%s: a template not startable is not listed", query)
	}
}

// list: the team's own instances and the shared ones, whatever the query
// string names; none of another team's.
func (s *sweep) list(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, query := range []string{"", "?participant=" + s.victim, "?team=" + s.victim + "&template=" + s.tmpl, "?all=true&namespace=" + instancesNamespace} {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "GET", "/api/v1/instances"+query, nil)
		g.Expect(code).To(Equal(http.StatusOK), query)
		var list struct{ Instances []instancer.Instance }
		g.Expect(json.Unmarshal(answer, &list)).To(Succeed())
		g.Expect(list.Instances).To(ContainElement(HaveField("Name", s.sharedCh.Name)), "the shared instance is on every team's page")
		for _, inst := range list.Instances {
			// Read back: each is the hostile team's, or not a team's (a
			// shared template's, the organiser's). One gone meanwhile (an
			// earlier test's) shows nothing of anyone's.
			ch := &ctfv1alpha1.Challenge{}
			err := k8s.Get(ctx, client.ObjectKey{Namespace: instancesNamespace, Name: inst.Name}, ch)
			if apierrors.IsNotFound(err) {
				continue
			}
			g.Expect(err).NotTo(HaveOccurred())
			if ch.Spec.Participant == s.hostile {
				continue
			}
			g.Expect(ch.Labels).NotTo(HaveKeyWithValue(ctfv1alpha1.CreatedByLabel, "instancer"), "%s lists %s, %s's", query, inst.Name, ch.Spec.Participant)
			tmpl := &ctfv1alpha1.ChallengeTemplate{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: ch.Spec.Template}, tmpl); !apierrors.IsNotFound(err) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(tmpl.Spec.IsShared()).To(BeTrue(), "%s lists %s, %s's", query, inst.Name, ch.Spec.Participant)
			}
		}
	}
}

// start: a body names the template (and a proof of work) and nothing else;
// the Challenge made is the token's team's, with nothing of the team's in
// it, within the template's quotas and lifetime, the cooldown, the starts
// per minute and the proof of work.
func (s *sweep) start(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	team, rival := uniqueName("starter"), uniqueName("rival")
	tok, rivalTok := mint(t, team), mint(t, rival)
	perTeam := startableTemplate(t, func(spec *ctfv1alpha1.ChallengeTemplateSpec) { spec.MaxInstancesPerParticipant = ptr.To[int32](1) })
	capped := startableTemplate(t, func(spec *ctfv1alpha1.ChallengeTemplateSpec) { spec.MaxInstances = ptr.To[int32](1) })

	for _, extra := range []string{
		`"values":{"image":"evil.example/x:1","env":[{"name":"X","value":"y"}]}`,
		`"image":"evil.example/x:1"`,
		`"resources":{"limits":{"cpu":"64","memory":"256Gi"}}`,
		`"participant":"` + s.victim + `"`,
		`"sharing":"Shared"`,
		`"security":{"pod":"privileged"}`,
		`"lifetime":"720h"`,
		`"env":[{"name":"X","value":"y"}]`,
		`"ports":[{"name":"ssh","port":22}]`,
		`"expose":{"type":"LoadBalancer"}`,
		`"namespace":"kube-system"`,
		`"labels":{"ctf.challenge-operator.io/pool":"x"}`,
		`"renewedAt":"2100-01-01T00:00:00Z"`,
		`"name":"` + s.victimCh.Name + `"`,
		`"spec":{"participant":"` + s.victim + `"}`,
		`"Template":"` + s.pow + `"`,
		`"template":"` + s.pow + `"`,
		`"TEMPLATE":"` + s.pow + `"`,
	} {
		body := []byte(`{"template":"` + s.tmpl + `",` + extra + `}`)
		code, answer := s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", body, answer)
		g.Expect(string(answer)).To(ContainSubstring(`"bad_request"`))
	}
	for _, body := range []string{`{"template":{"name":"` + s.tmpl + `"}}`, `["` + s.tmpl + `"]`, `{"template":"` + s.tmpl + `"}{"participant":"x"}`,
		"template=" + s.tmpl + "&participant=" + s.victim} {
		code, answer := s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", []byte(body))
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", body, answer)
	}
	g.Expect(s.challengesNaming(g, team)).To(BeEmpty(), "no refused body made anything")
	s.victimUntouched(g)
	kube := &ctfv1alpha1.ChallengeList{}
	g.Expect(k8s.List(ctx, kube, client.InNamespace("kube-system"))).To(Succeed())
	g.Expect(kube.Items).To(BeEmpty())

	// A start whose query string names what the body may not: ignored. Read
	// back, the instance is the template's and the token's team's, nothing
	// else, and expires.
	code, answer := s.askAsHostile(g, t, tok, "POST", "/api/v1/instances?participant="+s.victim+"&namespace=kube-system&image=evil.example/x:1",
		[]byte(`{"template":"`+s.tmpl+`"}`))
	g.Expect(code).To(Equal(http.StatusCreated), "%s", answer)
	code, _ = s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", []byte(`{"template":"`+s.tmpl+`"}`))
	g.Expect(code).To(Equal(http.StatusOK), "a second start returns the one instance")
	ch := &ctfv1alpha1.Challenge{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(s.tmpl, team)}, ch)).To(Succeed())
		g.Expect(ch.Status.StartedAt).NotTo(BeNil(), "installed: it counts in the team's quota")
		g.Expect(ch.Status.ExpiresAt).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	g.Expect(ch.Spec).To(Equal(ctfv1alpha1.ChallengeSpec{Template: s.tmpl, Participant: team}), "the template's and the token's team, nothing else")
	g.Expect(ch.Labels).To(Equal(map[string]string{ctfv1alpha1.ParticipantLabel: team, ctfv1alpha1.CreatedByLabel: "instancer"}))
	s.expiresWithin(g, ch, 0)

	// The organiser's quotas: perTeam starts for a team holding no other
	// instance (the team holds one), capped one instance in all (the
	// rival's). Then the proof of work: none, or the rival's, starts
	// nothing; and a fourth start in the minute is refused, though with its
	// own proof of work.
	g.Expect(call(t, rivalTok, "POST", "/api/v1/instances", map[string]string{"template": capped}, nil)).To(Equal(http.StatusCreated))
	h.EventuallyPhase(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(capped, rival)}}, ctfv1alpha1.PhaseRunning)
	for _, tmpl := range []string{perTeam, capped} {
		code, answer = s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", []byte(`{"template":"`+tmpl+`"}`))
		g.Expect(code).To(Equal(http.StatusCreated), "%s", answer)
	}
	code, answer = s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", []byte(`{"template":"`+s.pow+`"}`))
	g.Expect(code).To(Equal(http.StatusPreconditionRequired), "no proof of work: %s", answer)
	theirs := solvedAt(t, api.URL, rivalTok, s.pow, "start")
	code, answer = s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", []byte(`{"template":"`+s.pow+`","proofOfWork":"`+theirs+`"}`))
	g.Expect(code).To(Equal(http.StatusForbidden), "the rival's proof of work: %s", answer)
	own := solvedAt(t, api.URL, tok, s.pow, "start")
	code, answer = s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", []byte(`{"template":"`+s.pow+`","proofOfWork":"`+own+`"}`))
	g.Expect(code).To(Equal(http.StatusTooManyRequests), "a fourth start in the minute: %s", answer)
	g.Expect(string(answer)).To(ContainSubstring(`"rate_limited"`))
	over := h.EventuallyPhase(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(perTeam, team)}}, ctfv1alpha1.PhaseError)
	g.Expect(over.Status.Reason).To(Equal("QuotaExceeded"))
	g.Expect(over.Status.Endpoint).To(BeNil())
	queued := h.EventuallyPhase(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(capped, team)}}, ctfv1alpha1.PhaseQueued)
	g.Expect(queued.Status.Endpoint).To(BeNil())

	// The cooldown after a stop.
	code, answer = s.askAsHostile(g, t, tok, "DELETE", instancePath(s.tmpl), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), "%s", answer)
	g.Eventually(func(g Gomega) {
		code, answer := s.askAsHostile(g, t, tok, "POST", "/api/v1/instances", []byte(`{"template":"`+s.tmpl+`"}`))
		g.Expect(code).To(Equal(http.StatusTooManyRequests), "%s", answer)
		g.Expect(string(answer)).To(ContainSubstring(`"cooldown"`))
	}, timeout, interval).Should(Succeed())
	g.Expect(s.challengesNaming(g, team)).To(ConsistOf(HaveField("Spec.Template", perTeam), HaveField("Spec.Template", capped)),
		"the stopped one gone, nothing of the refused starts")
}

// challengesNaming are the Challenges of the instances' namespace whose
// label or spec names team.
func (s *sweep) challengesNaming(g Gomega, team string) []ctfv1alpha1.Challenge {
	list := &ctfv1alpha1.ChallengeList{}
	g.ExpectWithOffset(1, k8s.List(context.Background(), list, client.InNamespace(instancesNamespace))).To(Succeed())
	return slices.DeleteFunc(list.Items, func(ch ctfv1alpha1.Challenge) bool {
		return ch.Spec.Participant != team && ch.Labels[ctfv1alpha1.ParticipantLabel] != team
	})
}

// expiresWithin expects ch to expire within the template's maximum
// lifetime of its last start (its last renewal, else its admission), after
// at most renewals, and at most the maximum from now.
func (s *sweep) expiresWithin(g Gomega, ch *ctfv1alpha1.Challenge, renewals int32) {
	st := ch.Status
	g.ExpectWithOffset(1, st.ExpiresAt).NotTo(BeNil())
	g.ExpectWithOffset(1, st.Renewals).To(Equal(renewals))
	start := ch.CreationTimestamp
	if st.AdmittedAt != nil {
		start = *st.AdmittedAt
	}
	g.ExpectWithOffset(1, st.ExpiresAt.Time).To(BeTemporally("<=", start.Add(time.Duration(renewals+1)*s.maxLifetime)), "every lifetime at most lifetime.max")
	if st.RenewedAt != nil {
		start = *st.RenewedAt
	}
	g.ExpectWithOffset(1, st.ExpiresAt.Time).To(BeTemporally("<=", start.Add(s.maxLifetime)))
	g.ExpectWithOffset(1, st.ExpiresAt.Time).To(BeTemporally("<=", time.Now().Add(s.maxLifetime)))
}

// read: another team's instance is never shown, however it is named; the
// shared one is, the organiser's.
func (s *sweep) read(t *testing.T) {
	g := NewWithT(t)
	for _, name := range append(s.craftedNames(), s.tmpl, s.tmpl+"?participant="+s.victim+"&team="+s.victim) {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "GET", instancePath(name), nil)
		refused(g, code, answer, name)
	}
	var shared instancer.Instance
	g.Expect(call(t, s.hostileTok, "GET", instancePath(s.shared), nil, &shared)).To(Equal(http.StatusOK))
	g.Expect(shared.Name).To(Equal(s.sharedCh.Name))
	g.Expect(shared.ExpiresAt).To(BeNil())
	s.victimUntouched(g)
}

// stop: a team stops its own instance alone; never another's, however
// named, nor a shared one, not even as a team of the shared instance's
// participant's name; nor through the platform's solve notice.
func (s *sweep) stop(t *testing.T) {
	g := NewWithT(t)
	for _, name := range append(s.craftedNames(), s.tmpl, s.tmpl+"?participant="+s.victim) {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "DELETE", instancePath(name), nil)
		refused(g, code, answer, name)
	}
	for _, tok := range []string{s.hostileTok, s.victimTok, mint(t, s.sharedCh.Spec.Participant)} {
		code, answer := ask(t, tok, "DELETE", instancePath(s.shared), nil)
		g.Expect(code).To(Equal(http.StatusConflict), "%s", answer)
		g.Expect(string(answer)).To(ContainSubstring(`"shared"`))
	}
	notice, _ := json.Marshal(map[string]string{"team": s.victim, "template": s.tmpl})
	for _, path := range []string{solvedPath, verifyPath} {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "POST", path, notice)
		g.Expect(code).To(Equal(http.StatusUnauthorized), "a team's token on %s: %s", path, answer)
	}
	s.victimUntouched(g)
	shared := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(s.sharedCh), shared)).To(Succeed())
	g.Expect(shared.DeletionTimestamp).To(BeNil(), "the shared instance stays")
}

// renew: another team renews nothing of the victim's; the victim's own
// renewal body carries nothing but a proof of work, and its renewals stop
// at the template's limit, each within lifetime.max.
func (s *sweep) renew(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, name := range append(s.craftedNames(), s.tmpl, s.shared) {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "POST", instancePath(name)+"/renew", nil)
		refused(g, code, answer, name)
	}
	s.victimUntouched(g)
	for _, body := range []string{`{"lifetime":"720h"}`, `{"renewedAt":"2100-01-01T00:00:00Z"}`, `{"maxRenewals":1000}`,
		`{"proofOfWork":"","expiresAt":"2100-01-01T00:00:00Z"}`, `{"proofOfWork":"a","proofOfWork":"b"}`, `["renew"]`} {
		code, answer := ask(t, s.victimTok, "POST", instancePath(s.tmpl)+"/renew", []byte(body))
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", body, answer)
	}
	s.victimUntouched(g)

	// From here on the victim's renewals are its own.
	defer func() {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s.victimCh), s.victimCh)).To(Succeed())
	}()
	code, answer := ask(t, s.victimTok, "POST", instancePath(s.tmpl)+"/renew", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%s", answer)
	renewed := &ctfv1alpha1.Challenge{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s.victimCh), renewed)).To(Succeed())
		g.Expect(renewed.Status.Renewals).To(BeEquivalentTo(1), "the operator counted the renewal")
	}, timeout, interval).Should(Succeed())
	s.expiresWithin(g, renewed, 1)
	code, answer = ask(t, s.victimTok, "POST", instancePath(s.tmpl)+"/renew", nil)
	g.Expect(code).To(Equal(http.StatusConflict), "%s", answer)
	g.Expect(string(answer)).To(ContainSubstring(`"renewal_limit"`))
	after := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s.victimCh), after)).To(Succeed())
	g.Expect(after.Spec.RenewedAt).To(Equal(renewed.Spec.RenewedAt), "a refused renewal writes nothing")
	g.Expect(after.Status.ExpiresAt).To(Equal(renewed.Status.ExpiresAt))
}

// puzzle: a proof-of-work challenge is the token's team's, whatever the
// query string names; it starts nothing of another team's.
func (s *sweep) puzzle(t *testing.T) {
	g := NewWithT(t)
	code, answer := s.askAsHostile(g, t, s.hostileTok, "GET",
		instancePath(s.pow)+"/challenge?action=start&team="+s.victim+"&participant="+s.victim+"&template="+s.tmpl, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%s", answer)
	var c proofofwork.Challenge
	g.Expect(json.Unmarshal(answer, &c)).To(Succeed())
	_, params, _ := strings.Cut(c.Salt, "?")
	purpose, err := url.ParseQuery(strings.TrimSuffix(params, "&"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(purpose.Get("team")).To(Equal(s.hostile))
	g.Expect(purpose.Get("template")).To(Equal(s.pow))
	solution, err := proofofwork.Solve(c)
	g.Expect(err).NotTo(HaveOccurred())
	code, answer = ask(t, s.victimTok, "POST", "/api/v1/instances", []byte(`{"template":"`+s.pow+`","proofOfWork":"`+solution+`"}`))
	g.Expect(code).To(Equal(http.StatusForbidden), "the hostile team's solution is not the victim's: %s", answer)
	g.Expect(s.challengesNaming(g, s.victim)).To(ConsistOf(HaveField("Spec.Template", s.tmpl)), "nothing started for the victim")

	for _, query := range []string{"", "?action=stop", "?action=START", "?action=delete&action=start"} {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "GET", instancePath(s.pow)+"/challenge"+query, nil)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", query, answer)
	}
	for _, name := range append(s.craftedNames(), s.tmpl) {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "GET", instancePath(name)+"/challenge?action=start", nil)
		refused(g, code, answer, name)
	}
}

// events: a stream follows the token's team's instance alone: not the
// victim's, however named, nor its changes.
func (s *sweep) events(t *testing.T) {
	g := NewWithT(t)
	for _, name := range append(s.craftedNames(), s.shared) {
		code, answer := s.askAsHostile(g, t, s.hostileTok, "GET", instancePath(name)+"/events", nil)
		refused(g, code, answer, name)
	}
	team := uniqueName("streamer")
	tok := mint(t, team)
	views := s.stream(t, tok, s.tmpl)
	next := func() instancer.Instance {
		select {
		case v, ok := <-views:
			g.Expect(ok).To(BeTrue(), "the stream ended")
			return v
		case <-time.After(timeout):
			t.Fatal("no event within the timeout")
		}
		return instancer.Instance{}
	}
	own := nameOf(s.tmpl, team)
	first := next()
	g.Expect(first.Phase).To(Equal(instancer.PhaseAbsent))
	g.Expect(first.Name).To(Equal(own))

	// The victim's instance changes, then the team starts its own: the
	// stream's next events are the team's, in order, and the victim's change
	// would have come first.
	poked := s.victimCh.DeepCopy()
	patch := client.MergeFrom(poked.DeepCopy())
	poked.Annotations = map[string]string{"sweep.test/poked": "yes"}
	g.Expect(k8s.Patch(context.Background(), poked, patch)).To(Succeed())
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": s.tmpl}, nil)).To(Equal(http.StatusCreated))
	for v := next(); v.Phase != "Running"; v = next() {
		g.Expect(v.Name).To(Equal(own), "the stream shows %+v", v)
	}
	s.victimUntouched(g)
}

// stream opens tmpl's event stream as the holder of tok and returns its
// instances, each as a team reads it (and checked to hold nothing of the
// victim's nor the organiser's), until the test ends.
func (s *sweep) stream(t *testing.T, tok, tmpl string) <-chan instancer.Instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", api.URL+instancePath(tmpl)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the stream of %s: %d", tmpl, res.StatusCode)
	}
	views := make(chan instancer.Instance, 64)
	go func() {
		defer close(views)
		defer func() { _ = res.Body.Close() }()
		scanner := bufio.NewScanner(res.Body)
		for scanner.Scan() {
			data, ok := strings.CutPrefix(scanner.Text(), "data: ")
			if !ok {
				continue
			}
			var v instancer.Instance
			if json.Unmarshal([]byte(data), &v) != nil || slices.ContainsFunc(slices.Concat(s.victims, s.organiser), func(p string) bool {
				return strings.Contains(data, p)
			}) {
				v = instancer.Instance{Name: "(not a view of the team's own instance) " + data}
			}
			views <- v
		}
	}()
	return views
}
