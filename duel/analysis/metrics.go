package analysis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Metrics is a parsed metrics.jsonl: one record per logged step, each with the
// numeric fields of its line.
type Metrics struct {
	Records []map[string]float64
	// Keys are the numeric field names: those of the first record in
	// increasing order, then new ones as they appear.
	Keys []string
	// Truncated is true when the last line was cut short (no final newline and
	// not valid JSON: a write in progress or a crash) and was skipped.
	Truncated bool
}

// maxMetricsLine is the longest accepted line of metrics.jsonl.
const maxMetricsLine = 1 << 20

// ReadMetrics parses the metrics.jsonl file at path (see ParseMetrics).
func ReadMetrics(path string) (*Metrics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMetrics(f, path)
}

// ParseMetrics parses metrics.jsonl from r; file names it in errors. Every
// non-blank line must be a JSON object with a numeric "step", greater than
// the previous line's; its other
// numeric fields are kept, null, string, boolean and nested values are
// ignored (a metric absent from a step is null or missing). A last line
// without its newline that is not valid JSON is skipped and reported by
// Truncated, so that a run killed while logging can still be analysed; any
// other bad line is an error naming file and line.
func ParseMetrics(r io.Reader, file string) (*Metrics, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	m := &Metrics{}
	seen := map[string]bool{}
	for line := 1; ; line++ {
		b, err := readLine(br)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		last := err == io.EOF
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		b = bytes.TrimSpace(b)
		if len(b) > 0 {
			rec, perr := parseMetricsLine(b)
			if perr != nil {
				if last && !complete {
					m.Truncated = true
					return m, nil
				}
				return nil, fmt.Errorf("%s:%d: %w", file, line, perr)
			}
			if n := len(m.Records); n > 0 && rec["step"] <= m.Records[n-1]["step"] {
				return nil, fmt.Errorf("%s:%d: step %v after step %v, expected increasing steps as duelctl train writes them (did two processes train the run at once?)",
					file, line, rec["step"], m.Records[n-1]["step"])
			}
			for _, k := range sortedKeys(rec) {
				if !seen[k] {
					seen[k] = true
					m.Keys = append(m.Keys, k)
				}
			}
			m.Records = append(m.Records, rec)
		}
		if last {
			return m, nil
		}
	}
}

// readLine returns the next line with its newline, or what remains before
// EOF (with io.EOF). Lines longer than maxMetricsLine are an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxMetricsLine {
			return nil, fmt.Errorf("line longer than %d bytes, expected one JSON object per line", maxMetricsLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return out, err
	}
}

// parseMetricsLine decodes one JSON object and keeps its numeric fields.
func parseMetricsLine(b []byte) (map[string]float64, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("got null, expected a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value on the line, expected one object")
	}
	rec := make(map[string]float64, len(obj))
	for k, v := range obj {
		n, ok := v.(json.Number)
		if !ok {
			continue
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("field %q: %s is not a finite float64", k, n)
		}
		rec[k] = f
	}
	if _, ok := rec["step"]; !ok {
		return nil, fmt.Errorf("no numeric \"step\" field, expected one on every line")
	}
	return rec, nil
}

// sortedKeys returns the keys of rec in increasing order.
func sortedKeys(rec map[string]float64) []string {
	keys := make([]string, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Series returns the steps and values of the records that have key.
func (m *Metrics) Series(key string) (steps, values []float64) {
	for _, r := range m.Records {
		if v, ok := r[key]; ok {
			steps = append(steps, r["step"])
			values = append(values, v)
		}
	}
	return steps, values
}

// Last returns the value of key in the last record that has it.
func (m *Metrics) Last(key string) (float64, bool) {
	for i := len(m.Records) - 1; i >= 0; i-- {
		if v, ok := m.Records[i][key]; ok {
			return v, true
		}
	}
	return 0, false
}

// UpTo returns the records of m whose step is at most step (the log of a
// run up to a checkpoint), with the same Keys and Truncated.
func (m *Metrics) UpTo(step float64) *Metrics {
	out := &Metrics{Keys: m.Keys, Truncated: m.Truncated}
	for _, r := range m.Records {
		if r["step"] <= step {
			out.Records = append(out.Records, r)
		}
	}
	return out
}
