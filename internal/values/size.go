package values

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// MaxValuesBytes bounds the text an instance's values carry: every string
// of them, the template's files, the secret files, the secretEnv and env
// values and the flags above all. Helm keeps each twice in the release
// record, a Secret of at most 1 MiB (base64 of the gzipped release, chart
// included): once in the values, once in the rendered manifest. Measured
// with incompressible text (random printable ASCII or UTF-8, gzip's worst
// case), 256 KiB of it makes a record of 647 KB, 62% of the Secret's limit
// (TestValuesAtTheBoundFitTheReleaseRecord); 512 KiB, the former bound of the
// Secret's data alone, made 1.26 MB and was refused by the API server.
const MaxValuesBytes = 256 << 10

// valuesField is a string of the values and its size: the path names the
// field (a file by its path, an entry of the instance's Secret by its key),
// never its value.
type valuesField struct {
	path  string
	bytes int
}

// checkValuesSize refuses an instance whose values carry more than
// MaxValuesBytes of text, before anything is installed: Helm would fail to
// store its release record ("Too long"). The error names the total and the
// largest fields, never a value.
func checkValuesSize(vals map[string]any) error {
	raw, err := json.Marshal(vals)
	if err != nil {
		return fmt.Errorf("measuring the values: %w", err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return fmt.Errorf("measuring the values: %w", err)
	}
	fields := stringFields("", tree, nil)
	total := 0
	for _, f := range fields {
		total += f.bytes
	}
	if total <= MaxValuesBytes {
		return nil
	}
	slices.SortStableFunc(fields, func(a, b valuesField) int { return b.bytes - a.bytes })
	largest := make([]string, 0, 3)
	for _, f := range fields[:min(3, len(fields))] {
		largest = append(largest, fmt.Sprintf("%s (%d bytes)", f.path, f.bytes))
	}
	return lifecycle.Errorf(lifecycle.ReasonValuesTooLarge, "the instance's values carry %d bytes of text (files, secret files, secretEnv, env, flags), above the %d an instance may (Helm keeps them twice in its release record, a Secret of at most 1 MiB); the largest are %s: make the files or secret files smaller or fewer",
		total, MaxValuesBytes, strings.Join(largest, ", "))
}

// stringFields appends to out every string under v, at its path below at.
// A list's entry is named by its path or key when it has one (a file, an
// entry of the instance's Secret), else by its index.
func stringFields(at string, v any, out []valuesField) []valuesField {
	switch v := v.(type) {
	case string:
		return append(out, valuesField{path: at, bytes: len(v)})
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = stringFields(strings.TrimPrefix(at+"."+k, "."), v[k], out)
		}
	case []any:
		for i, e := range v {
			name := strconv.Itoa(i)
			if m, ok := e.(map[string]any); ok {
				for _, k := range []string{"path", "key", nameKey} {
					if s, ok := m[k].(string); ok && s != "" {
						name = s
						break
					}
				}
			}
			out = stringFields(at+"["+name+"]", e, out)
		}
	}
	return out
}
