package reproduce

import (
	"fmt"
	"math"
	"strings"
)

// kindTitles are the reports' titles.
var kindTitles = map[Kind]string{
	Table1:   "Table 1: linear probing under class imbalance",
	Table2:   "Table 2: the memory's class entropy and the clustering of the representations",
	Ablation: "Appendix F.3: negatives and ε of D-SimCLR",
}

// Markdown renders report.md: the title, the verdict (verdict.md), where
// the numbers come from (command, commit, CPU, date, wall time, settings),
// the kind's tables beside the paper's numbers, the plots and the runs.
func (r *Report) Markdown() string {
	var b strings.Builder
	g := r.Grid
	fmt.Fprintf(&b, "# %s (preset %s)\n\n", kindTitles[g.Kind], g.Name)
	if r.Verdict != "" {
		b.WriteString(r.Verdict + "\n\n")
	}
	r.header(&b)
	switch g.Kind {
	case Table1:
		r.top1Table(&b, "## Linear probing top-1 (%)")
		r.gainTable(&b)
		r.measureTable(&b, "## Memory class entropy at the end of training (nats)", "memory_class_entropy", 4, false)
	case Table2:
		r.measureTable(&b, "## Memory class entropy at the end of training (nats)", "memory_class_entropy", 4, true)
		r.measureTable(&b, "## Intra-class variance (lower is better)", "intra_class_variance", 4, false)
		r.measureTable(&b, "## Inter-class similarity (lower is better)", "inter_class_similarity", 4, false)
		fmt.Fprintf(&b, "Both measured as `duelctl analyze` does, on the L2-normalised projector features (backbone for a method without a projector) of %s.\n\n", clusterImages(g.ClusterLimit))
		r.ageTable(&b)
		r.top1Table(&b, "## Linear probing top-1 (%), for reference")
	case Ablation:
		r.ablationTable(&b)
	}
	r.plotsSection(&b)
	r.runsSection(&b)
	return b.String()
}

// header writes where the numbers come from.
func (r *Report) header(b *strings.Builder) {
	g, p := r.Grid, r.Provenance
	trainS, probeS := r.wallSeconds()
	runs := fmt.Sprintf("%d of %d finished", len(r.Runs), r.Planned)
	if len(r.Runs) < r.Planned {
		runs += " (partial: the numbers cover the finished runs; the grid runs seed-major, so early seeds are complete first)"
	}
	rows := [][]string{
		{"command", "`" + p.Command + "`"},
		{"commit", "`" + p.Commit + "`" + r.runCommits()},
		{"CPU", p.CPU},
		{"date", p.Date},
		{"runs", runs},
		{"wall time", fmt.Sprintf("%s (training %s + evaluation %s, summed over the runs)", duration(trainS+probeS), duration(trainS), duration(probeS))},
		{"settings", fmt.Sprintf("%s; %d seed(s); rho_max %s; %s", g.settings(), g.Seeds, floats(g.RhoMax), g.evaluation())},
		{"precision", r.precisions()},
	}
	if _, name, ok := paperDataset(r.dataset()); ok {
		if r.dataset() == "default" {
			name += " (ours: the embedded 5,000 + 1,000 image subset of CIFAR-10)"
		}
		rows = append(rows, []string{"paper's numbers", name})
	}
	for _, row := range rows {
		fmt.Fprintf(b, "- %s: %s\n", row[0], row[1])
	}
	fmt.Fprintf(b, "\n%s.\n\n", strings.TrimSuffix(g.Description, "."))
}

// precisions says what the grid asks for (its PrecisionTag) and which
// precisions its finished runs computed in, with their counts when they
// differ: "fp32 products (fp32 or tf32 convolutions); runs: products fp32,
// convolutions fp32 (3), products fp32, convolutions tf32 (1)".
func (r *Report) precisions() string {
	counts := map[string]int{}
	var order []string
	for _, x := range r.Runs {
		p := precisionText(x.Precision, x.ConvPrecision)
		if counts[p] == 0 {
			order = append(order, p)
		}
		counts[p]++
	}
	s := tagText(r.Grid.Precision)
	if len(order) == 1 {
		return s + "; runs: " + order[0]
	}
	parts := make([]string, len(order))
	for i, p := range order {
		parts[i] = fmt.Sprintf("%s (%d)", p, counts[p])
	}
	if len(parts) > 0 {
		s += "; runs: " + strings.Join(parts, ", ")
	}
	return s
}

