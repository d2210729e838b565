package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/memory/cudaduel"
	"github.com/duel-ssl/duel/internal/atomicfile"
	"github.com/duel-ssl/duel/internal/npy"
)

func memoryReplayCommand() *cli.Command {
	return &cli.Command{
		Name:  "replay",
		Usage: "replay a stream of feature rows through a memory policy",
		Description: "The first --size rows of --features fill the memory; each following full batch of\n" +
			"--batch rows goes through the policy; a trailing partial batch is ignored. Rows are\n" +
			"L2-normalised. --json prints {\"kept\": [sorted stream indices of the rows in the final\n" +
			"memory], \"class_entropy\": nats, \"class_counts\": [...], \"initial_score_by_class\": [...]\n" +
			"(null: no row of the class), \"updates\": N, \"update_ms_median\": ms, \"rejected_updates\": N,\n" +
			"and the settings: \"policy\", \"size\", \"batch\", \"admission\" (duel), \"seed\" (random,\n" +
			"reservoir), \"safe\", \"device\", \"features\", \"labels\"} (class_*, initial_* and labels only\n" +
			"with --labels); --out's replay.json holds the same object. --device cuda runs --policy\n" +
			"duel resident on the GPU (the same decisions as on the CPU; admissions protected and\n" +
			"compete).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "features", Usage: "N x Z float32 or float64 .npy file of feature rows (required)"},
			&cli.StringFlag{Name: "labels", DefaultText: "none: no class metrics", Usage: "N int32 or int64 .npy file of class labels >= 0, one per row of --features, for the class metrics only"},
			&cli.IntFlag{Name: "size", Required: true, DefaultText: "none", Usage: "memory size K, at least 1; --features must hold at least K + --batch rows, one update's (required)"},
			&cli.IntFlag{Name: "batch", Required: true, DefaultText: "none", Usage: "rows per update B, at least 1 (required)"},
			&cli.StringFlag{Name: "policy", Value: "duel", Usage: "memory policy: " + strings.Join(memory.PolicyNames(), ", ")},
			&cli.StringFlag{Name: "admission", Value: "protected", Usage: "duel only, the reading of the update order: protected (Appendix D, a new row cannot be evicted by its own batch), compete (Appendix D, MAX_SCORE = 0), insert-first (Algorithm 1 as printed: a newcomer may be rejected on arrival) or max-score (MAX_SCORE a large constant: one row replaced per batch, degenerate)"},
			&cli.Uint64Flag{Name: "seed", Value: 0, Usage: seedUsage(memory.SeededPolicyNames())},
			&cli.BoolFlag{Name: "safe", Usage: "safe update (Appendix C): keep the old memory when an update lowers its distinctiveness information"},
			&cli.StringFlag{Name: "out", Usage: "directory for kept.npy, class_frequency.png (with --labels; without, one left by an earlier replay is removed) and replay.json, written last; .replay.lock is held meanwhile: a second replay into it is refused (default: none, nothing written)"},
			deviceFlag,
			jsonFlag,
		},
		Action: runReplay,
	}
}

// seedUsage is the help of --seed: the policies that use it, from the
// memory package's registry (memory.SeededPolicyNames).
func seedUsage(seeded []string) string {
	switch len(seeded) {
	case 0:
		return "seed of the policy (no registered policy uses it)"
	case 1:
		return "seed of the " + seeded[0] + " policy (the others use none)"
	}
	return "seed of the " + strings.Join(seeded[:len(seeded)-1], ", ") + " and " + seeded[len(seeded)-1] + " policies (the others use none)"
}

