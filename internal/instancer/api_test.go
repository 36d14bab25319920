package instancer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// startableTemplate creates a template teams may start, with a lifetime of
// 30 minutes, and waits until the instancer lists it.
func startableTemplate(t *testing.T, mutate func(*ctfv1alpha1.ChallengeTemplateSpec)) string {
	t.Helper()
	return startableTemplateNamed(t, uniqueName("web"), mutate)
}

// startableTemplateNamed creates a startable template named name and waits
// for both replicas of the instancer to list it: each reads templates from
// its own cache, and a test may start on either.
func startableTemplateNamed(t *testing.T, name string, mutate func(*ctfv1alpha1.ChallengeTemplateSpec)) string {
	t.Helper()
	h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Instancer = &ctfv1alpha1.InstancerAccess{Startable: true, Title: "Web " + name}
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: 30 * time.Minute}}
		if mutate != nil {
			mutate(s)
		}
	})
	tok := mint(t, "lister")
	for _, r := range []*replica{api, api2} {
		NewWithT(t).Eventually(func(g Gomega) {
			var templates struct{ Templates []instancer.Template }
			g.Expect(callAt(t, r.URL, tok, "GET", "/api/v1/templates", nil, &templates)).To(Equal(http.StatusOK))
			g.Expect(templates.Templates).To(ContainElement(HaveField("Name", name)))
		}, timeout, interval).Should(Succeed(), "replica %s lists %s", r.name, name)
	}
	return name
}

func challengesOf(t *testing.T, team string) []ctfv1alpha1.Challenge {
	t.Helper()
	list := &ctfv1alpha1.ChallengeList{}
	NewWithT(t).Expect(k8s.List(context.Background(), list, client.InNamespace(instancesNamespace),
		client.MatchingLabels{ctfv1alpha1.ParticipantLabel: team})).To(Succeed())
	return list.Items
}

func TestStartTwiceGivesOneChallenge(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	team := uniqueName("team")
	tok := mint(t, team)

	var templates struct{ Templates []instancer.Template }
	g.Expect(call(t, tok, "GET", "/api/v1/templates", nil, &templates)).To(Equal(http.StatusOK))
	g.Expect(templates.Templates).To(ContainElement(HaveField("Name", tmpl)), "a startable template is listed")

	// A double click: two starts at once, then a reload's.
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)
		}()
	}
	wg.Wait()
	var got instancer.Instance
	codes[2] = call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, &got)
	g.Expect(codes).To(ConsistOf(http.StatusCreated, http.StatusOK, http.StatusOK))
	g.Expect(got.Name).To(Equal(nameOf(tmpl, team)))
	g.Expect(challengesOf(t, team)).To(HaveLen(1), "three starts, one Challenge")

	g.Eventually(func(g Gomega) {
		var inst instancer.Instance
		g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &inst)).To(Equal(http.StatusOK))
		g.Expect(inst.Phase).To(Equal("Running"), "%s: %s", inst.Reason, inst.Message)
		g.Expect(inst.Connect).To(HavePrefix("nc "), "a ready-to-copy connect string")
		g.Expect(inst.ExpiresAt).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	var list struct{ Instances []instancer.Instance }
	g.Expect(call(t, tok, "GET", "/api/v1/instances", nil, &list)).To(Equal(http.StatusOK))
	g.Expect(list.Instances).To(ConsistOf(HaveField("Template", tmpl)))
}

// TestInstanceNamesNeverCollideAcrossTeams: "<template>-<team>" gave team
// "b-c"'s instance of template "a" and team "c"'s of template "a-b" one
// name, and the second team's start was refused with a 409 that told it the
// other team had started.
func TestInstanceNamesNeverCollideAcrossTeams(t *testing.T) {
	g := NewWithT(t)
	a := uniqueName("a")
	c := uniqueName("c")
	first, second := startableTemplateNamed(t, a, nil), startableTemplateNamed(t, a+"-b", nil)
	starts := []struct{ template, team string }{{first, "b-" + c}, {second, c}}
	names := map[string]bool{}
	for _, s := range starts {
		var got instancer.Instance
		g.Expect(call(t, mint(t, s.team), "POST", "/api/v1/instances", map[string]string{"template": s.template}, &got)).
			To(Equal(http.StatusCreated), "team %s starts %s", s.team, s.template)
		g.Expect(got.Name).To(Equal(nameOf(s.template, s.team)))
		names[got.Name] = true
		g.Expect(challengesOf(t, s.team)).To(ConsistOf(HaveField("Spec.Template", s.template)))
	}
	g.Expect(names).To(HaveLen(2), "two instances, two names")
}

