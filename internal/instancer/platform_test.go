package instancer_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/platformauth"
	"github.com/challenge-operator/challenge-operator/internal/token"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

const (
	verifyPath = "/api/v1/platform/verify"
	solvedPath = "/api/v1/platform/solved"
)

// signed is a platform token for one call of body to path, as a platform
// signs it: its own key, a fresh jti.
func signed(t *testing.T, path string, body []byte) string {
	t.Helper()
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	tok, err := platformauth.Sign(platformKeys["ctfd"], "ctfd", hex.EncodeToString(jti), http.MethodPost, path, body, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// platformCall sends body to path at r with the token tok ("" for none)
// and decodes the answer into out.
func platformCall(t *testing.T, r *replica, tok, path string, body []byte, out any) int {
	t.Helper()
	return callAt(t, r.URL, tok, http.MethodPost, path, body, out)
}

// verify asks api, as the platform, what team's submission is.
func verify(t *testing.T, team, template, submission string) instancer.Verification {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"team": team, "template": template, "submission": submission})
	var v instancer.Verification
	NewWithT(t).Expect(platformCall(t, api, signed(t, verifyPath, body), verifyPath, body, &v)).To(Equal(http.StatusOK))
	return v
}

// flagOf is team's perTeam flag main of template, as the operator makes it.
func flagOf(template, team string) string {
	return ctfflag.PerTeam(harness.FlagCodec(), template, "main", team, "CTF{%s}")
}

// eventsOf are the Events on the Challenge named name.
func eventsOf(g Gomega, name string) []corev1.Event {
	var list corev1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(instancesNamespace))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// TestVerificationTellsWhoseFlagItIs: three teams' instances of a template
// of a perTeam flag; the platform asks about each team's submissions. A
// team's own flag is correct; another team's is shared, with its owner, an
// Event on both teams' instances and a count, and scored as the template
// says; anything else is wrong. No flag is stored anywhere: the answer
// comes from the submission alone.
func TestVerificationTellsWhoseFlagItIs(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}}}
	})
	teams := []string{"team-a", "team-b", "team-c"}
	for _, team := range teams {
		g.Expect(call(t, mint(t, team), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	}

	g.Expect(verify(t, "team-a", tmpl, flagOf(tmpl, "team-a"))).To(Equal(instancer.Verification{Verdict: "correct", Accepted: true}))
	g.Expect(verify(t, "team-c", tmpl, " "+flagOf(tmpl, "team-c")+"\n")).To(Equal(instancer.Verification{Verdict: "correct", Accepted: true}),
		"spaces around a pasted flag are not the flag")
	g.Expect(verify(t, "team-b", tmpl, flagOf(tmpl, "team-a"))).To(Equal(instancer.Verification{Verdict: "shared", Owner: "team-a"}),
		"another team's flag, refused by default")
	for _, wrong := range []string{"CTF{guess}", "", flagOf(tmpl+"x", "team-c"), ctfflag.PerTeam(harness.FlagCodec(), tmpl, "other", "team-c", "CTF{%s}"),
		"FLAG" + flagOf(tmpl, "team-c")[3:], flagOf(tmpl, "team-c") + "}"} {
		g.Expect(verify(t, "team-c", tmpl, wrong)).To(Equal(instancer.Verification{Verdict: "wrong"}), "%q", wrong)
	}

	// The shared flag, on both teams' instances, never its value.
	for _, team := range []string{"team-a", "team-b"} {
		g.Eventually(func(g Gomega) {
			events := eventsOf(g, nameOf(tmpl, team))
			g.Expect(events).To(ContainElement(And(HaveField("Reason", "SharedFlag"), HaveField("Type", corev1.EventTypeWarning),
				HaveField("Message", ContainSubstring("team-b")), HaveField("Message", ContainSubstring("team-a")))))
			for _, e := range events {
				g.Expect(e.Message).NotTo(ContainSubstring(flagOf(tmpl, "team-a")))
			}
		}, timeout, interval).Should(Succeed(), team)
	}
	g.Expect(eventsOf(g, nameOf(tmpl, "team-c"))).NotTo(ContainElement(HaveField("Reason", "SharedFlag")))
	g.Expect(metric(t, api, `challenge_instancer_shared_flags_total{template="`+tmpl+`"}`)).To(Equal("1"))
	g.Expect(metric(t, api, `challenge_instancer_flag_verifications_total{template="`+tmpl+`",verdict="correct"}`)).To(Equal("2"))
	g.Expect(metric(t, api, `challenge_instancer_flag_verifications_total{template="`+tmpl+`",verdict="wrong"}`)).To(Equal("6"))

	// The organiser scores shared flags, flagged.
	current := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: tmpl}}
	g.Expect(harness.EditTemplate(context.Background(), k8s, current, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Submissions = &ctfv1alpha1.Submissions{SharedFlag: ctfv1alpha1.SharedFlagCorrectFlagged}
	})).To(Succeed())
	g.Eventually(func() instancer.Verification {
		return verify(t, "team-c", tmpl, flagOf(tmpl, "team-b"))
	}, timeout, interval).Should(Equal(instancer.Verification{Verdict: "shared", Accepted: true, Owner: "team-b"}))
}

