package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

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
	KNNTop1  *float64 `json:"knn_top1,omitempty"`
	ElapsedS float64  `json:"elapsed_s"` // wall time since this process started training
}

// metricsLog appends metrics to a run's metrics.jsonl.
type metricsLog struct {
	f *os.File
}

// openMetrics opens dir/metrics.jsonl for appending, first dropping the
// lines after step keep (those of steps a resumed run will redo). The file
// is rewritten atomically when lines are dropped.
func openMetrics(dir string, keep int) (*metricsLog, error) {
	path := filepath.Join(dir, MetricsFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var kept bytes.Buffer
	dropped := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var m struct {
			Step *int `json:"step"`
		}
		var full Metric // what ReadMetrics will decode
		if json.Unmarshal(line, &m) != nil || json.Unmarshal(line, &full) != nil || m.Step == nil || *m.Step > keep {
			dropped = true // a torn last line, or a step to be redone
			continue
		}
		kept.Write(line)
		kept.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
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
	return &metricsLog{f: f}, nil
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

// ReadMetrics reads a run's metrics.jsonl.
func ReadMetrics(dir string) ([]Metric, error) {
	path := filepath.Join(dir, MetricsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Metric
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m Metric
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
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
