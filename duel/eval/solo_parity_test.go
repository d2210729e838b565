package eval

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/loss"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// knnSoloFixture is testdata/knn_solo.json, written by gen_solo_fixtures.py.
type knnSoloFixture struct {
	Cases []struct {
		Name    string
		D       int
		Classes int
		XTrain  []float32 `json:"x_train"`
		YTrain  []int32   `json:"y_train"`
		XTest   []float32 `json:"x_test"`
		YTest   []int32   `json:"y_test"`
		Runs    []struct {
			K    int
			T    float64
			Vote string
			Ref  struct {
				Scores     []float64
				Pred       []int
				Top1, Top5 float64
			}
			Torch *struct {
				Pred       []int
				Top1, Top5 float64
				TieRows    []int `json:"tie_rows"`
			}
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestKNNMatchesSoloLearn compares KNN with the two transcriptions of
// gen_solo_fixtures.py on random clustered rows and on rows built to tie
// (duplicated training rows of different labels, a zero row, k beyond the
// training rows):
//
//   - numpy's (float64, equal similarities taken in row order, equal class
//     scores to the lower class: KNN's documented rules): the same class
//     scores (relative error 1e-5 at T = 0.07), the same prediction for
//     every test row, the same top-1 and top-5;
//   - solo-learn's WeightedKNNClassifier steps in PyTorch: the same
//     prediction on every row whose k neighbours do not depend on how
//     Tensor.topk orders equal similarities (on the random rows: all),
//     hence the same top-1 and top-5 there (both count top-5 over the
//     first min(5, k) classes).
func TestKNNMatchesSoloLearn(t *testing.T) {
	var fx knnSoloFixture
	readJSON(t, "testdata/knn_solo.json", &fx)
	if len(fx.Cases) != 2 {
		t.Fatalf("fixture has %d cases, expected 2", len(fx.Cases))
	}
	var worst float64
	tied := 0 // runs where Tensor.topk's order of equal similarities matters
	for _, c := range fx.Cases {
		train, err := NewFeatures(c.XTrain, c.YTrain, c.D)
		if err != nil {
			t.Fatal(err)
		}
		test, err := NewFeatures(c.XTest, c.YTest, c.D)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Runs {
			vote, err := ParseVote(r.Vote)
			if err != nil {
				t.Fatal(err)
			}
			cfg := KNNConfig{K: r.K, Temperature: r.T, Vote: vote, Classes: c.Classes}
			name := func() string { return c.Name + " " + r.Vote + " k=" + strconv.Itoa(r.K) }
			got := make([]float64, 0, test.N*c.Classes)
			if err := knnScores(train, test, cfg.withK(train.N), c.Classes, func(_ int, s []float64) {
				got = append(got, s...)
			}); err != nil {
				t.Fatal(err)
			}
			for i, w := range r.Ref.Scores {
				e := math.Abs(got[i]-w) / math.Max(w, 1)
				worst = math.Max(worst, e)
				if e > 1e-5 {
					t.Errorf("%s: row %d class %d: score %v, numpy %v", name(), i/c.Classes, i%c.Classes, got[i], w)
				}
			}
			pred, err := KNNPredict(train, test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pred, r.Ref.Pred) {
				t.Errorf("%s: predictions %v, numpy %v", name(), pred, r.Ref.Pred)
			}
			res, err := KNN(train, test, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.HasTop5 || math.Abs(res.Top1-r.Ref.Top1) > 1e-12 || math.Abs(res.Top5-r.Ref.Top5) > 1e-12 {
				t.Errorf("%s: top-1 %v top-5 %v (has %v), numpy %v %v", name(), res.Top1, res.Top5, res.HasTop5, r.Ref.Top1, r.Ref.Top5)
			}
			if r.Torch == nil {
				continue
			}
			for i, p := range r.Torch.Pred {
				if !slices.Contains(r.Torch.TieRows, i) && pred[i] != p {
					t.Errorf("%s: row %d predicted %d, solo-learn (torch) %d", name(), i, pred[i], p)
				}
			}
			if len(r.Torch.TieRows) == 0 {
				if res.Top1 != r.Torch.Top1 {
					t.Errorf("%s: top-1 %v, solo-learn (torch) %v", name(), res.Top1, r.Torch.Top1)
				}
				if res.Top5 != r.Torch.Top5 {
					t.Errorf("%s: top-5 %v, solo-learn (torch) %v", name(), res.Top5, r.Torch.Top5)
				}
			}
			if c.Name == "random" && len(r.Torch.TieRows) != 0 {
				t.Errorf("%s: the random rows tie (%v)", name(), r.Torch.TieRows)
			}
			if len(r.Torch.TieRows) != 0 {
				tied++
			}
		}
	}
	if tied == 0 {
		t.Error("no run of the fixture has neighbours chosen among equal similarities")
	}
	t.Logf("worst relative error of the class scores: %.2g; %d runs with neighbours among equal similarities", worst, tied)
}

// linearSoloFixture is testdata/linear_solo.json, written by
// gen_solo_fixtures.py.
type linearSoloFixture struct {
	N, D, Classes, Epochs, Batch int
	X                            []float32
	Y                            []int
	XTest                        []float32 `json:"x_test"`
	YTest                        []int32   `json:"y_test"`
	Weight0, Bias0               []float32
	Perms                        [][]int
	Variants                     map[string]struct {
		LR, Momentum float64
		WeightDecay  float64 `json:"weight_decay"`
		Milestones   []int
		EpochLR      []float64 `json:"epoch_lr"`
		Weight, Bias []float64
		EpochLoss    []float64 `json:"epoch_loss"`
		TestLogits   []float64 `json:"test_logits"`
		Top1         float64
	}
}

// TestSoloLinearOptimisationMatchesPyTorch runs solo-learn's linear
// evaluation optimisation (torch.optim.SGD with momentum 0.9 and no weight
// decay, MultiStepLR stepped per epoch; and a variant without momentum,
// with weight decay) with optim.SGD and optim.StepSchedule on fixed
// features, from the fixture's initial weights over its row orders, and
// compares the rates, losses, weights and test logits with PyTorch's.
// LinearProbe itself uses Adam at a constant rate (the paper's Appendix E,
// parity_test.go); this checks that the engine's pieces give solo-learn's
// optimisation on cached features (not its per-epoch augmentation of the
// training images).
func TestSoloLinearOptimisationMatchesPyTorch(t *testing.T) {
	var fx linearSoloFixture
	readJSON(t, "testdata/linear_solo.json", &fx)
	if len(fx.Variants) != 2 {
		t.Fatalf("fixture has %d variants, expected 2", len(fx.Variants))
	}
	for name, v := range fx.Variants {
		t.Run(name, func(t *testing.T) {
			lin := nn.NewLinear(fx.D, fx.Classes, true, rand.New(rand.NewPCG(1, 1)))
			copy(lin.Weight.Value.Data(), fx.Weight0)
			copy(lin.Bias.Value.Data(), fx.Bias0)
			opt, err := optim.NewSGD(nn.Parameters(lin), optim.SGDConfig{LR: v.LR, Momentum: v.Momentum, WeightDecay: v.WeightDecay})
			if err != nil {
				t.Fatal(err)
			}
			sched, err := optim.StepSchedule(v.LR, v.Milestones, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			var worst float64
			near := func(what string, got, want float64, tol float64) {
				e := math.Abs(got-want) / (1 + math.Abs(want))
				worst = math.Max(worst, e)
				if e > tol {
					t.Errorf("%s = %v, PyTorch %v", what, got, want)
				}
			}
			tp := autograd.NewTape()
			for e, perm := range fx.Perms {
				opt.SetLR(sched.LR(e))
				if math.Abs(opt.LR()-v.EpochLR[e]) > 1e-12*v.LR {
					t.Errorf("epoch %d: lr %v, MultiStepLR %v", e, opt.LR(), v.EpochLR[e])
				}
				var sum float64
				for s := 0; s < fx.N; s += fx.Batch {
					idx := perm[s:min(s+fx.Batch, fx.N)]
					xb := make([]float32, 0, len(idx)*fx.D)
					yb := make([]int, len(idx))
					for k, i := range idx {
						xb = append(xb, fx.X[i*fx.D:(i+1)*fx.D]...)
						yb[k] = fx.Y[i]
					}
					tp.Reset()
					l := loss.CrossEntropy(tp, lin.Forward(tp, autograd.Const(tensor.FromSlice(xb, len(idx), fx.D))), yb)
					tp.Backward(l)
					opt.Step()
					opt.ZeroGrad()
					sum += float64(l.Value.Item()) * float64(len(idx))
				}
				near("epoch loss", sum/float64(fx.N), v.EpochLoss[e], 1e-5)
			}
			for i, w := range v.Weight {
				near("weight", float64(lin.Weight.Value.Data()[i]), w, 1e-5)
			}
			for i, w := range v.Bias {
				near("bias", float64(lin.Bias.Value.Data()[i]), w, 1e-5)
			}
			test, err := NewFeatures(fx.XTest, fx.YTest, fx.D)
			if err != nil {
				t.Fatal(err)
			}
			logits := lin.Forward(nil, constOf(test)).Value.Contiguous().Data()
			for i, w := range v.TestLogits {
				near("test logit", float64(logits[i]), w, 1e-5)
			}
			if res, err := scoreLinear(lin, test, fx.N); err != nil || math.Abs(res.Top1-v.Top1) > 1e-6 {
				t.Errorf("top-1 %v (%v), PyTorch %v", res.Top1, err, v.Top1)
			}
			t.Logf("%s: worst relative error %.2g", name, worst)
		})
	}
}

// TestLinearProbeSGDMatchesPyTorch runs LinearProbe's own training loop
// with LinearSGD (solo-learn's recipe: momentum 0.9) on the fixture's
// "solo" variant, over its row orders, and compares with PyTorch's.
func TestLinearProbeSGDMatchesPyTorch(t *testing.T) {
	var fx linearSoloFixture
	readJSON(t, "testdata/linear_solo.json", &fx)
	v, ok := fx.Variants["solo"]
	if !ok || v.Momentum != soloMomentum || v.WeightDecay != 0 {
		t.Fatalf("fixture's solo variant: %+v", v)
	}
	labels := make([]int32, len(fx.Y))
	for i, y := range fx.Y {
		labels[i] = int32(y)
	}
	train, err := NewFeatures(fx.X, labels, fx.D)
	if err != nil {
		t.Fatal(err)
	}
	lin := nn.NewLinear(fx.D, fx.Classes, true, rand.New(rand.NewPCG(1, 1)))
	copy(lin.Weight.Value.Data(), fx.Weight0)
	copy(lin.Bias.Value.Data(), fx.Bias0)
	cfg := LinearConfig{Epochs: len(fx.Perms), Batch: fx.Batch, Optimizer: LinearSGD, LR: v.LR, Milestones: v.Milestones}
	var losses []float64
	cfg.Progress = func(_ int, l float64) { losses = append(losses, l) }
	e := 0
	if _, err := fitLinear(context.Background(), lin, train, cfg, func() []int { e++; return fx.Perms[e-1] }); err != nil {
		t.Fatal(err)
	}
	for i, l := range losses {
		if math.Abs(l-v.EpochLoss[i]) > 1e-5*(1+math.Abs(v.EpochLoss[i])) {
			t.Errorf("epoch %d loss %v, PyTorch %v", i, l, v.EpochLoss[i])
		}
	}
	for i, w := range v.Weight {
		if got := float64(lin.Weight.Value.Data()[i]); math.Abs(got-w) > 1e-5*(1+math.Abs(w)) {
			t.Fatalf("weight %d = %v, PyTorch %v", i, got, w)
		}
	}
	if m := SoloLinearConfig(); m.Optimizer != LinearSGD || m.LR != 0.1 || m.WeightDecay != 0 || !slices.Equal(m.milestones(), []int{60, 80}) {
		t.Errorf("SoloLinearConfig %+v, milestones %v", m, m.milestones())
	}
	for _, tc := range []struct {
		epochs int
		want   []int
	}{{100, []int{60, 80}}, {10, []int{6, 8}}, {2, []int{1}}, {1, []int{1}}, {0, []int{1}}} {
		if got := (LinearConfig{Epochs: tc.epochs}).milestones(); !slices.Equal(got, tc.want) {
			t.Errorf("%d epochs: milestones %v, want %v", tc.epochs, got, tc.want)
		}
	}
	for _, name := range LinearOptimizerNames {
		if o, err := ParseLinearOptimizer(name); err != nil || o.String() != name {
			t.Errorf("%s: %v %v", name, o, err)
		}
	}
	if _, err := ParseLinearOptimizer("lars"); err == nil {
		t.Error("lars accepted")
	}
}
