package policy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
)

// maxOps bounds how many changes one fuzz input makes, so each run stays fast.
const maxOps = 8

// rawMode in the first byte of ops makes an input fuzz raw instead of ops: each input exercises
// one of the two, so an execution stays cheap and its coverage follows what changed.
const rawMode = 0x80

// FuzzCheck fuzzes the gate two ways. ops picks a valid release (its first byte: bit 0 a namespace
// of its own, bit 1 an Ingress) and a sequence of changes to it: harmless ones (bytes below 0x80)
// and breaking ones (from 0x80); the gate must refuse whenever one breaking change was made, and
// pass otherwise. When the first byte has rawMode set, raw is the manifest instead: whenever the
// gate passes it, an oracle that decodes it as the API client does, sharing no code with the gate,
// must agree that nothing dangerous got through.
func FuzzCheck(f *testing.F) {
	for _, v := range []byte{0, 1, 2, 3} {
		fx := newFixture(v&1 == 1, v&2 == 2)
		f.Add([]byte{v, 0x80 + v, 7 * v}, []byte{})
		f.Add([]byte{rawMode | v}, fx.render())
	}
	f.Add([]byte{1, 0x80 + 44, 3, 0x80 + 90, 9}, []byte{})
	f.Add([]byte{0, 0xff, 0x90, 0xa0, 0xb0, 1, 2}, []byte{})
	f.Add([]byte{rawMode}, []byte(chartManifest))
	f.Add([]byte{rawMode}, []byte("---\n# Source: x\n"))
	f.Add([]byte{rawMode}, []byte("{\"kind\":\"Deployment\"}"))
	f.Add([]byte{rawMode}, []byte(strings.Replace(chartManifest, "hostNetwork: false", "hostNetwork: true", 1)))

	f.Fuzz(func(t *testing.T, ops, raw []byte) {
		if len(ops) == 0 {
			return
		}
		if ops[0]&rawMode != 0 {
			checkRaw(t, raw, ops[0]&1 == 1)
			return
		}
		checkChanges(t, ops)
	})
}

// checkChanges applies the changes ops picks: the release's variant first, then the harmless
// changes, then the breaking ones, which pin what they need so no other change can undo them.
func checkChanges(t *testing.T, ops []byte) {
	own, ingress := ops[0]&1 == 1, ops[0]&2 == 2
	var safe []harmless
	var broken []breaking
	for _, op := range ops[1:min(len(ops), maxOps+1)] {
		if op < 0x80 {
			h := fuzzHarmless[int(op)%len(fuzzHarmless)]
			safe, own, ingress = append(safe, h), own || h.own, ingress || h.ingress
			continue
		}
		b := breakings[int(op-0x80)%len(breakings)]
		broken, own, ingress = append(broken, b), own || b.own, ingress || b.ingress
	}
	fx := newFixture(own, ingress)
	for _, h := range safe {
		if h.apply != nil {
			h.apply(fx)
		}
	}
	for _, b := range broken {
		b.apply(fx)
	}
	err := Check(fx.render(), fx.in)
	if len(broken) == 0 {
		if err != nil {
			t.Fatalf("harmless changes %v refused: %v", names(safe), err)
		}
		return
	}
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("breaking changes %v passed (err %v)", breakingNames(broken), err)
	}
}

// fuzzHarmless are the harmless changes that do not relax the instance.
var fuzzHarmless = func() []harmless {
	var out []harmless
	for _, h := range harmlessChanges {
		if !h.relaxes {
			out = append(out, h)
		}
	}
	return out
}()

func names(hs []harmless) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.name)
	}
	return out
}

func breakingNames(bs []breaking) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.name)
	}
	return out
}

// checkRaw runs the gate on any manifest and, when it passes, asks the oracle.
func checkRaw(t *testing.T, raw []byte, own bool) {
	in := testInstance()
	in.OwnNamespace = own
	if Check(raw, in) != nil {
		return
	}
	if err := oracle(raw, in); err != nil {
		t.Fatalf("the gate passed a manifest the oracle refuses: %v\n%s", err, raw)
	}
}

// oracleKinds is the allowlist, written again so the oracle shares nothing with the gate.
var oracleKinds = map[string]bool{
	"apps/v1/Deployment": true, "v1/Service": true, "v1/ServiceAccount": true, "v1/Secret": true,
	"v1/Namespace": true, "v1/ResourceQuota": true, "v1/LimitRange": true,
	"networking.k8s.io/v1/NetworkPolicy": true, "networking.k8s.io/v1/Ingress": true,
}

// oracle decodes manifest as the Kubernetes client Helm applies with does, into plain maps, and
// checks the properties that matter most: allowlisted kinds in the instance's namespace, no Helm
// annotations, and no pod that reaches into the node.
func oracle(manifest []byte, in Instance) error {
	dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if obj == nil {
			continue
		}
		if err := oracleObject(obj, in); err != nil {
			return err
		}
	}
}

// oracleObject checks one decoded object.
func oracleObject(obj map[string]any, in Instance) error {
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	if !oracleKinds[apiVersion+"/"+kind] {
		return errors.New("kind " + apiVersion + "/" + kind)
	}
	ns, _ := dig(obj, "metadata", "namespace").(string)
	name, _ := dig(obj, "metadata", "name").(string)
	if (kind == "Namespace" && (ns != "" || name != in.Namespace)) || (kind != "Namespace" && ns != in.Namespace) {
		return errors.New("namespace " + ns + " of " + kind + " " + name)
	}
	for _, path := range [][]string{{"metadata"}, {"spec", "template", "metadata"}} {
		annotations, _ := dig(obj, append(path, "annotations")...).(map[string]any)
		for k := range annotations {
			if strings.HasPrefix(k, "helm.sh/") || strings.HasPrefix(k, "meta.helm.sh/") {
				return errors.New("helm annotation " + k)
			}
		}
	}
	if kind == "Deployment" {
		return oraclePod(dig(obj, "spec", "template", "spec"))
	}
	return nil
}

// oraclePod refuses a pod spec that shares the node's namespaces, runs privileged or mounts a
// path of the node.
func oraclePod(spec any) error {
	for _, f := range []string{"hostPID", "hostNetwork", "hostIPC"} {
		if dig(spec, f) == true {
			return errors.New(f)
		}
	}
	for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
		cs, _ := dig(spec, list).([]any)
		for _, c := range cs {
			if dig(c, "securityContext", "privileged") == true {
				return errors.New("privileged " + list)
			}
		}
	}
	vs, _ := dig(spec, "volumes").([]any)
	for _, v := range vs {
		if dig(v, "hostPath") != nil {
			return errors.New("hostPath volume")
		}
	}
	return nil
}

// dig walks nested maps by key; nil when a step is missing or not a map.
func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
