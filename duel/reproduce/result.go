package reproduce

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/duel-ssl/duel/internal/atomicfile"
)

// probeFile holds a finished run's evaluation, next to the run's files.
const probeFile = "probe.json"

// resultSchema is the version of probe.json written. Files of an older
// schema do not record the evaluation settings their measures were taken
// with (version 2 lacks Evaluation; version 1, without a schema, holds
// only the linear probe, the loss and the memory's class entropy): their
// runs are measured again.
const resultSchema = 3

// RunResult is one (variant, ρmax, seed) run with its evaluation: the
// content of its probe.json.
type RunResult struct {
	Schema  int     `json:"schema"`
	Variant string  `json:"variant"` // the variant spec, method[:key=value,...]
	Method  string  `json:"method"`
	RhoMax  float64 `json:"rho_max"`
	Seed    int     `json:"seed"`
	Dir     string  `json:"dir"`
	Steps   int     `json:"steps"`
	Loss    float64 `json:"loss"`
	Top1    float64 `json:"top1"`              // linear probe, Appendix E
	Classes int     `json:"classes,omitempty"` // classes of the dataset

	// The memory at the end of training (methods with a memory).
	MemoryClassEntropy *float64   `json:"memory_class_entropy,omitempty"` // nats
	MemoryClassCounts  []int      `json:"memory_class_counts,omitempty"`
	MemoryRows         int        `json:"memory_rows,omitempty"`
	MemoryAge          *MemoryAge `json:"memory_age,omitempty"`

	// The clustering of the L2-normalised test features of Layer
	// (analysis.Cluster, as duelctl analyze) on ClusterSamples test
	// images, class-balanced.
	Layer                string   `json:"layer,omitempty"`
	ClusterSamples       int      `json:"cluster_samples,omitempty"`
	IntraClassVariance   *float64 `json:"intra_class_variance,omitempty"`
	InterClassSimilarity *float64 `json:"inter_class_similarity,omitempty"`

	// Curves over training, from metrics.jsonl.
	Curves Curves `json:"curves"`

	// Precision and ConvPrecision are those the run's latest training
	// segment computed its matrix products and convolutions in (its
	// config.json's "ran"; "" when it records none).
	Precision     string `json:"precision,omitempty"`
	ConvPrecision string `json:"conv_precision,omitempty"`

	TrainSeconds float64 `json:"train_seconds"`
	ProbeSeconds float64 `json:"probe_seconds"` // linear probe and the measures above

	// Evaluation is the grid's evaluation settings the measures above were
	// taken with (nil in probe.json files written before it existed).
	Evaluation *Evaluation `json:"evaluation,omitempty"`

	// Made says which binary, on which CPU and when, trained and evaluated
	// the run (nil in probe.json files written before it existed).
	Made *Provenance `json:"made,omitempty"`
}

// Evaluation is what of a Grid decides a finished run's measures, beside
// its training: a saved probe.json taken with other settings is measured
// again.
type Evaluation struct {
	ProbeEpochs  int `json:"probe_epochs"`
	ProbeLimit   int `json:"probe_limit"`
	ClusterLimit int `json:"cluster_limit"`
}

// evaluatedWith says whether r's measures were taken with the evaluation
// settings e (false when r does not record them).
func (r *RunResult) evaluatedWith(e Evaluation) bool {
	return r.Schema >= 3 && r.Evaluation != nil && *r.Evaluation == e
}

// evaluationText describes the evaluation settings r records.
func (r *RunResult) evaluationText() string {
	if r.Schema < 3 || r.Evaluation == nil {
		return fmt.Sprintf("settings it does not record (schema %d, written by an older duelctl)", r.Schema)
	}
	return r.Evaluation.String()
}

// String describes e as the report's settings do.
func (e Evaluation) String() string {
	probe := "whole splits"
	if e.ProbeLimit > 0 {
		probe = fmt.Sprintf("%d images per split", e.ProbeLimit)
	}
	return fmt.Sprintf("linear probe %d epochs on %s, clustering of %s", e.ProbeEpochs, probe, clusterImages(e.ClusterLimit))
}

// clusterImages describes the test images of a cluster limit.
func clusterImages(limit int) string {
	if limit == 0 {
		return "the whole test split"
	}
	return fmt.Sprintf("at most %d class-balanced test images", limit)
}

// MemoryAge is memory.Usage at the end of training: the rows' ages in steps,
// the ages of their features and how often they served as negatives (nil
// where undefined, e.g. for an empty memory).
type MemoryAge struct {
	AgeMean   *float64 `json:"age_mean,omitempty"`
	AgeMedian *float64 `json:"age_median,omitempty"`
	AgeMax    *float64 `json:"age_max,omitempty"`
	StaleMean *float64 `json:"stale_mean,omitempty"`
	StaleMax  *float64 `json:"stale_max,omitempty"`
	UsesMean  *float64 `json:"neg_uses_mean,omitempty"`
	UsesMax   *float64 `json:"neg_uses_max,omitempty"`
}

// Curve is a metric against the training step.
type Curve struct {
	Steps  []int     `json:"steps"`
	Values []float64 `json:"values"`
}

// Len returns the number of points.
func (c *Curve) Len() int { return len(c.Steps) }

func (c *Curve) add(step int, v *float64) {
	if v != nil {
		c.Steps = append(c.Steps, step)
		c.Values = append(c.Values, *v)
	}
}

// Curves are the metrics of metrics.jsonl the reports draw.
type Curves struct {
	KNNTop1            Curve `json:"knn_top1"`
	MemoryClassEntropy Curve `json:"memory_class_entropy"`
	MemoryAgeMean      Curve `json:"memory_age_mean"`
}

// readResult loads a saved probe.json.
func readResult(dir string) (*RunResult, error) {
	path := filepath.Join(dir, probeFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r RunResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to evaluate the run again)", path, err)
	}
	if r.Schema == 0 {
		r.Schema = 1 // written before the field existed
	}
	return &r, nil
}

// writeResult saves r as dir/probe.json, atomically.
func writeResult(dir string, r *RunResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, probeFile), err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, probeFile), append(b, '\n'))
}
