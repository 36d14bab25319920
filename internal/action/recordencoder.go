package action

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"sync"

	"helm.sh/helm/v3/pkg/release"
)

// chartsKept bounds the charts whose compressed JSON a recordEncoder keeps:
// the operator renders one chart, so a handful covers a chart's upgrade.
const chartsKept = 8

// recordEncoder writes a record as Helm does, base64 of the gzipped JSON of
// the release, but in two gzip members. The first holds the chart, the
// larger part by far (the templates, values and schema: 97 KB of the
// challenge chart's JSON) and the same in every release of it, so it is
// compressed once per chart, at gzip's best; the second holds the rest of
// the release, at gzip's default level, with a compressor taken from a pool
// rather than allocated (800 KB) per record. Gzip's reader, and so Helm's
// and the helm CLI's, reads the members as one stream: the JSON object
// `{"chart":...,"name":...}`, whose keys Helm reads in any order.
type recordEncoder struct {
	mu     sync.Mutex
	charts map[string][]byte // a chart's JSON: its gzip member

	writers sync.Pool // *gzip.Writer at the default level
}

func newRecordEncoder() *recordEncoder {
	return &recordEncoder{charts: map[string][]byte{}}
}

// encode is the record of rls, base64 of gzipped JSON.
func (e *recordEncoder) encode(rls *release.Release) ([]byte, error) {
	rest := *rls
	rest.Chart = nil
	body, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	if rls.Chart != nil {
		chartJSON, err := json.Marshal(rls.Chart)
		if err != nil {
			return nil, err
		}
		member, err := e.chartMember(chartJSON)
		if err != nil {
			return nil, err
		}
		gz.Write(member)
		// The chart's member opened the object; the rest goes on after it.
		body = body[1:]
		if body[0] != '}' {
			body = append([]byte{','}, body...)
		}
	}
	if err := e.compress(&gz, body); err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(gz.Len()))
	base64.StdEncoding.Encode(out, gz.Bytes())
	return out, nil
}

// chartMember is the gzip member of `{"chart":` and the chart's JSON,
// compressed the first time the chart is seen.
func (e *recordEncoder) chartMember(chartJSON []byte) ([]byte, error) {
	e.mu.Lock()
	member, ok := e.charts[string(chartJSON)]
	e.mu.Unlock()
	if ok {
		return member, nil
	}
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	for _, part := range [][]byte{[]byte(`{"chart":`), chartJSON} {
		if _, err := w.Write(part); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	member = buf.Bytes()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.charts) >= chartsKept {
		clear(e.charts)
	}
	e.charts[string(chartJSON)] = member
	return member, nil
}

// compress appends raw to buf as one gzip member at the default level.
func (e *recordEncoder) compress(buf *bytes.Buffer, raw []byte) error {
	w, _ := e.writers.Get().(*gzip.Writer)
	if w == nil {
		w = gzip.NewWriter(buf)
	} else {
		w.Reset(buf)
	}
	defer e.writers.Put(w)
	if _, err := w.Write(raw); err != nil {
		return err
	}
	return w.Close()
}
