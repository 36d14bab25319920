package instancer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/proofofwork"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// powTemplate creates a startable template that asks for a proof of work
// of the least difficulty (a Go solve takes well under a millisecond).
func powTemplate(t *testing.T) string {
	t.Helper()
	return startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Instancer.ProofOfWork = &ctfv1alpha1.ProofOfWork{Difficulty: 1000}
	})
}

// challengeAt asks the instancer at base for tok's challenge to act on tmpl.
func challengeAt(t *testing.T, base, tok, tmpl, action string) proofofwork.Challenge {
	t.Helper()
	var c proofofwork.Challenge
	NewWithT(t).Expect(callAt(t, base, tok, "GET", instancePath(tmpl)+"/challenge?action="+action, nil, &c)).To(Equal(http.StatusOK))
	return c
}

// solvedAt is the solution of tok's challenge to act on tmpl, issued by
// the instancer at base.
func solvedAt(t *testing.T, base, tok, tmpl, action string) string {
	t.Helper()
	solution, err := proofofwork.Solve(challengeAt(t, base, tok, tmpl, action))
	if err != nil {
		t.Fatal(err)
	}
	return solution
}

// wrongSolution answers c with a number that is not its own.
func wrongSolution(t *testing.T, c proofofwork.Challenge) string {
	t.Helper()
	right, err := proofofwork.Solve(c)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := base64.StdEncoding.DecodeString(right)
	var p struct{ Number int64 }
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	wrong, err := proofofwork.Encode(c, p.Number+1)
	if err != nil {
		t.Fatal(err)
	}
	return wrong
}

// refusedFor expects code and error code of a request.
func refusedFor(g Gomega, code int, e apiError, wantStatus int, wantCode, why string) {
	g.ExpectWithOffset(1, code).To(Equal(wantStatus), "%s: %+v", why, e)
	g.ExpectWithOffset(1, e.Code).To(Equal(wantCode), why)
}

// TestStartNeedsItsOwnProofOfWork: a template with proofOfWork is listed so
// and refuses a start with no solution, a wrong one, one solved for
// another team, template or action, and one used already; the right one
// starts, on either replica whichever issued it; a start that finds the
// instance needs one too.
func TestStartNeedsItsOwnProofOfWork(t *testing.T) {
	g := NewWithT(t)
	tmpl, other := powTemplate(t), powTemplate(t)
	plain := startableTemplate(t, nil)
	team := uniqueName("team")
	tok, otherTok := mint(t, team), mint(t, uniqueName("other"))

	var templates struct{ Templates []instancer.Template }
	g.Expect(call(t, tok, "GET", "/api/v1/templates", nil, &templates)).To(Equal(http.StatusOK))
	g.Expect(templates.Templates).To(ContainElement(And(HaveField("Name", tmpl), HaveField("ProofOfWork", true))))
	g.Expect(templates.Templates).To(ContainElement(And(HaveField("Name", plain), HaveField("ProofOfWork", false))))

	start := func(base, solution string) (int, apiError) {
		var e apiError
		body := map[string]string{"template": tmpl}
		if solution != "" {
			body["proofOfWork"] = solution
		}
		return callAt(t, base, tok, "POST", "/api/v1/instances", body, &e), e
	}
	code, e := start(api.URL, "")
	refusedFor(g, code, e, http.StatusPreconditionRequired, "proof_of_work_required", "no solution")
	g.Expect(e.Message).To(ContainSubstring("/api/v1/instances/" + tmpl + "/challenge?action=start"))
	for _, bad := range []struct{ why, solution string }{
		{"not a solution", "bm90IGEgc29sdXRpb24="},
		{"a wrong number", wrongSolution(t, challengeAt(t, api.URL, tok, tmpl, "start"))},
		{"another team's", solvedAt(t, api.URL, otherTok, tmpl, "start")},
		{"another template's", solvedAt(t, api.URL, tok, other, "start")},
		{"a renewal's", solvedAt(t, api.URL, tok, tmpl, "renew")},
	} {
		code, e := start(api.URL, bad.solution)
		refusedFor(g, code, e, http.StatusForbidden, "proof_of_work_invalid", bad.why)
	}
	g.Expect(challengesOf(t, team)).To(BeEmpty(), "no refused start made anything")

	right := solvedAt(t, api.URL, tok, tmpl, "start")
	code, e = start(api2.URL, right)
	g.Expect(code).To(Equal(http.StatusCreated), "issued by one replica, accepted by the other: %+v", e)
	code, e = start(api2.URL, right)
	refusedFor(g, code, e, http.StatusForbidden, "proof_of_work_invalid", "used already")
	code, e = start(api.URL, "")
	refusedFor(g, code, e, http.StatusPreconditionRequired, "proof_of_work_required", "a reload needs one too")
	code, _ = start(api.URL, solvedAt(t, api.URL, tok, tmpl, "start"))
	g.Expect(code).To(Equal(http.StatusOK), "a reload with its own returns the instance")
	g.Expect(challengesOf(t, team)).To(HaveLen(1))
}