// TestDestroyOnSolve: a template that stops a team's instance when it
// solves: the platform's correct verification stops it, as the team's own
// stop would, and so does its solved call; a wrong flag stops nothing.
func TestDestroyOnSolve(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}}}
		s.Submissions = &ctfv1alpha1.Submissions{DestroyOnSolve: true}
	})
	for _, team := range []string{"team-d", "team-e"} {
		g.Expect(call(t, mint(t, team), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	}
	gone := func(team string) func(Gomega) {
		return func(g Gomega) {
			ch := &ctfv1alpha1.Challenge{}
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}, ch)
			g.Expect(apierrors.IsNotFound(err) || (err == nil && ch.DeletionTimestamp != nil)).To(BeTrue(), "team %s's instance is stopped (%v)", team, err)
		}
	}

	g.Expect(verify(t, "team-d", tmpl, "CTF{nope}")).To(Equal(instancer.Verification{Verdict: "wrong"}))
	g.Expect(verify(t, "team-d", tmpl, flagOf(tmpl, "team-d"))).To(Equal(instancer.Verification{Verdict: "correct", Accepted: true, Stopped: true}))
	g.Eventually(gone("team-d"), timeout, interval).Should(Succeed())
	g.Expect(eventsOf(g, nameOf(tmpl, "team-d"))).To(ContainElement(HaveField("Reason", "StoppedOnSolve")))
	// Its stop is a stop: once it is gone, the team's cooldown runs.
	g.Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(tmpl, "team-d")}, &ctfv1alpha1.Challenge{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue())
	// (The instancer's cache may show it leaving a moment longer: 409
	// stopping, then the cooldown.)
	g.Eventually(func(g Gomega) {
		var refusal apiError
		g.Expect(call(t, mint(t, "team-d"), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &refusal)).To(Equal(http.StatusTooManyRequests))
		g.Expect(refusal.Code).To(Equal("cooldown"))
	}, timeout, interval).Should(Succeed())

	body, _ := json.Marshal(map[string]string{"team": "team-e", "template": tmpl})
	var solved instancer.Solved
	g.Expect(platformCall(t, api, signed(t, solvedPath, body), solvedPath, body, &solved)).To(Equal(http.StatusOK))
	g.Expect(solved.Stopped).To(BeTrue())
	g.Eventually(gone("team-e"), timeout, interval).Should(Succeed())
	g.Expect(platformCall(t, api, signed(t, solvedPath, body), solvedPath, body, &solved)).To(Equal(http.StatusOK))
	g.Expect(solved.Stopped).To(BeFalse(), "nothing left to stop")
	g.Expect(metric(t, api, `challenge_instancer_solve_stops_total{template="`+tmpl+`"}`)).To(Equal("2"))
}

