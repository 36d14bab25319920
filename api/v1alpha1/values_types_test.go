package v1alpha1

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The CRD's patterns are the promise that whatever the API server stores,
// the typed client decodes: one object that does not decode would stop the
// operator's informers for every Challenge. These fuzz targets hold the
// patterns (read from the generated CRD) to that promise.

func crdPattern(t testing.TB, path ...string) *regexp.Regexp {
	t.Helper()
	data, err := os.ReadFile("../../config/crd/bases/ctf.challenge-operator.io_challenges.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	node := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"]
	for _, p := range path {
		node = node.(map[string]any)["properties"].(map[string]any)[p]
	}
	return regexp.MustCompile(node.(map[string]any)["pattern"].(string))
}

func FuzzQuantityPatternParses(f *testing.F) {
	re := crdPattern(f, "spec", "values", "tmpSizeLimit")
	for _, s := range []string{"500m", "128Mi", "1e99", "999999999999999.999999999E", "0.000000001", "1e999999999999", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 32 || !re.MatchString(s) {
			return
		}
		done := make(chan error, 1)
		go func() { _, err := Quantity(s).Parse(); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%q is admitted but does not parse: %v", s, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q is admitted but takes too long to parse", s)
		}
	})
}

func FuzzRenewedAtPatternDecodes(f *testing.F) {
	re := crdPattern(f, "spec", "renewedAt")
	for _, s := range []string{"2026-11-23T10:00:00Z", "2026-11-23T10:00:00.123456789+14:00", "2026-11-23t10:00:00z", "0000-01-01T00:00:00-23:59"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !re.MatchString(s) {
			return
		}
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return // the API server's date-time format check refuses what Go cannot read (e.g. February 31)
		}
		var v metav1.Time
		if err := json.Unmarshal([]byte(`"`+s+`"`), &v); err != nil {
			t.Fatalf("%q is admitted but does not decode: %v", s, err)
		}
	})
}

func FuzzLifetimePatternDecodes(f *testing.F) {
	re := crdPattern(f, "spec", "lifetime")
	for _, s := range []string{"30m", "720h", "1h30m", "999999999h", "0.5s", "3000000h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !re.MatchString(s) {
			return
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > 720*time.Hour {
			return // refused by the CEL bounds, which parse the same way
		}
		var v metav1.Duration
		if err := json.Unmarshal([]byte(`"`+s+`"`), &v); err != nil {
			t.Fatalf("%q is admitted but does not decode: %v", s, err)
		}
	})
}
