package action

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/challenge-operator/challenge-operator/internal/metrics"
)

// Before an install creates anything, Helm GETs each object of the
// release, and refuses one that exists and is not the release's own: four
// of an install's fourteen API requests. The operator's cache holds every
// object of an instance of the kinds a release renders (it watches them,
// by the instance label), so an install's check of one of those kinds is
// answered from it: no instance object of that name, and Helm is answered
// 404 and creates it; any other answer goes to the API server.
//
// The cache does not hold another's object (it has no instance label), so
// that absence is presumed, not known. When the create then finds the
// object there (409 AlreadyExists), the object is not the release's: the
// failed install's rollback must not delete it, and its DELETE is answered
// 404 without being sent; a record the rollback leaves lists it, and is
// purged (trackedClient.purge). The next install of that object asks the
// API server, and Helm refuses it as it always did ("exists and cannot be
// imported into the current release").

// Existence answers installs' existence checks from the cache (see above).
type Existence struct {
	reader client.Reader
	// kinds are the kinds whose instance objects the cache holds, by
	// group and resource.
	kinds map[schema.GroupResource]func() client.Object
	// wrong holds the objects whose presumed absence a create proved
	// wrong ("namespace/group/resource/name"), until a GET finds them gone.
	wrong sync.Map
}

// NewExistence answers from reader for objects of kinds, which the cache
// must already watch (a Get of another kind would start an informer).
func NewExistence(reader client.Reader, mapper meta.RESTMapper, scheme *runtime.Scheme, kinds []client.Object) (*Existence, error) {
	e := &Existence{reader: reader, kinds: map[schema.GroupResource]func() client.Object{}}
	for _, obj := range kinds {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: %w", gvk, err)
		}
		kind := obj
		e.kinds[mapping.Resource.GroupResource()] = func() client.Object { return kind.DeepCopyObject().(client.Object) }
	}
	return e, nil
}

// RestConfig is a ClientRestConfigMapper for Helm's client: the install
// check carried by ctx (ActionClientFor) sees its requests.
func (e *Existence) RestConfig(ctx context.Context, _ client.Object, base *rest.Config) (*rest.Config, error) {
	cfg := rest.CopyConfig(base)
	check, _ := ctx.Value(installCheckKey{}).(*installCheck)
	if check == nil {
		return cfg, nil
	}
	prefix := ""
	if u, err := url.Parse(cfg.Host); err == nil {
		prefix = strings.TrimSuffix(u.Path, "/")
	}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &checkTransport{next: next, check: check, prefix: prefix}
	})
	return cfg, nil
}

type installCheckKey struct{}

// begin returns ctx carrying a new install check for one action client.
func (e *Existence) begin(ctx context.Context) (context.Context, *installCheck) {
	if e == nil {
		return ctx, nil
	}
	check := &installCheck{existence: e, ctx: ctx, presumed: map[string]bool{}, wrong: map[string]bool{}}
	return context.WithValue(ctx, installCheckKey{}, check), check
}

// installCheck is one action client's: it answers only while an install
// runs (Install), which is when Helm checks existence.
type installCheck struct {
	existence  *Existence
	ctx        context.Context
	installing atomic.Bool
	mu         sync.Mutex
	// presumed holds the objects answered absent, wrong those of them a
	// create found there.
	presumed, wrong map[string]bool
}

// during runs install with the check answering.
func (c *installCheck) during(install func()) {
	if c == nil {
		install()
		return
	}
	c.installing.Store(true)
	defer c.installing.Store(false)
	install()
}

// presume tells whether target is answered absent: a kind the cache
// holds, no instance object of that name in it, and no create found one
// there before.
func (c *installCheck) presume(target object) bool {
	newObj, ok := c.existence.kinds[target.GroupResource]
	if !ok {
		return false
	}
	if _, wrong := c.existence.wrong.Load(target.key()); wrong {
		return false
	}
	if err := c.existence.reader.Get(c.ctx, client.ObjectKey{Namespace: target.namespace, Name: target.name}, newObj()); !apierrors.IsNotFound(err) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.presumed[target.key()] = true
	return true
}