// asWas is a cache that still shows one Challenge as it was when it was
// made, whatever has happened to it since.
type asWas struct {
	client.Reader
	ch *ctfv1alpha1.Challenge
}

func (c asWas) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*ctfv1alpha1.ChallengeList); ok {
		l.Items = []ctfv1alpha1.Challenge{*c.ch.DeepCopy()}
		return nil
	}
	return c.Reader.List(ctx, list, opts...)
}

func (c asWas) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if ch, ok := obj.(*ctfv1alpha1.Challenge); ok && key == client.ObjectKeyFromObject(c.ch) {
		c.ch.DeepCopyInto(ch)
		return nil
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestASecondSolveNoticeStopsNothing: a second notice of a solve, come
// before the instancer's cache shows the stop the first one made, stops
// nothing and says so (CI saw it report a second stop).
func TestASecondSolveNoticeStopsNothing(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}}}
		s.Submissions = &ctfv1alpha1.Submissions{DestroyOnSolve: true}
	})
	team := uniqueName("team")
	g.Expect(call(t, mint(t, team), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	running := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}, running)).To(Succeed())
	lagging := httptest.NewServer(newServer(func(c client.Reader) client.Reader { return asWas{Reader: c, ch: running} }).Handler())
	defer lagging.Close()

	body, _ := json.Marshal(map[string]string{"team": team, "template": tmpl})
	solved := func() instancer.Solved {
		var out instancer.Solved
		g.Expect(callAt(t, lagging.URL, signed(t, solvedPath, body), http.MethodPost, solvedPath, body, &out)).To(Equal(http.StatusOK))
		return out
	}
	g.Expect(solved().Stopped).To(BeTrue(), "the first notice stops it")
	g.Expect(solved().Stopped).To(BeFalse(), "the second finds it stopped, though the cache does not show it")
}

// TestPlatformCallsRefused: what is not the platform's own call, made once,
// for this very request, is refused, and changes nothing.
func TestPlatformCallsRefused(t *testing.T) {
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}}}
		s.Submissions = &ctfv1alpha1.Submissions{DestroyOnSolve: true}
	})
	g := NewWithT(t)
	g.Expect(call(t, mint(t, "team-f"), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	body, _ := json.Marshal(map[string]string{"team": "team-f", "template": tmpl})
	now := time.Now()
	sign := func(key []byte, kid, jti, path string, body []byte, at time.Time, lifetime time.Duration) string {
		tok, err := platformauth.Sign(key, kid, jti, http.MethodPost, path, body, at, lifetime)
		g.Expect(err).NotTo(HaveOccurred())
		return tok
	}
	replayed := signed(t, verifyPath, []byte(`{"team":"team-f","template":"`+tmpl+`","submission":"CTF{x}"}`))
	g.Expect(platformCall(t, api, replayed, verifyPath, []byte(`{"team":"team-f","template":"`+tmpl+`","submission":"CTF{x}"}`), nil)).To(Equal(http.StatusOK))
	teamToken, err := token.MintFor(token.Keys{"ctfd": platformKeys["ctfd"]}, "ctfd", "team-f", audience, time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	for _, tc := range []struct {
		name, tok string
		body      []byte
	}{
		{"no token", "", body},
		{"the team's own token", mint(t, "team-f"), body},
		{"a team token signed with the platform's key", teamToken, body},
		{"a forged signature", sign([]byte("not the platform's key, but long enough"), "ctfd", "forged-call-0000001", solvedPath, body, now, time.Minute), body},
		{"an unknown key id", sign(platformKeys["ctfd"], "other", "unknown-kid-000001", solvedPath, body, now, time.Minute), body},
		{"a token for another body", signed(t, solvedPath, []byte(`{"team":"team-g","template":"`+tmpl+`"}`)), body},
		{"a token for another route", signed(t, verifyPath, body), body},
		{"a replayed token", replayed, []byte(`{"team":"team-f","template":"` + tmpl + `","submission":"CTF{x}"}`)},
		{"an expired token", sign(platformKeys["ctfd"], "ctfd", "expired-call-00001", solvedPath, body, now.Add(-5*time.Minute), time.Minute), body},
		{"a token living an hour", sign(platformKeys["ctfd"], "ctfd", "long-lived-call-01", solvedPath, body, now, time.Hour), body},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			path := solvedPath
			if tc.name == "a replayed token" {
				path = verifyPath
			}
			var refusal apiError
			g.Expect(platformCall(t, api, tc.tok, path, tc.body, &refusal)).To(Equal(http.StatusUnauthorized))
			g.Expect(refusal.Code).To(Equal("unauthorized"))
		})
	}
	// Nothing was stopped by any of them.
	g.Expect(challengesOf(t, "team-f")).To(ContainElement(HaveField("DeletionTimestamp", BeNil())))
	// And a platform token opens no team route.
	var refusal apiError
	g.Expect(call(t, signed(t, "/api/v1/instances", nil), "GET", "/api/v1/instances", nil, &refusal)).To(Equal(http.StatusUnauthorized))
}