// replayResult is the --json object (and replay.json).
type replayResult struct {
	Kept           []int64  `json:"kept"`
	ClassEntropy   *float64 `json:"class_entropy,omitempty"`
	ClassCounts    []int    `json:"class_counts,omitempty"`
	Updates        int      `json:"updates"`
	UpdateMsMedian float64  `json:"update_ms_median"`
	Rejected       int      `json:"rejected_updates"`
	// InitialScoreByClass is, per class, the mean DUEL score of the rows
	// that fill the memory, in standard deviations from the mean over all
	// rows (memory.ScoreByClass): how strongly DUEL's score singles out a
	// class before the first update (with --labels).
	InitialScoreByClass []*float64 `json:"initial_score_by_class,omitempty"`
	Policy              string     `json:"policy"`
	Size                int        `json:"size"`
	Batch               int        `json:"batch"`
	// Admission is the reading of the update order DUEL decided with
	// (--admission: protected, compete, insert-first or max-score); absent
	// for the other policies, which have none.
	Admission string `json:"admission,omitempty"`
	// Seed is --seed for the policies that draw from it
	// (memory.SeededPolicyNames); absent for the others, which ignore it.
	Seed *uint64 `json:"seed,omitempty"`
	// Safe is --safe: whether the safe update (Appendix C) could reject an
	// update.
	Safe bool `json:"safe"`
	// Device is --device: cpu or cuda.
	Device string `json:"device"`
	// Features is the --features file, as given.
	Features string `json:"features"`
	// Labels is the --labels file, as given; absent without --labels.
	Labels string `json:"labels,omitempty"`
}

func runReplay(c *cli.Context) error {
	device, err := computeDevice(c)
	if err != nil {
		return err
	}
	in, err := loadReplayInput(c)
	if err != nil {
		return err
	}
	if out := c.String("out"); out != "" {
		if err := checkOutDir("out", out); err != nil {
			return err // before the replay
		}
		release, err := lockOutputs(out, ".replay.lock", "memory replay")
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		defer release()
	}
	k, b := c.Int("size"), c.Int("batch")
	policy, err := replayPolicy(c, device)
	if err != nil {
		return err
	}
	if cl, ok := policy.(interface{ Close() error }); ok {
		defer cl.Close()
	}
	mem, err := memory.New(k, in.z, policy, memory.WithSafeUpdate(c.Bool("safe")))
	if err != nil {
		return fmt.Errorf("--size %d: %w", k, err)
	}
	ids := make([]int64, in.n)
	for i := range ids {
		ids[i] = int64(i)
	}
	labelsOf := func(lo, hi int) []int32 {
		if in.labels == nil {
			return nil
		}
		return in.labels[lo:hi]
	}
	if _, err := mem.Add(in.rows[:k*in.z], ids[:k], labelsOf(0, k), 0); err != nil {
		return fmt.Errorf("--features %s: %w", in.path, err)
	}
	res := replayResult{Policy: policy.Name(), Size: k, Batch: b, Safe: c.Bool("safe"), Device: device,
		Features: in.path, Labels: c.String("labels")}
	if a, ok := policy.(memory.Admitting); ok {
		res.Admission = a.AdmissionMode().String()
	}
	if slices.Contains(memory.SeededPolicyNames(), res.Policy) {
		seed := c.Uint64("seed")
		res.Seed = &seed
	}

	if in.labels != nil {
		sc, err := mem.ScoreByClass(in.classes)
		if err != nil {
			return fmt.Errorf("--labels: %w", err)
		}
		res.InitialScoreByClass = make([]*float64, len(sc))
		for i, v := range sc {
			if !math.IsNaN(v) { // NaN (null): no row of the class, or no spread to measure in
				res.InitialScoreByClass[i] = &sc[i]
			}
		}
	}
	updates := (in.n - k) / b
	bar := progressBar(c, updates, "replay")
	var times []float64
	freq := [][]int{replayClassCounts(mem, in.classes)}
	for u := 0; u < updates; u++ {
		lo, hi := k+u*b, k+(u+1)*b
		start := time.Now()
		st, err := mem.Add(in.rows[lo*in.z:hi*in.z], ids[lo:hi], labelsOf(lo, hi), u+1)
		times = append(times, time.Since(start).Seconds()*1e3)
		if err != nil {
			return fmt.Errorf("--features %s, rows %d..%d: %w", in.path, lo, hi-1, err)
		}
		if st.Rejected {
			res.Rejected++
		}
		if in.labels != nil {
			freq = append(freq, replayClassCounts(mem, in.classes))
		}
		if bar != nil {
			bar.Add(1)
		}
	}
	finishBar(bar)

	res.Kept = slices.Clone(mem.IDs())
	slices.Sort(res.Kept)
	res.Updates = updates
	if len(times) > 0 {
		res.UpdateMsMedian = median(times)
	}
	if in.labels != nil {
		h := mem.ClassEntropy()
		res.ClassEntropy = &h
		res.ClassCounts = freq[len(freq)-1]
	}
	w := c.App.Writer
	fmt.Fprintf(w, "replayed %d rows of %d values through %s (K=%d, B=%d): %d updates, median %.3f ms per update\n",
		in.n, in.z, policy.Name(), k, b, updates, res.UpdateMsMedian)
	if in.labels != nil {
		fmt.Fprintf(w, "memory class entropy %.4f nats (stream %.4f), class counts %v\n",
			*res.ClassEntropy, memory.Entropy(in.streamCounts), res.ClassCounts)
	}
	if res.InitialScoreByClass != nil {
		scores := make([]string, len(res.InitialScoreByClass))
		for i, v := range res.InitialScoreByClass {
			scores[i] = "n/a"
			if v != nil {
				scores[i] = fmt.Sprintf("%.2f", *v)
			}
		}
		fmt.Fprintf(w, "DUEL score of each class in the initial memory, in standard deviations from the mean (n/a: no row of the class, or no spread: fewer than 2 rows, or rows all alike): [%s]\n", strings.Join(scores, " "))
	}
	if res.Rejected > 0 {
		fmt.Fprintf(w, "safe update rejected %d of %d updates\n", res.Rejected, updates)
	}
	if out := c.String("out"); out != "" {
		if err := writeReplayOut(out, &res, freq, k, b); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", out)
	}
	return emitJSON(c, res)
}

