package instancer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	. "github.com/onsi/gomega"
)

// The contract: every answer a test reads from the instancer is checked
// against openapi.json, the very document the instancer embeds and serves,
// by kin-openapi's validators (not by hand): its route and method are
// described, its status is declared for them, and its body matches the
// schema declared for that status and content type.

var contract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// loadContract loads and validates openapi.json once, and routes by it.
func loadContract() (*openapi3.T, routers.Router, error) {
	contract.once.Do(func() {
		// An event stream's body is text; its events are checked one by one
		// (CheckEvent), not by the stream's schema.
		openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
		data, err := assets.ReadFile("openapi.json")
		if err != nil {
			contract.err = err
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(data)
		if err != nil {
			contract.err = err
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			contract.err = err
			return
		}
		contract.doc = doc
		contract.router, contract.err = gorillamux.NewRouter(doc)
	})
	return contract.doc, contract.router, contract.err
}

// contractOptions: the tokens are the instancer's to judge, not the
// document's (a test sends bad ones on purpose); an undeclared status is an
// error.
func contractOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
}

// answerDrift is what is wrong with the answer status, header, body to
// req (its body reqBody) by openapi.json, or nil. A request the document
// refuses (a test sends bad ones on purpose) must be answered with a
// declared 4xx.
func answerDrift(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	_, router, err := loadContract()
	if err != nil {
		return err
	}
	// A copy to validate: the request sent has had its body read.
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		return &contractError{what: "no route of openapi.json", err: err}
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: contractOptions()}
	if reqErr := openapi3filter.ValidateRequest(context.Background(), in); reqErr != nil && (status < 400 || status >= 500) {
		return &contractError{what: "a request openapi.json refuses was not refused", err: reqErr}
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                contractOptions(),
	})
}

type contractError struct {
	what string
	err  error
}

func (e *contractError) Error() string { return e.what + ": " + e.err.Error() }

// CheckAnswer fails t when res, read into body, is not an answer
// openapi.json declares to req, sent with reqBody.
func CheckAnswer(t testing.TB, req *http.Request, reqBody []byte, res *http.Response, body []byte) {
	t.Helper()
	if err := answerDrift(req, reqBody, res.StatusCode, res.Header, body); err != nil {
		t.Errorf("%s %s answered %d, not as openapi.json declares: %v\nbody: %s", req.Method, req.URL.RequestURI(), res.StatusCode, err, body)
	}
}

// CheckStream is CheckAnswer for the opening of an event stream, sent
// without a body: a stream's status and content type are checked, not its
// events (CheckEvent does); any other answer is read whole and checked, and
// left readable in res.Body.
func CheckStream(t testing.TB, req *http.Request, res *http.Response) {
	t.Helper()
	var body []byte
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var err error
		if body, err = io.ReadAll(res.Body); err != nil {
			t.Errorf("%s %s: reading the answer: %v", req.Method, req.URL.RequestURI(), err)
		}
		_ = res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(body))
	}
	CheckAnswer(t, req, nil, res, body)
}

// CheckEvent fails t when the data of an event stream's instance event is
// not an Instance by openapi.json.
func CheckEvent(t testing.TB, data []byte) {
	t.Helper()
	if err := eventDrift(data); err != nil {
		t.Errorf("an instance event, not an Instance as openapi.json declares: %v\ndata: %s", err, data)
	}
}

func eventDrift(data []byte) error {
	doc, _, err := loadContract()
	if err != nil {
		return err
	}
	var value any
	if err := json.Unmarshal(data, &value); err != nil {
		return err
	}
	return doc.Components.Schemas["Instance"].Value.VisitJSON(value, openapi3.VisitAsResponse(), openapi3.MultiErrors())
}

// TestTheContractCheckCatchesDrift: the check above can fail. Answers the
// document does not declare (a status, a body, a content type, a route, a
// bad request accepted) are each caught, and the ones it does are not.
func TestTheContractCheckCatchesDrift(t *testing.T) {
	g := NewWithT(t)
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	req := func(method, target, body string) (*http.Request, []byte) {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		return r, []byte(body)
	}
	drift := func(method, target, reqBody string, status int, header http.Header, body string) error {
		r, b := req(method, target, reqBody)
		return answerDrift(r, b, status, header, []byte(body))
	}
	instance := `{"template":"web","name":"web-x","phase":"Running","connect":"nc host 1"}`

	// Declared answers pass.
	g.Expect(drift("GET", "/api/v1/instances/web", "", 200, jsonHeader, instance)).To(Succeed())
	g.Expect(drift("GET", "/api/v1/instances/web", "", 404, jsonHeader, `{"code":"not_found","message":"none"}`)).To(Succeed())
	g.Expect(drift("POST", "/api/v1/instances", `{"template":"web"}`, 201, jsonHeader, instance)).To(Succeed())
	g.Expect(drift("GET", "/api/v1/instances/web/events", "", 200, http.Header{"Content-Type": {"text/event-stream"}}, "")).To(Succeed())
	g.Expect(eventDrift([]byte(instance))).To(Succeed())

	// Drift is caught.
	for name, err := range map[string]error{
		"a status not declared for the route": drift("GET", "/api/v1/instances/web", "", 418, jsonHeader, `{"code":"internal","message":"x"}`),
		"a body missing a required field":     drift("GET", "/api/v1/instances/web", "", 200, jsonHeader, `{"template":"web","name":"web-x"}`),
		"a phase not in the enum":             drift("GET", "/api/v1/instances/web", "", 200, jsonHeader, `{"template":"web","name":"web-x","phase":"Sleeping"}`),
		"an error code not in the enum":       drift("GET", "/api/v1/instances/web", "", 404, jsonHeader, `{"code":"gone","message":"x"}`),
		"a content type not declared":         drift("GET", "/api/v1/instances/web", "", 200, http.Header{"Content-Type": {"text/plain"}}, instance),
		"a body that is not JSON":             drift("GET", "/api/v1/instances/web", "", 200, jsonHeader, "Running"),
		"a route not described":               drift("GET", "/api/v1/nothing", "", 404, jsonHeader, `{"code":"not_found","message":"x"}`),
		"a bad request accepted":              drift("POST", "/api/v1/instances", `{"templat":"web"}`, 201, jsonHeader, instance),
		"an event that is no Instance":        eventDrift([]byte(`{"phase":"Running"}`)),
	} {
		g.Expect(err).To(HaveOccurred(), name)
	}
	// A bad request refused with a declared error is as declared.
	g.Expect(drift("POST", "/api/v1/instances", `{"templat":"web"}`, 400, jsonHeader, `{"code":"bad_request","message":"x"}`)).To(Succeed())
}