// TestPlatformRefusalsSayWhy: each refusal of a platform call the platform
// can act on has a code of its own (callAt holds each to openapi.json): no
// such template, no such flag, a flag to name, not a team, a static flag
// whose digest is not published yet, an instancer without the flag key.
func TestPlatformRefusalsSayWhy(t *testing.T) {
	g := NewWithT(t)
	tmpl := destroyOnSolveTemplate(t, "main", "bonus")
	missing := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", Static: &ctfv1alpha1.SecretKeyRef{Namespace: instancesNamespace, Name: uniqueName("none"), Key: "flag"}}}
	})
	refused := func(base, path string, fields map[string]string) (int, apiError) {
		body, _ := json.Marshal(fields)
		var refusal apiError
		return callAt(t, base, signed(t, path, body), http.MethodPost, path, body, &refusal), refusal
	}
	for _, tc := range []struct {
		name   string
		path   string
		fields map[string]string
		status int
		code   string
	}{
		{"no such template", verifyPath, map[string]string{"team": "team-m", "template": uniqueName("none"), "submission": "CTF{x}"}, http.StatusNotFound, "template_not_found"},
		{"no such flag", verifyPath, map[string]string{"team": "team-m", "template": tmpl, "flag": "other", "submission": "CTF{x}"}, http.StatusNotFound, "flag_not_found"},
		{"a flag to name", verifyPath, map[string]string{"team": "team-m", "template": tmpl, "submission": "CTF{x}"}, http.StatusBadRequest, "bad_request"},
		{"not a team", verifyPath, map[string]string{"team": "Team M", "template": tmpl, "flag": "main", "submission": "CTF{x}"}, http.StatusBadRequest, "bad_request"},
		{"a static flag not published", verifyPath, map[string]string{"team": "team-m", "template": missing, "submission": "CTF{x}"}, http.StatusServiceUnavailable, "flag_not_ready"},
		{"a solve of no such template", solvedPath, map[string]string{"team": "team-m", "template": uniqueName("none")}, http.StatusNotFound, "template_not_found"},
	} {
		status, refusal := refused(api.URL, tc.path, tc.fields)
		g.Expect(status).To(Equal(tc.status), tc.name)
		g.Expect(refusal.Code).To(Equal(tc.code), tc.name)
	}
	// An instancer without the flag key verifies no flag.
	ts := httptest.NewServer(newServer(nil).Handler())
	defer ts.Close()
	g.Eventually(func(g Gomega) {
		status, refusal := refused(ts.URL, verifyPath, map[string]string{"team": "team-m", "template": tmpl, "flag": "main", "submission": "CTF{x}"})
		g.Expect(status).To(Equal(http.StatusServiceUnavailable))
		g.Expect(refusal.Code).To(Equal("no_flag_key"))
	}, timeout, interval).Should(Succeed(), "once its cache has the template")
}