// TestRenewNeedsItsOwnProofOfWork: the same for a renewal, whose body
// carries the solution; a solution used already is refused before the
// renewal interval is looked at.
func TestRenewNeedsItsOwnProofOfWork(t *testing.T) {
	g := NewWithT(t)
	tmpl := powTemplate(t)
	team := uniqueName("team")
	tok := mint(t, team)
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl,
		"proofOfWork": solvedAt(t, api.URL, tok, tmpl, "start")}, nil)).To(Equal(http.StatusCreated))

	renew := func(body any) (int, apiError) {
		var e apiError
		return call(t, tok, "POST", instancePath(tmpl)+"/renew", body, &e), e
	}
	code, e := renew(nil)
	refusedFor(g, code, e, http.StatusPreconditionRequired, "proof_of_work_required", "no body")
	code, e = renew(map[string]string{})
	refusedFor(g, code, e, http.StatusPreconditionRequired, "proof_of_work_required", "no solution")
	code, e = renew(map[string]string{"proofOfWork": "x", "template": tmpl})
	refusedFor(g, code, e, http.StatusBadRequest, "bad_request", "an unknown key")
	for _, bad := range []struct{ why, solution string }{
		{"a wrong number", wrongSolution(t, challengeAt(t, api.URL, tok, tmpl, "renew"))},
		{"another team's", solvedAt(t, api.URL, mint(t, uniqueName("other")), tmpl, "renew")},
		{"a start's", solvedAt(t, api.URL, tok, tmpl, "start")},
	} {
		code, e := renew(map[string]string{"proofOfWork": bad.solution})
		refusedFor(g, code, e, http.StatusForbidden, "proof_of_work_invalid", bad.why)
	}
	chs := challengesOf(t, team)
	g.Expect(chs).To(HaveLen(1))
	g.Expect(chs[0].Spec.RenewedAt).To(BeNil(), "no refused renewal renewed")

	right := solvedAt(t, api.URL, tok, tmpl, "renew")
	code, e = renew(map[string]string{"proofOfWork": right})
	g.Expect(code).To(Equal(http.StatusOK), "%+v", e)
	g.Expect(challengesOf(t, team)[0].Spec.RenewedAt).NotTo(BeNil())
	code, e = renew(map[string]string{"proofOfWork": right})
	refusedFor(g, code, e, http.StatusForbidden, "proof_of_work_invalid", "used already")
}

// TestATemplateWithoutProofOfWorkNeedsNone: starts and renewals as before
// (a solution sent anyway is ignored), and no challenge to ask for; the
// challenge route checks what it is asked.
func TestATemplateWithoutProofOfWorkNeedsNone(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	tok := mint(t, uniqueName("team"))
	var e apiError
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl, "proofOfWork": "ignored"}, &e)).
		To(Equal(http.StatusCreated), "%+v", e)
	g.Expect(call(t, tok, "POST", instancePath(tmpl)+"/renew", nil, &e)).To(Equal(http.StatusOK), "%+v", e)
	refusedFor(g, call(t, tok, "GET", instancePath(tmpl)+"/challenge?action=start", nil, &e), e,
		http.StatusNotFound, "proof_of_work_not_required", "no challenge")

	pow := powTemplate(t)
	e = apiError{}
	refusedFor(g, call(t, tok, "GET", instancePath(pow)+"/challenge", nil, &e), e, http.StatusBadRequest, "bad_request", "no action")
	e = apiError{}
	refusedFor(g, call(t, tok, "GET", instancePath(pow)+"/challenge?action=stop", nil, &e), e, http.StatusBadRequest, "bad_request", "another action")
	e = apiError{}
	refusedFor(g, call(t, tok, "GET", instancePath("nope")+"/challenge?action=start", nil, &e), e,
		http.StatusNotFound, "template_not_startable", "no such template")
	e = apiError{}
	refusedFor(g, call(t, "", "GET", instancePath(pow)+"/challenge?action=start", nil, &e), e, http.StatusUnauthorized, "unauthorized", "no token")
	c := challengeAt(t, api.URL, tok, pow, "renew")
	g.Expect(c.MaxNumber).To(BeEquivalentTo(1000), "the template's difficulty")
	g.Expect(c.ExpiresAt).To(BeTemporally("~", time.Now().Add(proofofwork.Lifetime), 5*time.Second))
}

