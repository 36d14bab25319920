package action

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// minRedacted is the shortest flag cut out of error text: a shorter one would
// blank ordinary words.
const minRedacted = 4

// redacted returns err with the instance's flag (values flag.value) and its
// secretEnv values cut out
// of its text, raw, trimmed and as Go or JSON would quote it: Helm's errors
// quote values (a schema error names the value it refuses), and the reconciler
// carries them into the status, an Event and the log. The flag is checked
// before rendering (flag.Check); this is the second line.
func redacted(err error, vals map[string]any) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := msg
	var forms []string
	for _, value := range secretValues(vals) {
		forms = append(forms, flagForms(value)...)
	}
	// Longest first: a trimmed value is inside its other forms, and a shorter
	// secret may be inside a longer one's.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, form := range forms {
		out = strings.ReplaceAll(out, form, "[redacted]")
	}
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
}

// secretValues are the values an instance's Secret holds: its flag, its
// secretEnv values and the rest of its data (the components' secretEnv, the
// secret files).
func secretValues(vals map[string]any) []string {
	f, _ := vals["flag"].(map[string]any)
	value, _ := f["value"].(string)
	out := []string{value}
	for _, list := range []string{"secretEnv", "secretData"} {
		entries, _ := vals[list].([]any)
		for _, e := range entries {
			m, _ := e.(map[string]any)
			if v, ok := m["value"].(string); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// flagForms are the ways an error message may spell value.
func flagForms(value string) []string {
	goQuoted := strconv.Quote(value)
	jsonQuoted, _ := json.Marshal(value)
	forms := []string{value, strings.TrimSpace(value), goQuoted[1 : len(goQuoted)-1], string(jsonQuoted[1 : len(jsonQuoted)-1])}
	var out []string
	for _, f := range forms {
		if len(f) >= minRedacted {
			out = append(out, f)
		}
	}
	return out
}

// redactedError reads as its redacted message and still unwraps to the
// error it stands for, for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