// TestSharedInstanceOnEveryTeamsPage: a shared template's one instance, the
// organisers', is the same instance at the same address on three teams'
// pages, none of which may start, stop or renew it.
func TestSharedInstanceOnEveryTeamsPage(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Sharing = ctfv1alpha1.SharingShared
	})
	var templates struct{ Templates []instancer.Template }
	g.Expect(call(t, mint(t, "team-h"), "GET", "/api/v1/templates", nil, &templates)).To(Equal(http.StatusOK))
	g.Expect(templates.Templates).To(ContainElement(And(HaveField("Name", tmpl), HaveField("Shared", true), HaveField("Lifetime", ""))))
	var refusal apiError
	g.Expect(call(t, mint(t, "team-h"), "GET", instancePath(tmpl), nil, &refusal)).To(Equal(http.StatusNotFound), "not started yet")

	bot := builders.FromTemplate(instancesNamespace, tmpl+"-shared", "organisers", tmpl)
	g.Expect(k8s.Create(context.Background(), bot)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), bot) })
	var first instancer.Instance
	for _, team := range []string{"team-h", "team-i", "team-j"} {
		tok := mint(t, team)
		var seen instancer.Instance
		g.Eventually(func(g Gomega) {
			g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &seen)).To(Equal(http.StatusOK))
			g.Expect(seen.Phase).To(Equal("Running"))
		}, timeout, interval).Should(Succeed(), team)
		g.Expect(seen.Name).To(Equal(bot.Name))
		g.Expect(seen.Connect).NotTo(BeEmpty())
		g.Expect(seen.ExpiresAt).To(BeNil(), "nobody renews it")
		if first.Name == "" {
			first = seen
		}
		g.Expect(seen).To(Equal(first), "the same instance at the same address for every team")
		var list struct{ Instances []instancer.Instance }
		g.Expect(call(t, tok, "GET", "/api/v1/instances", nil, &list)).To(Equal(http.StatusOK))
		g.Expect(list.Instances).To(ContainElement(first))

		for _, req := range []struct{ method, path string }{{"POST", "/api/v1/instances"}, {"DELETE", instancePath(tmpl)}, {"POST", instancePath(tmpl) + "/renew"}} {
			var body any
			if req.path == "/api/v1/instances" {
				body = map[string]string{"template": tmpl}
			}
			g.Expect(call(t, tok, req.method, req.path, body, &refusal)).To(Equal(http.StatusConflict), "%s %s", req.method, req.path)
			g.Expect(refusal.Code).To(Equal("shared"))
		}
		// Nor stream it: its page reads the instance instead.
		req, _ := http.NewRequest("GET", api.URL+instancePath(tmpl)+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		instancer.CheckStream(t, req, res)
		g.Expect(json.NewDecoder(res.Body).Decode(&refusal)).To(Succeed())
		_ = res.Body.Close()
		g.Expect(res.StatusCode).To(Equal(http.StatusConflict), "its event stream")
		g.Expect(refusal.Code).To(Equal("shared"))
	}
	g.Expect(challengesOf(t, "team-h")).To(BeEmpty(), "no team made an instance of it")
}