// TestProofOfWorkRefusalsCostNoAPIRequests: challenges, and starts and
// renewals refused for their proof of work (none, wrong, expired, used
// already), are answered from the cache and memory alone.
func TestProofOfWorkRefusalsCostNoAPIRequests(t *testing.T) {
	g := NewWithT(t)
	tmpl := powTemplate(t)
	opts := instancer.Options{StartsPerMinute: startsPerMinute, Cooldown: time.Minute, RenewInterval: time.Minute}
	srv, requests := newCountedServer(opts)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	// A replica whose clock is 3 minutes ahead sees every challenge expired.
	later, laterRequests := newCountedServer(opts)
	later.Now = func() time.Time { return time.Now().Add(3 * time.Minute) }
	lts := httptest.NewServer(later.Handler())
	defer lts.Close()
	tok := mint(t, uniqueName("team"))
	g.Eventually(func() int {
		return callAt(t, ts.URL, tok, "GET", instancePath(tmpl)+"/challenge?action=start", nil, nil)
	}, timeout, interval).
		Should(Equal(http.StatusOK), "the in-process cache has the template")

	used := solvedAt(t, ts.URL, tok, tmpl, "renew")
	g.Expect(callAt(t, ts.URL, tok, "POST", instancePath(tmpl)+"/renew", map[string]string{"proofOfWork": used}, nil)).
		To(Equal(http.StatusNotFound), "taken, then no instance to renew")
	before := requests.Load() + laterRequests.Load()
	for range 50 {
		challengeAt(t, ts.URL, tok, tmpl, "start")
		for _, r := range []struct {
			base, path, solution string
			want                 int
		}{
			{ts.URL, "/api/v1/instances", "", http.StatusPreconditionRequired},
			{ts.URL, "/api/v1/instances", wrongSolution(t, challengeAt(t, ts.URL, tok, tmpl, "start")), http.StatusForbidden},
			{lts.URL, "/api/v1/instances", solvedAt(t, ts.URL, tok, tmpl, "start"), http.StatusForbidden},
			{ts.URL, instancePath(tmpl) + "/renew", "", http.StatusPreconditionRequired},
			{ts.URL, instancePath(tmpl) + "/renew", used, http.StatusForbidden},
		} {
			body := map[string]string{}
			if r.path == "/api/v1/instances" {
				body["template"] = tmpl
			}
			if r.solution != "" {
				body["proofOfWork"] = r.solution
			}
			g.Expect(callAt(t, r.base, tok, "POST", r.path, body, nil)).To(Equal(r.want), "%s %s", r.base, r.path)
		}
	}
	g.Expect(requests.Load()+laterRequests.Load()-before).To(BeZero(), "150 challenges and 250 refusals")
}

// TestDifficultyIsBounded: the API server refuses a difficulty a browser
// would take too long on, or that asks for nothing.
func TestDifficultyIsBounded(t *testing.T) {
	for _, difficulty := range []int32{0, 999, 500_001} {
		g := NewWithT(t)
		tmpl := builders.Template(uniqueName("pow"), func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Image = "registry.example/web:1"
			s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}}
			s.Instancer = &ctfv1alpha1.InstancerAccess{Startable: true, ProofOfWork: &ctfv1alpha1.ProofOfWork{Difficulty: difficulty}}
		})
		err := k8s.Create(context.Background(), tmpl)
		if err == nil {
			_ = k8s.Delete(context.Background(), tmpl)
		}
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "difficulty %d: %v", difficulty, err)
		g.Expect(err).To(MatchError(ContainSubstring("spec.instancer.proofOfWork.difficulty")))
	}
}
