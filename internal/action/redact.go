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

// redacted returns err with the instance's flag (values flag.value) cut out
// of its text, raw, trimmed and as Go or JSON would quote it: Helm's errors
// quote values (a schema error names the value it refuses), and the reconciler
// carries them into the status, an Event and the log. The flag is checked
// before rendering (flag.Check); this is the second line.
func redacted(err error, vals map[string]any) error {
	if err == nil {
		return nil
	}
	f, _ := vals["flag"].(map[string]any)
	value, _ := f["value"].(string)
	msg := err.Error()
	out := msg
	for _, form := range flagForms(value) {
		out = strings.ReplaceAll(out, form, "[redacted]")
	}
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
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
	// Longest first: the trimmed value is inside the others.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
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