// replayInput is the validated stream.
type replayInput struct {
	path         string
	rows         []float32 // n x z
	n, z         int
	labels       []int32 // nil without --labels
	classes      int     // max label + 1
	streamCounts []int
}

// loadReplayInput reads and checks --features and --labels against --size
// and --batch.
func loadReplayInput(c *cli.Context) (*replayInput, error) {
	path := c.String("features")
	if path == "" {
		return nil, flagError("features", `""`, "an N x Z .npy file of feature rows")
	}
	k, b := c.Int("size"), c.Int("batch")
	if k < 1 {
		return nil, flagError("size", k, "a memory size of at least 1")
	}
	if b < 1 {
		return nil, flagError("batch", b, "a batch size of at least 1")
	}
	arr, err := npy.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--features: %w", err)
	}
	rows, n, z, err := arr.Float32Matrix()
	if err != nil {
		return nil, fmt.Errorf("--features %s: %w", path, err)
	}
	if z < 1 {
		return nil, fmt.Errorf("--features %s: shape %v, expected rows of at least 1 value", path, arr.Shape)
	}
	if n < k {
		return nil, fmt.Errorf("--size %d: larger than the %d rows of %s, expected at most %d", k, n, path, n)
	}
	for r := 0; r < n; r++ {
		var ss float64
		for _, v := range rows[r*z : (r+1)*z] {
			ss += float64(v) * float64(v)
		}
		if math.IsNaN(ss) || math.IsInf(ss, 0) {
			return nil, fmt.Errorf("--features %s: row %d is not finite (NaN or Inf), expected finite values", path, r)
		}
		if ss == 0 {
			return nil, fmt.Errorf("--features %s: row %d is all zeros, expected rows with a non-zero norm (they are L2-normalised)", path, r)
		}
	}
	if n < k+b {
		return nil, fmt.Errorf("--size %d and --batch %d: %s holds %d rows, expected at least --size + --batch = %d (the memory's rows, then one update's): the replay would make no update", k, b, path, n, k+b)
	}
	in := &replayInput{path: path, rows: rows, n: n, z: z}
	// maxReplayClasses bounds the labels: the class counts are dense.
	const maxReplayClasses = 1 << 16
	if lp := c.String("labels"); lp != "" {
		la, err := npy.ReadFile(lp)
		if err != nil {
			return nil, fmt.Errorf("--labels: %w", err)
		}
		l64, err := la.Int64Vector()
		if err != nil {
			return nil, fmt.Errorf("--labels %s: %w", lp, err)
		}
		if len(l64) != n {
			return nil, fmt.Errorf("--labels %s: %d labels, expected one per row of %s (%d)", lp, len(l64), path, n)
		}
		in.labels = make([]int32, n)
		for i, l := range l64 {
			if l < 0 || l >= maxReplayClasses {
				return nil, fmt.Errorf("--labels %s: label %d at row %d, expected a class number in 0..%d", lp, l, i, maxReplayClasses-1)
			}
			in.labels[i] = int32(l)
			in.classes = max(in.classes, int(l)+1)
		}
		in.streamCounts = make([]int, in.classes)
		for _, l := range in.labels {
			in.streamCounts[l]++
		}
	}
	return in, nil
}

