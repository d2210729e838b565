package analysis

import (
	"fmt"
	"math"
	"strings"
)

// Report is the content of a run's report.md, written by duelctl analyze.
type Report struct {
	Run                           string // run directory
	Method, Dataset, Arch, Policy string // from the run's config ("" omitted)
	Step                          int    // checkpoint step analysed
	Layer                         string // features analysed: "backbone" or "projector"
	TestRows                      int    // test images whose features were analysed
	Cluster                       *ClusterStats
	ClassNames                    []string
	MemorySize                    int   // K, 0 without a memory
	MemoryCounts                  []int // rows of each class in memory; nil without a memory or labels
	MemoryNote                    string
	// StreamEntropy is the class entropy (nats) of the stream the run
	// trained on, the reference for the memory's (a FIFO queue matches it);
	// nil when unknown (a long-tailed subset's depends on the class sizes).
	StreamEntropy *float64
	// MemoryAge summarises the rows' ages and negative uses; nil without a
	// memory.
	MemoryAge   *MemoryAge
	LastLoss    *float64 // last logged training loss (of the steps up to Step)
	LoggedSteps int      // records of metrics.jsonl used: those of the steps up to Step
	// LoggedTotal is the number of records in metrics.jsonl when it is more
	// than LoggedSteps (the log goes on past the step analysed); else 0.
	LoggedTotal         int
	Figures             []Figure
	Notes               []string
	KNNTop1, LinearTop1 *float64 // when measured
}

// MemoryAge summarises how long the rows held have been in the memory
// (steps) and how often they served as negatives.
type MemoryAge struct {
	AgeMean   float64 `json:"age_mean"`
	AgeMedian float64 `json:"age_median"`
	AgeMax    float64 `json:"age_max"`
	UsesMean  float64 `json:"neg_uses_mean"`
	UsesMax   float64 `json:"neg_uses_max"`
}

// Figure is a plot written beside report.md.
type Figure struct {
	File, Caption string
}

// Markdown renders the report.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Analysis of %s\n\n", r.Run)
	for _, kv := range [][2]string{{"method", r.Method}, {"dataset", r.Dataset}, {"architecture", r.Arch}, {"memory policy", r.Policy}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "- %s: `%s`\n", kv[0], kv[1])
		}
	}
	fmt.Fprintf(&b, "- checkpoint step: %d\n", r.Step)
	if r.LoggedSteps > 0 {
		if r.LoggedTotal > r.LoggedSteps {
			fmt.Fprintf(&b, "- metrics.jsonl: %d of %d records (steps up to %d, the checkpoint's; the curves stop there too)", r.LoggedSteps, r.LoggedTotal, r.Step)
		} else {
			fmt.Fprintf(&b, "- metrics.jsonl: %d records", r.LoggedSteps)
		}
		if r.LastLoss != nil {
			fmt.Fprintf(&b, ", last loss %.4f", *r.LastLoss)
		}
		b.WriteString("\n")
	}
	if r.KNNTop1 != nil {
		fmt.Fprintf(&b, "- kNN top-1 (k=200, T=0.07): %.4f\n", *r.KNNTop1)
	}
	if r.LinearTop1 != nil {
		fmt.Fprintf(&b, "- linear probe top-1: %.4f\n", *r.LinearTop1)
	}

	b.WriteString("\n## Active memory\n\n")
	switch {
	case r.MemorySize == 0:
		note := r.MemoryNote
		if note == "" {
			note = "this method has no memory"
		}
		fmt.Fprintf(&b, "No memory metrics: %s.\n", note)
	case r.MemoryCounts == nil:
		note := r.MemoryNote
		if note == "" {
			note = "the memory rows carry no labels"
		}
		fmt.Fprintf(&b, "Memory of %d rows; no class metrics: %s.\n", r.MemorySize, note)
	default:
		total := 0
		for _, n := range r.MemoryCounts {
			total += n
		}
		h := ClassEntropy(r.MemoryCounts)
		stream := ""
		if r.StreamEntropy != nil {
			stream = fmt.Sprintf("the training stream's: %.4f, which a FIFO queue matches; ", *r.StreamEntropy)
		}
		fmt.Fprintf(&b, "Class entropy of the %d rows held (K = %d): **%.4f nats** (%suniform over %d classes: %.4f). "+
			"Higher means the memory keeps more diverse classes (the paper's Table 2).\n\n",
			total, r.MemorySize, h, stream, len(r.MemoryCounts), math.Log(float64(len(r.MemoryCounts))))
		b.WriteString("| class | rows | share |\n|---|---:|---:|\n")
		for c, n := range r.MemoryCounts {
			share := 0.0
			if total > 0 {
				share = float64(n) / float64(total)
			}
			fmt.Fprintf(&b, "| %s | %d | %.3f |\n", classLabel(c, r.ClassNames), n, share)
		}
	}
	if a := r.MemoryAge; a != nil && r.MemorySize > 0 {
		fmt.Fprintf(&b, "\nAge of the rows held at step %d: mean %.1f, median %.1f, oldest %.0f steps. "+
			"Drawn as negatives: %.1f steps per row on average, at most %.0f. "+
			"A FIFO queue of K rows fed B rows a step keeps no row longer than K/B steps; "+
			"rows much older than that were embedded by an older encoder.\n", r.Step, a.AgeMean, a.AgeMedian, a.AgeMax, a.UsesMean, a.UsesMax)
	}

	b.WriteString("\n## Latent space\n\n")
	if r.Cluster == nil {
		b.WriteString("Not measured.\n")
	} else {
		s := r.Cluster
		fmt.Fprintf(&b, "L2-normalised %s features of %d test images (Section 5, Eq. v-intra and d-inter; lower is better for both):\n\n", r.Layer, r.TestRows)
		fmt.Fprintf(&b, "- intra-class variance v̄_intra = 1/|C| Σ_c E[(r̄_cᵀ f(x) − 1)²]: **%.4f**\n", s.MeanIntraVariance)
		fmt.Fprintf(&b, "- inter-class similarity s̄_inter = 1/(|C|(|C|−1)) Σ_c Σ_{c'≠c} r̄_cᵀ r̄_c': **%.4f**\n\n", s.MeanInterSimilarity)
		b.WriteString("| class | test rows | intra-class variance | inter-class similarity |\n|---|---:|---:|---:|\n")
		for i, c := range s.Classes {
			fmt.Fprintf(&b, "| %s | %d | %.4f | %.4f |\n", classLabel(c, r.ClassNames), s.Counts[i], s.IntraVariance[i], s.InterSimilarity[i])
		}
	}

	if len(r.Figures) > 0 {
		b.WriteString("\n## Figures\n")
		for _, f := range r.Figures {
			fmt.Fprintf(&b, "\n### %s\n\n![%s](%s)\n", f.Caption, f.Caption, f.File)
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}
