package wisdom

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics and that what it accepts
// survives a write and a read unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"format": "duel-wisdom", "version": 1, "cpus": {"k": {"gemm.sgemm": {"kernel": "avx512", "kc": 432}}}}`))
	f.Add([]byte(`{"format": "duel-wisdom", "version": 1}`))
	f.Add([]byte(`{"format": "duel-wisdom", "version": 2}`))
	f.Add([]byte(`{"cpus": {"": {"x": []}}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Parse(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("accepted file does not encode: %v", err)
		}
		w2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-encoded file rejected: %v\n%s", err, out)
		}
		norm := func(f *File) map[string]map[string]string {
			m := map[string]map[string]string{}
			for k, es := range f.CPUs {
				m[k] = map[string]string{}
				for n, raw := range es {
					var v any
					if err := json.Unmarshal(raw, &v); err != nil {
						t.Fatalf("entry %s/%s: %v", k, n, err)
					}
					b, _ := json.Marshal(v)
					m[k][n] = string(b)
				}
			}
			return m
		}
		if !reflect.DeepEqual(norm(w), norm(w2)) {
			t.Fatalf("round trip changed the entries")
		}
	})
}
