package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/internal/atomicfile"
)

// Metric is one line of metrics.jsonl, written every --log-every steps and
// at the last step.
type Metric struct {
	Step    int     `json:"step"`      // completed steps
	Loss    float64 `json:"loss"`      // loss of that step
	LR      float64 `json:"lr"`        // learning rate of that step
	ImgPerS float64 `json:"img_per_s"` // images (each giving two views) per second since the previous line, data loading included; all ranks together
	// DataWaitS is how long, since the previous line, the training loop
	// waited for the loader's next batch (PyTorch's "data time"): a large
	// share of the window means the augmentation is the bottleneck
	// (--workers). This rank's.
	DataWaitS float64 `json:"data_wait_s"`
	// WorldSize is the number of data-parallel ranks (absent: one process).
	WorldSize int `json:"world_size,omitempty"`
	// MemoryClassEntropy is the entropy (nats) of the labels of the rows in
	// the memory, for methods with a memory on labelled data.
	MemoryClassEntropy *float64 `json:"memory_class_entropy,omitempty"`
	// MemoryRows is the number of rows held.
	MemoryRows *int `json:"memory_rows,omitempty"`
	// MemoryClassCounts is the number of rows held of each class (labelled
	// data only).
	MemoryClassCounts []int `json:"memory_class_counts,omitempty"`
	// MemoryAgeMean, MemoryAgeMedian and MemoryAgeMax are the ages in steps
	// of the rows held (memory.Usage).
	MemoryAgeMean   *float64 `json:"memory_age_mean,omitempty"`
	MemoryAgeMedian *float64 `json:"memory_age_median,omitempty"`
	MemoryAgeMax    *float64 `json:"memory_age_max,omitempty"`
	// MemoryStaleMean and MemoryStaleMax are the ages in steps of the rows'
	// features (since entry or the last --mem-refresh).
	MemoryStaleMean *float64 `json:"memory_stale_mean,omitempty"`
	MemoryStaleMax  *float64 `json:"memory_stale_max,omitempty"`
	// MemoryNegUsesMean and MemoryNegUsesMax count the steps at which the
	// rows held were drawn as negatives.
	MemoryNegUsesMean *float64 `json:"memory_neg_uses_mean,omitempty"`
	MemoryNegUsesMax  *float64 `json:"memory_neg_uses_max,omitempty"`
	// MemoryBatchCos is the mean cosine between the step's memory input
	// rows and the older rows held; BatchCos the mean cosine between
	// distinct input rows. A gap between them means the memory holds rows
	// of an older encoder.
	MemoryBatchCos *float64 `json:"memory_batch_cos,omitempty"`
	BatchCos       *float64 `json:"batch_cos,omitempty"`
	// KNNTop1 is the kNN monitor's top-1 accuracy, when measured at this step.
	KNNTop1 *float64 `json:"knn_top1,omitempty"`
	// KNN is what KNNTop1 was computed with, on every line that has one
	// (nil: not measured, or a line written before it was recorded, whose
	// settings are unknown). The --knn-* settings may change when a run is
	// resumed and config.json holds only the latest segment's, so each
	// line records its own.
	KNN      *KNNSettings `json:"knn,omitempty"`
	ElapsedS float64      `json:"elapsed_s"` // training wall time of the run, summed over its segments (a resumed run goes on from its checkpoint's last line)
}

// KNNSettings is what a kNN monitor measurement computed with
// (metrics.jsonl's "knn"): a weighted vote (InstDisc's, exp(cos/T)) of
// the K nearest of Train images of the training split, evenly spaced over
// it, on Test images evenly spaced over the test split, in backbone
// features of the encoder in evaluation mode.
type KNNSettings struct {
	// K is the number of neighbours: --knn-k, capped at Train.
	K int `json:"k"`
	// Temperature is the vote's temperature T.
	Temperature float64 `json:"temperature"`
	// Train is the number of images in the bank: --knn-train, or the whole
	// training split when it has fewer.
	Train int `json:"train"`
	// Test is the number of test images classified: --knn-test, or the
	// whole test split when it has fewer.
	Test int `json:"test"`
}

// metricsLog appends metrics to a run's metrics.jsonl.
type metricsLog struct {
	f *os.File
	// elapsed is the elapsed_s of the last line kept (0 for none): where
	// a resumed run's wall time continues from.
	elapsed float64
}