// TestVerificationOfAStaticFlag: a static flag, the same for every team, is
// verified against the digest the operator publishes in the template's
// status, which never holds the value; the instancer reads no Secret.
func TestVerificationOfAStaticFlag(t *testing.T) {
	g := NewWithT(t)
	const flag = "CTF{the-same-for-everyone}"
	secret := harness.OrganiserSecret("static-"+uniqueName("f"), map[string][]byte{"flag": []byte(flag)})
	g.Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", Static: &ctfv1alpha1.SecretKeyRef{Namespace: secret.Namespace, Name: secret.Name, Key: "flag"}}}
	})
	// Before the operator publishes the digest, the platform is asked to
	// come back; then the flag is verified.
	var current ctfv1alpha1.ChallengeTemplate
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: tmpl}, &current)).To(Succeed())
		g.Expect(current.Status.StaticFlags).To(HaveLen(1))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		body, _ := json.Marshal(map[string]string{"team": "team-k", "template": tmpl, "submission": flag})
		var v instancer.Verification
		g.Expect(platformCall(t, api, signed(t, verifyPath, body), verifyPath, body, &v)).To(Equal(http.StatusOK), "the instancer's cache has the digest")
		g.Expect(v).To(Equal(instancer.Verification{Verdict: "correct", Accepted: true}))
	}, timeout, interval).Should(Succeed())
	g.Expect(verify(t, "team-l", tmpl, flag)).To(Equal(instancer.Verification{Verdict: "correct", Accepted: true}), "every team's")
	g.Expect(verify(t, "team-k", tmpl, "CTF{the-same-for-everyone")).To(Equal(instancer.Verification{Verdict: "wrong"}))

	g.Expect(current.Status.StaticFlags[0].Digest).To(Equal(harness.FlagCodec().StaticDigest(tmpl, "main", flag)))
	status, err := json.Marshal(current.Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).NotTo(ContainSubstring("same-for-everyone"), "never the value")
}

// destroyOnSolveTemplate is a startable template that stops a team's
// instance on solve, with a perTeam flag of each name.
func destroyOnSolveTemplate(t *testing.T, flags ...string) string {
	t.Helper()
	return startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		for _, name := range flags {
			s.Flags = append(s.Flags, ctfv1alpha1.NamedFlag{Name: name, PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"},
				FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/" + name}})
		}
		s.Submissions = &ctfv1alpha1.Submissions{DestroyOnSolve: true}
	})
}

// verifyOn asks replica r, as the platform, what team's submission for
// flag of template is.
func verifyOn(t *testing.T, r *replica, team, template, flag, submission string) instancer.Verification {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"team": team, "template": template, "flag": flag, "submission": submission})
	var v instancer.Verification
	NewWithT(t).Expect(platformCall(t, r, signed(t, verifyPath, body), verifyPath, body, &v)).To(Equal(http.StatusOK))
	return v
}

// stillRunning asserts that ch is on the API server and not being deleted.
func stillRunning(g Gomega, ch *ctfv1alpha1.Challenge) {
	live := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ch), live)).To(Succeed())
	g.Expect(live.UID).To(Equal(ch.UID))
	g.Expect(live.DeletionTimestamp).To(BeNil(), "instance %s is not stopped", ch.Name)
}

// TestAReplayedSolveNoticeStopsNothingOnTheOtherReplica: a solve notice
// captured on the way and replayed, within its lifetime, to the replica
// that has not seen it stopped the instance the team started since. The
// replay is now refused on either replica, and a notice signed before an
// instance started never stops it.
func TestAReplayedSolveNoticeStopsNothingOnTheOtherReplica(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tmpl := destroyOnSolveTemplate(t, "main")
	team := uniqueName("team")
	g.Expect(call(t, mint(t, team), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	first := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}, first)).To(Succeed())

	body, _ := json.Marshal(map[string]string{"team": team, "template": tmpl})
	captured := signed(t, solvedPath, body)
	var solved instancer.Solved
	g.Expect(platformCall(t, api, captured, solvedPath, body, &solved)).To(Equal(http.StatusOK))
	g.Expect(solved.Stopped).To(BeTrue(), "the platform's own notice stops it")
	h.EventuallyGone(t, first, timeout, "the solved instance goes")

	// The team's next instance (started as the instancer starts one; the
	// cooldown would keep the team itself waiting).
	next := instanceOfTeam(t, nameOf(tmpl, team), tmpl, team)
	for _, r := range []*replica{api2, api} {
		var refusal apiError
		g.Expect(platformCall(t, r, captured, solvedPath, body, &refusal)).To(Equal(http.StatusUnauthorized), "the replay to replica %s", r.name)
		g.Expect(refusal.Code).To(Equal("unauthorized"))
	}
	stillRunning(g, next)

	// A notice signed before the next instance started (delivered late, or
	// replayed) is about an instance that no longer runs.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(next), next)).To(Succeed())
	late, err := platformauth.Sign(platformKeys["ctfd"], "ctfd", uniqueName("late-notice-call-"), http.MethodPost, solvedPath, body,
		next.CreationTimestamp.Add(-10*time.Second), 2*time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(platformCall(t, api2, late, solvedPath, body, &solved)).To(Equal(http.StatusOK))
	g.Expect(solved.Stopped).To(BeFalse(), "signed before the instance started")
	stillRunning(g, next)
}