func TestATeamReachesOnlyItsOwnInstances(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	teamA, teamB := uniqueName("a"), uniqueName("b")
	a, b := mint(t, teamA), mint(t, teamB)
	g.Expect(call(t, a, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))

	var e apiError
	g.Expect(call(t, b, "GET", instancePath(tmpl), nil, &e)).To(Equal(http.StatusNotFound))
	g.Expect(e.Code).To(Equal("not_found"))
	g.Expect(call(t, b, "POST", instancePath(tmpl)+"/renew", nil, &e)).To(Equal(http.StatusNotFound))
	g.Expect(call(t, b, "DELETE", instancePath(tmpl), nil, &e)).To(Equal(http.StatusNotFound))
	var list struct{ Instances []instancer.Instance }
	g.Expect(call(t, b, "GET", "/api/v1/instances", nil, &list)).To(Equal(http.StatusOK))
	g.Expect(list.Instances).To(BeEmpty(), "team B sees none of team A's")

	// A's instance is untouched: not renewed, not deleted.
	chs := challengesOf(t, teamA)
	g.Expect(chs).To(HaveLen(1))
	g.Expect(chs[0].DeletionTimestamp).To(BeNil())
	g.Expect(chs[0].Spec.RenewedAt).To(BeNil())
	g.Expect(challengesOf(t, teamB)).To(BeEmpty())
}

func TestRenewIsHonouredThenRefusedAtTheLimit(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime.MaxRenewals = ptr.To[int32](1)
	})
	team := uniqueName("team")
	tok := mint(t, team)
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	var before instancer.Instance
	g.Eventually(func(g Gomega) {
		g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &before)).To(Equal(http.StatusOK))
		g.Expect(before.ExpiresAt).NotTo(BeNil())
		g.Expect(before.RenewalsLeft).To(HaveValue(BeEquivalentTo(1)))
	}, timeout, interval).Should(Succeed())

	g.Expect(call(t, tok, "POST", instancePath(tmpl)+"/renew", nil, nil)).To(Equal(http.StatusOK))
	g.Eventually(func(g Gomega) {
		var after instancer.Instance
		g.Expect(call(t, tok, "GET", instancePath(tmpl), nil, &after)).To(Equal(http.StatusOK))
		g.Expect(after.RenewalsLeft).To(HaveValue(BeEquivalentTo(0)), "the operator counted the renewal")
		g.Expect(*after.ExpiresAt).To(BeTemporally(">=", *before.ExpiresAt), "and set the expiry from the renewal")
	}, timeout, interval).Should(Succeed())

	var e apiError
	g.Expect(call(t, tok, "POST", instancePath(tmpl)+"/renew", nil, &e)).To(Equal(http.StatusConflict))
	g.Expect(e.Code).To(Equal("renewal_limit"))
	g.Expect(e.Message).To(ContainSubstring("limit of 1 renewals"))
}

func TestCooldownAfterStopAndStartsPerMinute(t *testing.T) {
	g := NewWithT(t)
	team := uniqueName("team")
	tok := mint(t, team)
	var tmpls []string
	for range startsPerMinute + 1 {
		tmpls = append(tmpls, startableTemplate(t, nil))
	}
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpls[0]}, nil)).To(Equal(http.StatusCreated))
	g.Expect(call(t, tok, "DELETE", instancePath(tmpls[0]), nil, nil)).To(Equal(http.StatusAccepted))
	h.EventuallyGone(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(tmpls[0], team)}}, timeout, "the stopped instance goes")

	// Until the instancer's cache sees it gone, a start says "stopping" (and
	// starts nothing); then the cooldown refuses it.
	var e apiError
	g.Eventually(func(g Gomega) {
		e = apiError{}
		code := call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpls[0]}, &e)
		g.Expect(e.Code).NotTo(Equal("stopping"))
		g.Expect(code).To(Equal(http.StatusTooManyRequests))
	}, timeout, interval).Should(Succeed())
	g.Expect(e.Code).To(Equal("cooldown"))

	// The first start took one of the bucket's three.
	for _, tmpl := range tmpls[1:startsPerMinute] {
		g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	}
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpls[startsPerMinute]}, &e)).To(Equal(http.StatusTooManyRequests))
	g.Expect(e.Code).To(Equal("rate_limited"))
	g.Expect(e.Message).To(ContainSubstring("Try again in"))
	// A reload of a running one costs nothing and still answers.
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpls[1]}, nil)).To(Equal(http.StatusOK))
}