// replayPolicy builds the policy named by --policy, --admission and --seed
// on device: on "cuda", DUEL alone, resident on the GPU (cudaduel.Policy,
// the same decisions as the CPU's), with the admissions its kernel has.
func replayPolicy(c *cli.Context, device string) (memory.Policy, error) {
	name := c.String("policy")
	adm, err := memory.ParseAdmission(c.String("admission"))
	if err != nil {
		return nil, flagError("admission", fmt.Sprintf("%q", c.String("admission")), strings.Join(memory.AdmissionNames, ", "))
	}
	if device == "cuda" {
		if name != "duel" {
			return nil, fmt.Errorf("--device cuda: --policy %s runs on the CPU only (the GPU runs duel); use --device cpu", name)
		}
		if adm != memory.Protected && adm != memory.Compete {
			return nil, fmt.Errorf("--device cuda: --admission %s runs on the CPU only (the GPU kernel has protected and compete); use --device cpu", c.String("admission"))
		}
		dev, err := cuda.Default()
		if err != nil {
			return nil, fmt.Errorf("--device cuda: %w", err)
		}
		dev.LogSlowLoads(c.App.ErrWriter) // the first update's wait for the driver's compilation
		return cudaduel.NewPolicy(dev, adm), nil
	}
	if name == "duel" {
		return memory.NewDUEL(adm), nil
	}
	if c.IsSet("admission") {
		return nil, fmt.Errorf("--admission %s: applies to --policy duel only, got --policy %s", c.String("admission"), name)
	}
	p, err := memory.NewPolicy(name, c.Uint64("seed"))
	if err != nil {
		return nil, flagError("policy", fmt.Sprintf("%q", name), "one of "+strings.Join(memory.PolicyNames(), ", "))
	}
	return p, nil
}

// replayClassCounts returns the memory's class counts (nil without labels).
func replayClassCounts(m *memory.Memory, classes int) []int {
	if classes == 0 {
		return nil
	}
	counts, _ := m.ClassCounts(classes) // labels were checked < classes
	return counts
}

// replayPlotFile is the plot writeReplayOut draws with labels.
const replayPlotFile = "class_frequency.png"

// writeReplayOut writes kept.npy, class_frequency.png (with labels) and
// replay.json into dir, each atomically, replay.json last (removed
// first: a replay killed while writing leaves no description of another
// replay beside its files). Without labels it removes a
// class_frequency.png left by an earlier replay, which would otherwise
// stand beside results it does not describe.
func writeReplayOut(dir string, res *replayResult, freq [][]int, k, b int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := removeDescriptors(dir, "replay.json"); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	kept := &npy.Array{Shape: []int{len(res.Kept)}, Int64: res.Kept}
	if err := npy.WriteFile(filepath.Join(dir, "kept.npy"), kept); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	plot := filepath.Join(dir, replayPlotFile)
	if res.ClassCounts != nil {
		if err := replayPlotClassFrequency(plot, freq, k, b, res.Policy); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	} else if err := os.Remove(plot); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--out: removing %s, the plot of an earlier replay with --labels: %w", plot, err)
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, "replay.json"), res); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}
