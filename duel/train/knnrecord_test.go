package train

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestKNNSettingsPerLine: the --knn-* settings may change when a run is
// resumed, and config.json keeps only the latest segment's, so every
// metrics.jsonl line with a knn_top1 records the settings it was measured
// with ("knn"), the earlier segment's lines theirs.
func TestKNNSettingsPerLine(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "dmoco")
	// tinyOptions: 64 train images, 32 test images.
	c.Steps, c.KNNEvery, c.KNNK, c.KNNTrain, c.KNNTest = 2, 2, 5, 1000, 32
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	c.Steps, c.KNNK, c.KNNTrain, c.KNNTest = 4, 3, 16, 8
	resumeTrain(t, c, dir, 0)
	ms, err := ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]KNNSettings{
		2: {K: 5, Temperature: knnTemperature, Train: 64, Test: 32}, // --knn-train 1000: the whole split
		4: {K: 3, Temperature: knnTemperature, Train: 16, Test: 8},
	}
	for _, m := range ms {
		w, measured := want[m.Step]
		if measured != (m.KNNTop1 != nil) {
			t.Fatalf("step %d: knn_top1 %v, expected one: %v", m.Step, m.KNNTop1, measured)
		}
		switch {
		case !measured && m.KNN != nil:
			t.Errorf("step %d: knn %+v without knn_top1", m.Step, *m.KNN)
		case measured && m.KNN == nil:
			t.Errorf("step %d: knn_top1 without the settings it was measured with", m.Step)
		case measured && *m.KNN != w:
			t.Errorf("step %d: knn %+v, expected %+v", m.Step, *m.KNN, w)
		}
	}
	// The raw line: a "knn" object, next to knn_top1.
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 3)[1], &raw); err != nil {
		t.Fatal(err)
	}
	if got, ok := raw["knn"].(map[string]any); !ok || got["k"] != 5.0 || got["temperature"] != knnTemperature || got["train"] != 64.0 || got["test"] != 32.0 {
		t.Errorf("step 2's line: knn %v, expected {k 5, temperature %v, train 64, test 32}", raw["knn"], knnTemperature)
	}
	// config.json: the latest segment's settings.
	cfg, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KNNK != 3 || cfg.KNNTrain != 16 || cfg.KNNTest != 8 {
		t.Errorf("config.json: knn_k %d, knn_train %d, knn_test %d, expected the latest segment's 3, 16, 8", cfg.KNNK, cfg.KNNTrain, cfg.KNNTest)
	}
}

// TestKNNSettingsOldLines: a line written before "knn" was recorded
// reads with unknown settings (nil), and a resumed run keeps it as it is.
func TestKNNSettingsOldLines(t *testing.T) {
	dir := t.TempDir()
	old := "{\"step\":1,\"loss\":2.5,\"lr\":0.1,\"img_per_s\":10,\"data_wait_s\":0,\"knn_top1\":0.25,\"elapsed_s\":1}\n"
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := ReadMetrics(dir)
	if err != nil || len(ms) != 1 || ms[0].KNNTop1 == nil || *ms[0].KNNTop1 != 0.25 || ms[0].KNN != nil {
		t.Fatalf("%+v, %v", ms, err)
	}
	l, err := openMetrics(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	l.close()
	if b, _ := os.ReadFile(filepath.Join(dir, MetricsFile)); string(b) != old {
		t.Errorf("the old line was rewritten: %q", b)
	}
}