// runCommits says which commits trained the runs, when a run's probe.json
// records another commit than the report's binary (or none): ", runs
// trained by `abc` (3), `def` (1), unrecorded (2)".
func (r *Report) runCommits() string {
	counts := map[string]int{}
	var order []string
	same := true
	for _, x := range r.Runs {
		c := "unrecorded"
		if x.Made != nil {
			c = "`" + x.Made.Commit + "`"
		}
		if c != "`"+r.Provenance.Commit+"`" {
			same = false
		}
		if counts[c] == 0 {
			order = append(order, c)
		}
		counts[c]++
	}
	if same {
		return ""
	}
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = fmt.Sprintf("%s (%d)", c, counts[c])
	}
	return " (this report); runs trained by " + strings.Join(parts, ", ")
}

// dataset returns the dataset of the grid's runs ("" when unknown).
func (r *Report) dataset() string {
	vs := r.Grid.variants()
	if len(vs) == 0 || len(r.Grid.RhoMax) == 0 {
		return ""
	}
	cfg, err := r.Grid.runConfig(vs[0], r.Grid.RhoMax[0], 0)
	if err != nil {
		return ""
	}
	return cfg.Dataset
}

// classes returns the number of classes of the grid's dataset, as the
// runs measured it (0 when unknown).
func (r *Report) classes() int {
	n := 0
	for _, x := range r.Runs {
		n = max(n, x.Classes)
	}
	return n
}

// ours formats a cell's mean ± std with scale, noting the seeds when
// fewer than the grid's.
func (r *Report) ours(s *Stat, scale float64, digits int) string {
	if s == nil {
		return ""
	}
	v := fmt.Sprintf("%.*f ± %.*f", digits, scale*s.Mean, digits, scale*s.Std)
	if s.N == 1 {
		v = fmt.Sprintf("%.*f", digits, scale*s.Mean) // no spread from one seed
	}
	if s.N < r.Grid.Seeds {
		v += fmt.Sprintf(" (n=%d)", s.N)
	}
	return v
}

// rhoHeads returns the column heads "ρmax R" and, with paper, "paper"
// after each.
func (r *Report) rhoHeads(first string, paper bool) []string {
	head := []string{first}
	for _, rho := range r.Grid.RhoMax {
		head = append(head, fmt.Sprintf("ρmax %g", rho))
		if paper {
			head = append(head, "paper")
		}
	}
	return head
}

// top1Table writes linear-probe top-1 per variant and ρmax beside Table 1.
func (r *Report) top1Table(b *strings.Builder, title string) {
	ds := r.dataset()
	_, paperName, paper := paperDataset(ds)
	fmt.Fprintf(b, "%s\n\nMean ± standard deviation over the seeds", title)
	if paper {
		fmt.Fprintf(b, "; paper: Table 1, %s (plain methods only)", paperName)
	}
	b.WriteString(".\n\n")
	var rows [][]string
	for _, v := range r.Grid.variants() {
		row, any := []string{v.String()}, false
		for _, rho := range r.Grid.RhoMax {
			s := ""
			if c, ok := r.cell(v.String(), rho); ok {
				s, any = r.ours(&Stat{c.Top1Mean, c.Top1Std, c.Seeds}, 100, 2), true
			}
			row = append(row, s)
			if paper {
				p, ok := paperTop1(ds, v, rho)
				row = append(row, cond(ok, p.String()))
			}
		}
		if any {
			rows = append(rows, row)
		}
	}
	mdTable(b, r.rhoHeads("method", paper), rows)
}

// duelBase maps a DUEL method to the method it adds the DUEL memory to.
var duelBase = map[string]string{"dmoco": "moco", "dsimclr": "simclr"}