// openMetrics opens dir/metrics.jsonl for appending, first dropping the
// lines after step keep (those of steps a resumed run will redo) and a torn
// last line (a line without its newline that does not parse: the process
// was killed while writing it). The file is rewritten atomically when lines
// are dropped. Any other line that does not parse is an error naming the
// file and the line: a resumed run never drops logged steps silently.
func openMetrics(dir string, keep int) (*metricsLog, error) {
	path := filepath.Join(dir, MetricsFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	lines, torn, err := parseMetrics(b, path)
	if err != nil {
		return nil, err
	}
	var kept bytes.Buffer
	// A last line without its newline is rewritten with one, so that the
	// next line is not appended onto it.
	dropped := torn || len(b) > 0 && b[len(b)-1] != '\n'
	elapsed := 0.0
	for _, l := range lines {
		if l.m.Step > keep {
			dropped = true // a step to be redone
			continue
		}
		elapsed = l.m.ElapsedS
		kept.Write(l.raw)
		kept.WriteByte('\n')
	}
	if dropped {
		if err := atomicfile.WriteFile(path, kept.Bytes()); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &metricsLog{f: f, elapsed: elapsed}, nil
}

// metricsLine is one parsed line of metrics.jsonl and its bytes.
type metricsLine struct {
	m   Metric
	raw []byte
}

// maxMetricsLine bounds one line of metrics.jsonl.
const maxMetricsLine = 1 << 24

// parseMetrics parses the contents b of metrics.jsonl (path names it in
// errors). Every non-blank line must be a JSON object with a numeric
// "step", greater than the previous line's, as duelctl train writes it;
// torn reports a last line without
// its newline that does not parse, which is left out (the process was
// killed while writing it; duelctl analyze skips it too). Any other bad
// line is an error naming the file, the line number, what was found and
// what was expected.
func parseMetrics(b []byte, path string) (lines []metricsLine, torn bool, err error) {
	for n := 1; len(b) > 0; n++ {
		raw, rest, complete := bytes.Cut(b, []byte{'\n'})
		b = rest
		if len(raw) > maxMetricsLine {
			return nil, false, fmt.Errorf("%s:%d: a line of %d bytes, expected at most %d", path, n, len(raw), maxMetricsLine)
		}
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			continue
		}
		m, perr := parseMetricLine(line)
		if perr != nil {
			if !complete {
				return lines, true, nil
			}
			return nil, false, fmt.Errorf("%s:%d: found %s, expected a JSON object with a numeric \"step\" as duelctl train writes it (a torn last line is skipped; fix or delete this one): %w",
				path, n, excerpt(line), perr)
		}
		if k := len(lines); k > 0 && m.Step <= lines[k-1].m.Step {
			return nil, false, fmt.Errorf("%s:%d: step %d after step %d, expected increasing steps as duelctl train writes them (did two processes train the run at once?)",
				path, n, m.Step, lines[k-1].m.Step)
		}
		lines = append(lines, metricsLine{m: m, raw: line})
	}
	return lines, false, nil
}

// parseMetricLine decodes one non-blank line of metrics.jsonl.
func parseMetricLine(line []byte) (Metric, error) {
	var m Metric
	var step struct {
		Step *int `json:"step"`
	}
	if err := json.Unmarshal(line, &step); err != nil {
		return m, err
	}
	if step.Step == nil {
		return m, errors.New("no \"step\"")
	}
	if *step.Step < 0 {
		return m, fmt.Errorf("step %d, expected >= 0", *step.Step)
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, err
	}
	return m, nil
}

// excerpt quotes the start of a bad line for an error message.
func excerpt(line []byte) string {
	const n = 60
	if len(line) > n {
		return strconv.Quote(string(line[:n])) + "..."
	}
	return strconv.Quote(string(line))
}

// write appends one line.
func (l *metricsLog) write(m *Metric) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", l.f.Name(), err)
	}
	return nil
}

func (l *metricsLog) close() error { return l.f.Close() }

// ReadMetrics reads a run's metrics.jsonl. A torn last line (without its
// newline, not valid: the process was killed while writing it) is left
// out; any other line that is not a metric as duelctl train writes it is
// an error naming the file and the line.
func ReadMetrics(dir string) ([]Metric, error) {
	path := filepath.Join(dir, MetricsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines, _, err := parseMetrics(b, path)
	if err != nil {
		return nil, err
	}
	out := make([]Metric, len(lines))
	for i, l := range lines {
		out[i] = l.m
	}
	return out, nil
}

// finitePtr returns &v, or nil when v is NaN or infinite (JSON has no NaN).
func finitePtr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// setMemory fills the memory fields of m from mem at step (classes: the
// dataset's number of classes).
func (m *Metric) setMemory(mem *memory.Memory, step, classes int) {
	h, n := mem.ClassEntropy(), mem.Len()
	m.MemoryClassEntropy, m.MemoryRows = &h, &n
	if counts, err := mem.ClassCounts(classes); err == nil {
		total := 0
		for _, c := range counts {
			total += c
		}
		if total > 0 {
			m.MemoryClassCounts = counts
		}
	}
	u := mem.Usage(step)
	m.MemoryAgeMean, m.MemoryAgeMedian, m.MemoryAgeMax = finitePtr(u.AgeMean), finitePtr(u.AgeMedian), finitePtr(u.AgeMax)
	m.MemoryStaleMean, m.MemoryStaleMax = finitePtr(u.StaleMean), finitePtr(u.StaleMax)
	m.MemoryNegUsesMean, m.MemoryNegUsesMax = finitePtr(u.UsesMean), finitePtr(u.UsesMax)
	m.MemoryBatchCos, m.BatchCos = finitePtr(u.BatchCos), finitePtr(u.WithinCos)
}