// notYetSeen is a cache that has not seen any Challenge yet, as the
// instancer's cache is for a moment after a create.
type notYetSeen struct{ client.Reader }

func (c notYetSeen) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*ctfv1alpha1.ChallengeList); ok {
		return nil
	}
	return c.Reader.List(ctx, list, opts...)
}

func (c notYetSeen) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*ctfv1alpha1.Challenge); ok {
		return apierrors.NewNotFound(ctfv1alpha1.GroupVersion.WithResource("challenges").GroupResource(), key.Name)
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestActsOnAnInstanceTheCacheHasNotSeen: a double click, a Renew and a
// Stop right after a Start find the instance the Start created, although
// the cache lags (CI once answered a Stop 404 for it).
func TestActsOnAnInstanceTheCacheHasNotSeen(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime.MaxRenewals = ptr.To[int32](1)
	})
	lagging := httptest.NewServer(newServer(func(c client.Reader) client.Reader { return notYetSeen{Reader: c} }).Handler())
	defer lagging.Close()
	team := uniqueName("team")
	tok := mint(t, team)
	start := map[string]string{"template": tmpl}

	g.Expect(callAt(t, lagging.URL, tok, "POST", "/api/v1/instances", start, nil)).To(Equal(http.StatusCreated))
	var e apiError
	g.Expect(callAt(t, lagging.URL, tok, "POST", "/api/v1/instances", start, &e)).To(Equal(http.StatusOK), "a double click returns the instance: %+v", e)
	g.Expect(callAt(t, lagging.URL, tok, "POST", instancePath(tmpl)+"/renew", nil, &e)).To(Equal(http.StatusOK), "%+v", e)
	g.Expect(callAt(t, lagging.URL, tok, "DELETE", instancePath(tmpl), nil, &e)).To(Equal(http.StatusAccepted), "%+v", e)
	h.EventuallyGone(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}}, timeout, "the stopped instance goes")
	g.Expect(challengesOf(t, team)).To(BeEmpty())
}

func TestTemplatesNotOptedInCannotBeStarted(t *testing.T) {
	g := NewWithT(t)
	closed := uniqueName("closed")
	h.Template(t, closed, nil)
	tok := mint(t, uniqueName("team"))
	var e apiError
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": closed}, &e)).To(Equal(http.StatusNotFound))
	g.Expect(e.Code).To(Equal("template_not_startable"))
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": "nope", "image": "evil"}, &e)).To(Equal(http.StatusBadRequest), "unknown fields are refused")
	var templates struct{ Templates []instancer.Template }
	g.Expect(call(t, tok, "GET", "/api/v1/templates", nil, &templates)).To(Equal(http.StatusOK))
	g.Expect(templates.Templates).NotTo(ContainElement(HaveField("Name", closed)))
}