// gainTable writes each DUEL variant's top-1 minus its base method's,
// paired by seed, beside the paper's difference.
func (r *Report) gainTable(b *strings.Builder) {
	ds := r.dataset()
	_, _, paper := paperDataset(ds)
	var rows [][]string
	for _, v := range r.Grid.variants() {
		base, ok := duelBase[v.Method]
		if !ok || r.Grid.variantIndex(base) < 0 {
			continue
		}
		row, any := []string{v.String() + " − " + base}, false
		for _, rho := range r.Grid.RhoMax {
			d := r.pairedGain(v.String(), base, rho)
			if d != nil {
				any = true
			}
			s := ""
			if d != nil {
				s = fmt.Sprintf("%+.2f ± %.2f", 100*d.Mean, 100*d.Std)
				if d.N == 1 {
					s = fmt.Sprintf("%+.2f", 100*d.Mean)
				}
				if d.N < r.Grid.Seeds {
					s += fmt.Sprintf(" (n=%d)", d.N)
				}
			}
			row = append(row, s)
			if paper {
				pv, okV := paperTop1(ds, v, rho)
				pb, okB := paperTop1(ds, Variant{Method: base}, rho)
				row = append(row, cond(okV && okB, fmt.Sprintf("%+.2f", pv.Mean-pb.Mean)))
			}
		}
		if any {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## DUEL minus its base method (top-1, percentage points)\n\n" +
		"Ours: the difference of the two runs of each seed, mean ± standard deviation over the seeds; paper: the difference of Table 1's means.\n\n")
	mdTable(b, r.rhoHeads("difference", paper), rows)
}

// pairedGain returns the statistics over the seeds of top-1(variant) −
// top-1(base) at rho, from the seeds both have (nil when none).
func (r *Report) pairedGain(variant, base string, rho float64) *Stat {
	bases := r.runsOf(base, rho)
	var d []float64
	for _, x := range r.runsOf(variant, rho) {
		for _, y := range bases {
			if x.Seed == y.Seed {
				d = append(d, x.Top1-y.Top1)
			}
		}
	}
	if len(d) == 0 {
		return nil
	}
	m, s := meanStd(d)
	return &Stat{m, s, len(d)}
}

// variantIndex returns the index of the variant spec among the grid's, or -1.
func (g *Grid) variantIndex(spec string) int {
	for i, v := range g.variants() {
		if v.String() == spec {
			return i
		}
	}
	return -1
}

// measureTable writes one of Table 2's measures per variant and ρmax beside
// the paper's; with stream, a first row gives the class entropy of the
// training stream itself.
func (r *Report) measureTable(b *strings.Builder, title, measure string, digits int, stream bool) {
	ds := r.dataset()
	key, paperName, paper := paperDataset(ds)
	paper = paper && key == "cifar10" && r.Grid.Kind == Table2
	var rows [][]string
	for _, v := range r.Grid.variants() {
		row, any := []string{v.String()}, false
		for _, rho := range r.Grid.RhoMax {
			s := ""
			if c, ok := r.cell(v.String(), rho); ok {
				if st := c.measure(measure); st != nil {
					s, any = r.ours(st, 1, digits), true
				}
			}
			row = append(row, s)
			if paper {
				p, ok := paperT2(ds, measure, v, rho)
				row = append(row, cond(ok, fmt.Sprintf("%.4f", p)))
			}
		}
		if any {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "%s\n\nMean ± standard deviation over the seeds", title)
	if paper {
		fmt.Fprintf(b, "; paper: Table 2, %s (plain methods only)", paperName)
	}
	b.WriteString(".\n\n")
	c := r.classes()
	stream = stream && c > 1
	if stream {
		row := []string{"stream (the sampler's classes)"}
		for _, rho := range r.Grid.RhoMax {
			row = append(row, fmt.Sprintf("%.4f", streamEntropy(rho, c)))
			if paper {
				row = append(row, "")
			}
		}
		rows = append([][]string{row}, rows...)
	}
	mdTable(b, r.rhoHeads("method", paper), rows)
	if stream {
		fmt.Fprintf(b, "The stream row is the entropy of the class distribution the sampler draws from, −ρ log ρ − (1−ρ) log((1−ρ)/(C−1)) with C = %d classes; a memory holding every class equally has log C = %.4f.\n\n", c, math.Log(float64(c)))
	}
}

// measure returns the cell's statistics of a Table 2 measure.
func (c Cell) measure(name string) *Stat {
	switch name {
	case "memory_class_entropy":
		return c.MemoryClassEntropy
	case "intra_class_variance":
		return c.IntraClassVariance
	case "inter_class_similarity":
		return c.InterClassSimilarity
	}
	return nil
}

// streamEntropy is the entropy (nats) of the dominant-class distribution:
// probability rho for one class, (1−rho)/(classes−1) for each other.
func streamEntropy(rho float64, classes int) float64 {
	h := 0.0
	if rho > 0 {
		h -= rho * math.Log(rho)
	}
	if rho < 1 && classes > 1 {
		h -= (1 - rho) * math.Log((1-rho)/float64(classes-1))
	}
	return h
}

// ageTable writes the memory's row ages at the end of training.
func (r *Report) ageTable(b *strings.Builder) {
	var rows [][]string
	for _, v := range r.Grid.variants() {
		row, any := []string{v.String()}, false
		for _, rho := range r.Grid.RhoMax {
			runs := r.runsOf(v.String(), rho)
			mean := stat(runs, func(x *RunResult) *float64 { return ageField(x, func(a *MemoryAge) *float64 { return a.AgeMean }) })
			mx := stat(runs, func(x *RunResult) *float64 { return ageField(x, func(a *MemoryAge) *float64 { return a.AgeMax }) })
			s := ""
			if mean != nil && mx != nil {
				s, any = fmt.Sprintf("%.0f / %.0f", mean.Mean, mx.Mean), true
			}
			row = append(row, s)
		}
		if any {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Memory row age at the end of training (steps)\n\nMean age / oldest row, each averaged over the seeds (memory.Usage).\n\n")
	mdTable(b, r.rhoHeads("method", false), rows)
}

// ageField returns a field of the run's memory ages (nil without them).
func ageField(x *RunResult, f func(*MemoryAge) *float64) *float64 {
	if x.MemoryAge == nil {
		return nil
	}
	return f(x.MemoryAge)
}

// ablationTable writes linear-probe top-1 per variant beside Appendix F.3.
func (r *Report) ablationTable(b *strings.Builder) {
	ds := r.dataset()
	_, _, paper := paperDataset(ds)
	b.WriteString("## Linear probing top-1 (%)\n\nMean ± standard deviation over the seeds; paper: Appendix F.3, CIFAR-10 (variants whose only settings are negatives and eps, matched on the effective negatives and ε).\n\n")
	head := []string{"variant", "negatives", "ε", "paper's row"}
	for _, rho := range r.Grid.RhoMax {
		head = append(head, fmt.Sprintf("ρmax %g", rho))
		if paper {
			head = append(head, "paper")
		}
	}
	var rows [][]string
	for _, v := range r.Grid.variants() {
		cfg, err := r.Grid.runConfig(v, r.Grid.RhoMax[0], 0)
		if err != nil {
			continue
		}
		f3, matched := paperF3Row(ds, v, cfg.Negatives, cfg.Eps)
		row := []string{v.String(), cfg.Negatives, fmt.Sprintf("%g", cfg.Eps), cond(matched, f3.Label)}
		any := false
		for _, rho := range r.Grid.RhoMax {
			s := ""
			if c, ok := r.cell(v.String(), rho); ok {
				s, any = r.ours(&Stat{c.Top1Mean, c.Top1Std, c.Seeds}, 100, 2), true
			}
			row = append(row, s)
			if paper {
				p, ok := f3.top1(rho)
				row = append(row, cond(matched && ok, p.String()))
			}
		}
		if any {
			rows = append(rows, row)
		}
	}
	mdTable(b, head, rows)
}

// plotsSection lists the plots.
func (r *Report) plotsSection(b *strings.Builder) {
	if len(r.Plots) == 0 {
		return
	}
	b.WriteString("## Plots\n\n")
	for _, p := range r.Plots {
		fmt.Fprintf(b, "- `%s`: %s\n\n  ![%s](%s)\n\n", p.File, p.Caption, p.File, p.File)
	}
}

// runsSection lists every finished run.
func (r *Report) runsSection(b *strings.Builder) {
	b.WriteString("## Runs\n\nEach in `runs/<run>` of the output directory, its evaluation in `probe.json`; " +
		"the settings and evaluation of each are also in `runs/<run>/` beside this report " +
		"(copy that folder to OUT/runs to go on with the grid elsewhere).\n\n")
	var rows [][]string
	for _, x := range r.Runs {
		rows = append(rows, []string{
			runName(mustVariant(x.Variant, x.Method), x.RhoMax, x.Seed) + tagSuffix(r.Grid.Precision), fmt.Sprint(x.Steps), fmt.Sprintf("%.2f", 100*x.Top1),
			optional(x.MemoryClassEntropy, 4), optional(x.IntraClassVariance, 4), optional(x.InterClassSimilarity, 4),
			fmt.Sprintf("%.0f", x.TrainSeconds), fmt.Sprintf("%.0f", x.ProbeSeconds),
		})
	}
	mdTable(b, []string{"run", "steps", "top-1 (%)", "memory H (nats)", "intra-class var.", "inter-class sim.", "train s", "eval s"}, rows)
}

// mustVariant parses a run's variant spec, falling back to the plain method.
func mustVariant(spec, method string) Variant {
	if v, err := ParseVariant(spec); err == nil {
		return v
	}
	return Variant{Method: method}
}

// mdTable writes a Markdown table.
func mdTable(b *strings.Builder, head []string, rows [][]string) {
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n")
}

// cond returns s when ok, else "".
func cond(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// optional formats *v with digits decimals, "" for nil.
func optional(v *float64, digits int) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%.*f", digits, *v)
}

// floats formats a list of numbers as {a, b, c}.
func floats(x []float64) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprintf("%g", v)
	}
	return "{" + strings.Join(s, ", ") + "}"
}

// duration formats seconds as "1 h 05 min", "12 min 30 s" or "42 s".
func duration(sec float64) string {
	s := int(math.Round(sec))
	switch {
	case s >= 3600:
		return fmt.Sprintf("%d h %02d min", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	}
	return fmt.Sprintf("%d s", s)
}
