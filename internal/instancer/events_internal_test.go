package instancer

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/token"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// countingInformer is a Challenge informer that counts its handlers and
// lets the test deliver changes to them.
type countingInformer struct {
	cache.Informer // only the methods below are called
	mu             sync.Mutex
	handlers       []toolscache.ResourceEventHandler
}

func (i *countingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
	return nil, nil
}

func (i *countingInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	return nil
}

func (i *countingInformer) added() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.handlers)
}

// add delivers obj to every handler as a new object.
func (i *countingInformer) add(obj client.Object) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, h := range i.handlers {
		h.OnAdd(obj, false)
	}
}

// oneInformer serves the countingInformer for Challenges.
type oneInformer struct {
	cache.Informers // only GetInformer is called
	informer        *countingInformer
}

func (o oneInformer) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return o.informer, nil
}

// TestEventStreamsShareOneInformerHandler: a team's open event streams add
// one handler to the process's Challenge informer between them (the old
// code added one per stream: 8), each gets the changes of its instance and
// of no other namespace's, and a closed stream leaves nothing behind.
func TestEventStreamsShareOneInformerHandler(t *testing.T) {
	g := NewWithT(t)
	const ns, team, tmpl = "ctf", "team-a", "web"
	scheme := runtime.NewScheme()
	g.Expect(ctfv1alpha1.AddToScheme(scheme)).To(Succeed())
	template := builders.BareTemplate(tmpl, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Instancer = &ctfv1alpha1.InstancerAccess{Startable: true}
	})
	keys := token.Keys{"k": []byte(strings.Repeat("k", 32))}
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "k"), keys["k"], 0o600)).To(Succeed())
	informer := &countingInformer{}
	srv := &Server{Options: Options{Namespace: ns, KeyDir: dir},
		Client:    fake.NewClientBuilder().WithScheme(scheme).WithObjects(template).Build(),
		Informers: oneInformer{informer: informer}}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tok, err := token.Mint(keys, "", team, time.Hour, time.Now())
	g.Expect(err).NotTo(HaveOccurred())

	type stream struct {
		cancel context.CancelFunc
		lines  *bufio.Scanner
	}
	next := func(s stream) string {
		for s.lines.Scan() {
			if data, ok := strings.CutPrefix(s.lines.Text(), "data: "); ok {
				CheckEvent(t, []byte(data))
				var inst Instance
				g.Expect(json.Unmarshal([]byte(data), &inst)).To(Succeed())
				return inst.Phase
			}
		}
		return "(stream ended)"
	}
	var streams []stream
	for range maxStreamsPerTeam {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/v1/instances/"+tmpl+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		CheckStream(t, req, res)
		g.Expect(res.StatusCode).To(Equal(http.StatusOK))
		s := stream{cancel: cancel, lines: bufio.NewScanner(res.Body)}
		g.Expect(next(s)).To(Equal(PhaseAbsent), "each stream starts with the state now")
		streams = append(streams, s)
	}
	g.Expect(informer.added()).To(Equal(1), "one informer handler for every stream")
	g.Expect(srv.hub.subscribers()).To(Equal(maxStreamsPerTeam))

	instance := func(namespace string, phase ctfv1alpha1.Phase) *ctfv1alpha1.Challenge {
		return builders.FromTemplate(namespace, InstanceName(NameKey(keys), tmpl, team), team, tmpl,
			builders.Labelled(ctfv1alpha1.ParticipantLabel, team), builders.Labelled(ctfv1alpha1.CreatedByLabel, createdBy),
			func(c *ctfv1alpha1.Challenge) { c.Status.Phase = phase })
	}
	informer.add(instance("elsewhere", ctfv1alpha1.PhaseError))
	informer.add(instance(ns, ctfv1alpha1.PhaseRunning))
	for _, s := range streams {
		g.Expect(next(s)).To(Equal("Running"), "the change of its instance, not the other namespace's")
	}

	for _, s := range streams {
		s.cancel()
	}
	g.Eventually(srv.hub.subscribers, 5*time.Second, 10*time.Millisecond).Should(BeZero(), "closed streams unsubscribe")
	g.Expect(informer.added()).To(Equal(1))
}