func TestEveryBadTokenIsRefused(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	claims := func(mutate func(*jwt.RegisteredClaims)) jwt.RegisteredClaims {
		c := jwt.RegisteredClaims{Subject: "team-x", Audience: jwt.ClaimStrings{audience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}
		mutate(&c)
		return c
	}
	sign := func(m jwt.SigningMethod, key any, kid string, c jwt.RegisteredClaims) string {
		tok := jwt.NewWithClaims(m, c)
		tok.Header["kid"] = kid
		raw, err := tok.SignedString(key)
		g.Expect(err).NotTo(HaveOccurred())
		return raw
	}
	key := keys["2026"]
	g.Expect(call(t, sign(jwt.SigningMethodHS256, keys["2026"], "2026", claims(func(*jwt.RegisteredClaims) {})), "GET", "/api/v1/instances", nil, nil)).
		To(Equal(http.StatusOK), "the claims the cases change are valid")
	bad := map[string]string{
		"none":          "",
		"garbage":       "garbage",
		"alg none":      sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "2026", claims(func(*jwt.RegisteredClaims) {})),
		"HS512":         sign(jwt.SigningMethodHS512, key, "2026", claims(func(*jwt.RegisteredClaims) {})),
		"unknown key":   sign(jwt.SigningMethodHS256, key, "2025", claims(func(*jwt.RegisteredClaims) {})),
		"wrong key":     sign(jwt.SigningMethodHS256, []byte(strings.Repeat("x", 40)), "2026", claims(func(*jwt.RegisteredClaims) {})),
		"expired":       sign(jwt.SigningMethodHS256, key, "2026", claims(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Minute)) })),
		"not yet valid": sign(jwt.SigningMethodHS256, key, "2026", claims(func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Hour)) })),
		"valid for ten years": sign(jwt.SigningMethodHS256, key, "2026", claims(func(c *jwt.RegisteredClaims) {
			c.ExpiresAt = jwt.NewNumericDate(now.Add(10 * 365 * 24 * time.Hour))
		})),
		"no issue time":        sign(jwt.SigningMethodHS256, key, "2026", claims(func(c *jwt.RegisteredClaims) { c.IssuedAt = nil })),
		"the default audience": sign(jwt.SigningMethodHS256, key, "2026", claims(func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{token.Audience} })),
		"another instancer's":  sign(jwt.SigningMethodHS256, key, "2026", claims(func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"ctf-2025"} })),
	}
	for name, tok := range bad {
		var e apiError
		g.Expect(call(t, tok, "GET", "/api/v1/instances", nil, &e)).To(Equal(http.StatusUnauthorized), name)
		g.Expect(e.Code).To(Equal("unauthorized"), name)
	}
	// A token in a cookie is not a token.
	req, _ := http.NewRequest("GET", api.URL+"/api/v1/instances", nil)
	req.AddCookie(&http.Cookie{Name: "token", Value: mint(t, "team-x")})
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := io.ReadAll(res.Body)
	g.Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	instancer.CheckAnswer(t, req, nil, res, data)
	g.Expect(res.StatusCode).To(Equal(http.StatusUnauthorized))
}