// created learns from a create's 409 which presumed absence was wrong:
// the object its Status names, or, when the Status cannot be read, every
// object of the collection presumed absent.
func (c *installCheck) created(collection object, status *metav1.Status, readable bool) {
	if readable && status.Reason != metav1.StatusReasonAlreadyExists {
		return
	}
	named := ""
	if readable && status.Details != nil {
		named = object{GroupResource: schema.GroupResource{Group: status.Details.Group, Resource: status.Details.Kind},
			namespace: collection.namespace, name: status.Details.Name}.key()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.presumed {
		if (named != "" && key != named) || (named == "" && !strings.HasPrefix(key, collection.key())) {
			continue
		}
		c.wrong[key] = true
		c.existence.wrong.Store(key, struct{}{})
	}
}

// provedWrong tells whether a create found an object presumed absent.
func (c *installCheck) provedWrong() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.wrong) > 0
}

// isWrong tells whether target was presumed absent and found there.
func (c *installCheck) isWrong(target object) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrong[target.key()]
}

// object is what a request's path names: a collection (no name) or one object.
type object struct {
	schema.GroupResource
	namespace, name string
}

func (o object) key() string {
	return o.namespace + "/" + o.Group + "/" + o.Resource + "/" + o.name
}

// parsePath reads /api/v1/[namespaces/NS/]RESOURCE[/NAME] and
// /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/NAME] below prefix; a
// subresource's path, or any other, is not ok.
func parsePath(prefix, path string) (o object, ok bool) {
	below, found := strings.CutPrefix(path, prefix+"/")
	if !found {
		return object{}, false
	}
	parts := strings.Split(below, "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		o.Group = parts[1]
		parts = parts[3:]
	default:
		return object{}, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		o.namespace, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		o.Resource = parts[0]
	case 2:
		o.Resource, o.name = parts[0], parts[1]
	default:
		return object{}, false
	}
	return o, o.Resource != ""
}

// checkTransport is Helm's client's transport while an install check is
// carried: it answers the check's GETs and guards its rollback's DELETEs.
type checkTransport struct {
	next   http.RoundTripper
	check  *installCheck
	prefix string
}

func (t *checkTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	target, ok := parsePath(t.prefix, req.URL.Path)
	if !ok {
		return t.next.RoundTrip(req)
	}
	installing := t.check.installing.Load()
	switch {
	case installing && req.Method == http.MethodGet && target.name != "" && t.check.presume(target),
		installing && req.Method == http.MethodDelete && target.name != "" && t.check.isWrong(target):
		metrics.ObserveHelmRequestAnswered(req.Method)
		return notFound(req, target), nil
	case installing && req.Method == http.MethodPost && target.name == "":
		resp, err := t.next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusConflict {
			status, readable := readStatus(resp)
			t.check.created(target, status, readable)
		}
		return resp, err
	case req.Method == http.MethodGet && target.name != "":
		resp, err := t.next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusNotFound {
			t.check.existence.wrong.Delete(target.key()) // gone: presumed again
		}
		return resp, err
	}
	return t.next.RoundTrip(req)
}

// statusCodecs decode a Status in JSON or protobuf.
var statusCodecs = serializer.NewCodecFactory(statusScheme())

func statusScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// readStatus reads the Status of a failed response, leaving its body to
// be read again.
func readStatus(resp *http.Response) (status *metav1.Status, readable bool) {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	status = &metav1.Status{}
	if _, _, err := statusCodecs.UniversalDeserializer().Decode(body, nil, status); err != nil {
		return nil, false
	}
	return status, true
}

// notFound is the API server's answer for an object that does not exist.
func notFound(req *http.Request, target object) *http.Response {
	status := apierrors.NewNotFound(target.GroupResource, target.name).ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	body, _ := json.Marshal(status)
	return &http.Response{
		Status:        "404 Not Found",
		StatusCode:    http.StatusNotFound,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