// TestConcurrentSolveNoticesStopOnce: notices of one solve arriving at
// once on both replicas (two of four were answered stopped: true, each
// restarting the cooldown and counted) stop the instance once: one answer
// says so, one stop is counted.
func TestConcurrentSolveNoticesStopOnce(t *testing.T) {
	g := NewWithT(t)
	tmpl := destroyOnSolveTemplate(t, "main")
	team := uniqueName("team")
	g.Expect(call(t, mint(t, team), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	inst := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}}

	solvedBody, _ := json.Marshal(map[string]string{"team": team, "template": tmpl})
	verifyBody, _ := json.Marshal(map[string]string{"team": team, "template": tmpl, "submission": flagOf(tmpl, team)})
	const n = 8
	stopped := make([]bool, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		r, path, body := api, solvedPath, solvedBody
		if i%2 == 1 {
			r = api2
		}
		if i%4 >= 2 {
			path, body = verifyPath, verifyBody
		}
		tok := signed(t, path, body)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var answer struct{ Stopped bool }
			codes[i] = platformCall(t, r, tok, path, body, &answer)
			stopped[i] = answer.Stopped
		}()
	}
	wg.Wait()
	g.Expect(codes).To(HaveEach(http.StatusOK))
	g.Expect(stopped).To(ContainElement(BeTrue()))
	g.Expect(slices.DeleteFunc(slices.Clone(stopped), func(b bool) bool { return !b })).To(HaveLen(1), "answered stopped: %v", stopped)
	h.EventuallyGone(t, inst, timeout, "the solved instance goes")
	count := 0
	for _, r := range []*replica{api, api2} {
		if v := metric(t, r, `challenge_instancer_solve_stops_total{template="`+tmpl+`"}`); v != "" {
			n, err := strconv.Atoi(v)
			g.Expect(err).NotTo(HaveOccurred())
			count += n
		}
	}
	g.Expect(count).To(Equal(1), "stops counted on both replicas")
}

// TestDestroyOnSolveWaitsForEveryFlag: with several flags, the first
// correct one stopped the instance the team needs for the others. The
// instance now stops once every flag of the template is verified correct
// for the team, whichever replica verified each.
func TestDestroyOnSolveWaitsForEveryFlag(t *testing.T) {
	g := NewWithT(t)
	tmpl := destroyOnSolveTemplate(t, "user", "root")
	team := uniqueName("team")
	g.Expect(call(t, mint(t, team), "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	inst := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}, inst)).To(Succeed())
	flag := func(name string) string { return ctfflag.PerTeam(harness.FlagCodec(), tmpl, name, team, "CTF{%s}") }
	correct := instancer.Verification{Verdict: "correct", Accepted: true}

	g.Expect(verifyOn(t, api, team, tmpl, "user", flag("user"))).To(Equal(correct), "one flag of two")
	stillRunning(g, inst)
	g.Expect(verifyOn(t, api2, team, tmpl, "user", flag("user"))).To(Equal(correct), "the same flag again, on the other replica")
	g.Expect(verifyOn(t, api2, team, tmpl, "root", "CTF{guess}")).To(Equal(instancer.Verification{Verdict: "wrong"}))
	stillRunning(g, inst)
	g.Expect(verifyOn(t, api2, team, tmpl, "root", flag("root"))).To(Equal(instancer.Verification{Verdict: "correct", Accepted: true, Stopped: true}),
		"the last flag, on the replica that did not verify the first")
	h.EventuallyGone(t, inst, timeout, "the solved instance goes")
}