func TestEventStreamDeliversEveryPhaseInOrder(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	team := uniqueName("team")
	tok := mint(t, team)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", api.URL+instancePath(tmpl)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = res.Body.Close() }()
	instancer.CheckStream(t, req, res)
	g.Expect(res.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	phases := make(chan string, 64)
	go func() {
		defer close(phases)
		scanner := bufio.NewScanner(res.Body)
		for scanner.Scan() {
			data, ok := strings.CutPrefix(scanner.Text(), "data: ")
			if !ok {
				continue
			}
			instancer.CheckEvent(t, []byte(data))
			var inst instancer.Instance
			if json.Unmarshal([]byte(data), &inst) == nil {
				phases <- inst.Phase
			}
		}
	}()
	next := func() string {
		select {
		case p := <-phases:
			return p
		case <-time.After(timeout):
			return "(no event within the timeout)"
		}
	}
	g.Expect(next()).To(Equal(instancer.PhaseAbsent), "the stream starts with the state now")
	g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
	var seen []string
	for len(seen) == 0 || seen[len(seen)-1] != "Running" {
		p := next()
		if len(seen) > 0 && seen[len(seen)-1] == p {
			continue // a change of reason or expiry, same phase
		}
		seen = append(seen, p)
		if len(seen) > 5 {
			break
		}
	}
	g.Expect(seen).To(Equal([]string{"None", "Pending", "Running"}))

	var stopped instancer.Instance
	g.Expect(call(t, tok, "DELETE", instancePath(tmpl), nil, &stopped)).To(Equal(http.StatusAccepted))
	g.Expect(stopped.Phase).To(Equal("Deleted"), "a Stop answers with the instance on its way out")
	g.Expect(stopped.Message).To(Equal("Your instance is being removed."), "not the Running instance's words")
	g.Expect(stopped.Connect).To(BeEmpty())
	seen = nil
	for len(seen) == 0 || seen[len(seen)-1] != instancer.PhaseAbsent {
		p := next()
		if len(seen) > 0 && seen[len(seen)-1] == p {
			continue
		}
		seen = append(seen, p)
		if len(seen) > 5 {
			break
		}
	}
	g.Expect(seen).To(Equal([]string{"Deleted", instancer.PhaseAbsent}))
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	g := NewWithT(t)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	g.Expect(call(t, "", "GET", "/api/v1/openapi.json", nil, &doc)).To(Equal(http.StatusOK))
	for _, route := range []string{
		"GET /api/v1/templates", "GET /api/v1/instances", "POST /api/v1/instances",
		"GET /api/v1/instances/{template}", "DELETE /api/v1/instances/{template}",
		"POST /api/v1/instances/{template}/renew", "GET /api/v1/instances/{template}/events", "GET /api/v1/openapi.json",
		"GET /api/v1/instances/{template}/challenge",
		"POST /api/v1/platform/verify", "POST /api/v1/platform/solved",
	} {
		method, path, _ := strings.Cut(route, " ")
		g.Expect(doc.Paths).To(HaveKey(path), route)
		g.Expect(doc.Paths[path]).To(HaveKey(strings.ToLower(method)), route)
	}
}

func TestNoCORSUnlessAllowedAndNoFraming(t *testing.T) {
	g := NewWithT(t)
	req, _ := http.NewRequest("GET", api.URL+"/", nil)
	req.Header.Set("Origin", "https://evil.example")
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	g.Expect(res.Header.Get("Access-Control-Allow-Origin")).To(BeEmpty())
	g.Expect(res.Header.Get("Content-Security-Policy")).To(ContainSubstring("default-src 'self'"))
	g.Expect(res.Header.Get("X-Frame-Options")).To(Equal("DENY"))
}

func TestATeamHoldsAFewEventStreamsAtMost(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	tok := mint(t, uniqueName("team"))
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", api.URL+instancePath(tmpl)+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		instancer.CheckStream(t, req, res)
		return res, cancel
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for range 8 {
		res, cancel := open()
		cancels = append(cancels, cancel)
		g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	}
	res, cancel := open()
	cancel()
	g.Expect(res.StatusCode).To(Equal(http.StatusTooManyRequests), "a ninth stream")
	cancels[0]()
	g.Eventually(func() int {
		res, cancel := open()
		cancels = append(cancels, cancel)
		return res.StatusCode
	}, timeout, interval).Should(Equal(http.StatusOK), "a closed stream frees its place")
}

// openStream opens tmpl's event stream with tok and returns a channel closed
// when the instancer ends it.
func openStream(t *testing.T, tok, tmpl string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", api.URL+instancePath(tmpl)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	instancer.CheckStream(t, req, res)
	NewWithT(t).Expect(res.StatusCode).To(Equal(http.StatusOK))
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer func() { _ = res.Body.Close() }()
		_, _ = io.Copy(io.Discard, res.Body)
	}()
	return ended
}

// TestEventStreamEndsWithItsTokenAndTemplate: a stream once outlived its
// token's expiry and its template becoming unstartable; it ends with either.
func TestEventStreamEndsWithItsTokenAndTemplate(t *testing.T) {
	t.Run("the token expires", func(t *testing.T) {
		tmpl := startableTemplate(t, nil)
		short, err := token.MintFor(keys, "", uniqueName("team"), audience, 3*time.Second, time.Now())
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Eventually(openStream(t, short, tmpl), timeout).Should(BeClosed())
	})
	t.Run("the template is no longer startable", func(t *testing.T) {
		g := NewWithT(t)
		tmpl := startableTemplate(t, nil)
		ended := openStream(t, mint(t, uniqueName("team")), tmpl)
		g.Consistently(ended, 3*time.Second).ShouldNot(BeClosed(), "an open stream stays open while nothing changes")
		got := &ctfv1alpha1.ChallengeTemplate{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: tmpl}, got)).To(Succeed())
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Instancer.Startable = false
		g.Expect(k8s.Patch(context.Background(), got, patch)).To(Succeed())
		g.Eventually(ended, timeout).Should(BeClosed())
	})
}
