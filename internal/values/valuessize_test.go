package values

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// maxRecordBytes is what Helm's release record may hold: the API server
// refuses a Secret whose data is over 1 MiB ("Too long").
const maxRecordBytes = 1 << 20

// incompressible are texts a file or a secret file may hold that gzip
// cannot shrink much, the worst case for the release record: random
// printable ASCII, and random UTF-8 of one to four bytes a character.
var incompressible = map[string]func(r *rand.Rand, n int) string{
	"ascii": func(r *rand.Rand, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(0x20 + r.IntN(95))
		}
		return string(b)
	},
	"utf-8": func(r *rand.Rand, n int) string {
		var sb strings.Builder
		for sb.Len() < n-3 {
			switch r.IntN(4) {
			case 0:
				sb.WriteRune(rune(0x20 + r.IntN(95)))
			case 1:
				sb.WriteRune(rune(0xa1 + r.IntN(0x7ff-0xa1)))
			case 2:
				sb.WriteRune(rune(0x4e00 + r.IntN(0x9fff-0x4e00)))
			default:
				sb.WriteRune(rune(0x20000 + r.IntN(0x2a6df-0x20000)))
			}
		}
		return sb.String() + strings.Repeat("a", n-sb.Len())
	},
}

// fill gives vals, an instance's values without files, files and secret
// files of incompressible text, half each, in entries of at most 64 KiB,
// so that its text is exactly total bytes.
func fill(t *testing.T, vals map[string]any, total int, gen func(*rand.Rand, int) string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	vals["flag"].(map[string]any)["secretName"] = "web-intro-team-1-flag"
	vals["flag"].(map[string]any)["value"] = "CTF{x}"
	vals["secretData"], vals["files"] = []any{}, []any{}
	left := total - textBytes(t, vals)
	var data, files []any
	for i := 0; left > 0; i++ {
		key, path := fmt.Sprintf("file.%d", i), fmt.Sprintf("/etc/f%d", i)
		if i%2 == 0 {
			// The entry's own key counts too.
			n := min(left-len(key), 64<<10)
			data = append(data, map[string]any{"key": key, "value": gen(r, n)})
			left -= n + len(key)
			continue
		}
		key = fmt.Sprintf("f%d", i)
		n := min(left-len(key)-len(path), 64<<10)
		files = append(files, map[string]any{"key": key, "path": path, "content": gen(r, n), "mode": 292})
		left -= n + len(key) + len(path)
	}
	vals["secretData"], vals["files"] = data, files
	if got := textBytes(t, vals); got != total {
		t.Fatalf("filled to %d bytes of text, not %d", got, total)
	}
}

// textBytes is the text of vals as checkValuesSize counts it.
func textBytes(t *testing.T, vals map[string]any) int {
	t.Helper()
	raw, err := json.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range stringFields("", tree, nil) {
		n += f.bytes
	}
	return n
}

// record is the release record Helm would store for vals: the chart
// rendered with them, the release's JSON gzipped (at gzip's default level,
// which the operator's encoder uses and which shrinks no more than Helm's
// best) and in base64.
func record(t *testing.T, vals map[string]any) int {
	t.Helper()
	ch, err := loader.Load("../../charts/challenge")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	var plain map[string]any
	if err := json.Unmarshal(raw, &plain); err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.ReleaseName, install.Namespace = true, true, "web-intro-team-1", "ctf"
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	rls, err := install.Run(ch, plain)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(rls)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodedLen(gz.Len())
}

// TestValuesAtTheBoundFitTheReleaseRecord: an instance whose values carry
// as much text as checkValuesSize lets through, as files and secret files
// of incompressible text, has a release record well within the 1 MiB the
// API server stores (a quarter of it left for the chart to grow); one byte
// more is refused before anything is installed, naming the total and the
// largest fields, never a value. At 512 KiB, the former bound, the record
// was 1.26 MB, and the install failed with "Too long".
func TestValuesAtTheBoundFitTheReleaseRecord(t *testing.T) {
	for name, gen := range incompressible {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl, c := template(nil), instance(nil)
			vals, _, err := Rules{}.Check(c, tmpl)
			g.Expect(err).NotTo(HaveOccurred())

			// The largest text the check lets through.
			fill(t, vals, MaxValuesBytes, gen)
			g.Expect(checkValuesSize(vals)).To(Succeed())
			size := record(t, vals)
			t.Logf("%d bytes of %s text: a release record of %d bytes, %.1f%% of 1 MiB", MaxValuesBytes, name, size, float64(size)*100/maxRecordBytes)
			g.Expect(size).To(BeNumerically("<=", maxRecordBytes*3/4))

			fill(t, vals, MaxValuesBytes+1, gen)
			err = checkValuesSize(vals)
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonValuesTooLarge)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("carry %d bytes", MaxValuesBytes+1)))
			g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("above the %d", MaxValuesBytes)))
			g.Expect(err.Error()).To(MatchRegexp(`the largest are (secretData\[file\.\d+\]\.value|files\[/etc/f\d+\]\.content) \(65536 bytes\)`))
			for _, e := range vals["secretData"].([]any) {
				g.Expect(err.Error()).NotTo(ContainSubstring(e.(map[string]any)["value"].(string)[:16]), "no value in the error")
			}
		})
	}
}

// TestCheckValuesSize: every string of the values counts, wherever it is
// (a component's files, a sidecar's env, the flag); the fields named are
// the largest, by their path or key.
func TestCheckValuesSize(t *testing.T) {
	big := strings.Repeat("s", MaxValuesBytes/2)
	for _, tc := range []struct {
		name    string
		vals    map[string]any
		largest string
	}{
		{"nothing", map[string]any{}, ""},
		{"a flag and a few values", map[string]any{"flag": map[string]any{"value": "CTF{x}"}, "secretData": []any{map[string]any{"key": "file.0", "value": big}}}, ""},
		{"a component's files", map[string]any{"components": []any{map[string]any{"name": "db", "files": []any{
			map[string]any{"path": "/etc/a", "content": big}, map[string]any{"path": "/etc/b", "content": big + "s"}}}}},
			"components[db].files[/etc/b].content (131073 bytes), components[db].files[/etc/a].content (131072 bytes)"},
		{"env values and a secret file", map[string]any{"env": []any{map[string]any{"name": "BIG", "value": big}}, "secretData": []any{map[string]any{"key": "db.file.0", "value": big + "s"}}},
			"secretData[db.file.0].value (131073 bytes), env[BIG].value (131072 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkValuesSize(tc.vals)
			if tc.largest == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonValuesTooLarge)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("the largest are " + tc.largest))
			g.Expect(err.Error()).NotTo(ContainSubstring("sss"), "no value in the error")
		})
	}
}
