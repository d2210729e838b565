package resnet

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/internal/fixture"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

const (
	parityRtol = 1e-4
	parityAtol = 1e-6
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name         string
		depth, width int
		ok           bool
	}{
		{"resnet18", 18, 64, true},
		{"resnet50", 50, 64, true},
		{"resnet34-w16", 34, 16, true},
		{"resnet18-w16", 18, 16, true},
		{"resnet152-w8", 152, 8, true},
		{"resnet19", 0, 0, false},
		{"resnet18-w0", 0, 0, false},
		{"resnet18-w016", 0, 0, false},
		{"resnet18-wx", 0, 0, false},
		{"resnet18-w16-w16", 0, 0, false},
		{"vgg16", 0, 0, false},
		{"", 0, 0, false},
		{"resnet+18", 0, 0, false},
	} {
		d, w, err := ParseName(tc.name)
		if (err == nil) != tc.ok || d != tc.depth || w != tc.width {
			t.Errorf("ParseName(%q) = %d, %d, %v", tc.name, d, w, err)
		}
		if err != nil && !strings.Contains(err.Error(), "resnet18-w16") {
			t.Errorf("ParseName(%q): error %q does not list the valid names", tc.name, err)
		}
	}
	if _, err := New("resnet18", Options{NumClasses: -1}); err == nil {
		t.Error("New accepted NumClasses -1")
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"resnet18", "resnet50-w16", "resnet18-w", "resnet-w1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, w, err := ParseName(s)
		if err != nil {
			return
		}
		if _, ok := depths[d]; !ok || w < 1 || w > 4096 {
			t.Fatalf("ParseName(%q) = %d, %d", s, d, w)
		}
		if want := fmt.Sprintf("resnet%d", d); s != want && s != fmt.Sprintf("%s-w%d", want, w) {
			t.Fatalf("ParseName(%q) = %d, %d: not canonical", s, d, w)
		}
	})
}

// TestStructure compares state dict names, order and shapes and parameter
// counts of real-width networks with torchvision's.
func TestStructure(t *testing.T) {
	g, err := fixture.Load("../testdata", "resnet18-w8")
	if err != nil {
		t.Fatal(err)
	}
	for label, opts := range map[string]struct {
		arch string
		opts Options
	}{
		"resnet18":            {"resnet18", Options{NumClasses: 1000, ImageNetStem: true}},
		"resnet34":            {"resnet34", Options{NumClasses: 1000, ImageNetStem: true}},
		"resnet50":            {"resnet50", Options{NumClasses: 1000, ImageNetStem: true}},
		"resnet18-cifar10":    {"resnet18", Options{NumClasses: 10}},
		"resnet50-cifar-nofc": {"resnet50", Options{}},
	} {
		var want struct {
			State         [][2]json.RawMessage `json:"state"`
			NumParameters int                  `json:"num_parameters"`
		}
		if err := json.Unmarshal(g.Structure[label], &want); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		m, err := New(opts.arch, opts.opts)
		if err != nil {
			t.Fatal(err)
		}
		sd := m.StateDict()
		if len(sd) != len(want.State) {
			t.Errorf("%s: %d state entries, torchvision has %d", label, len(sd), len(want.State))
			continue
		}
		for i, e := range sd {
			var name string
			var shape []int
			json.Unmarshal(want.State[i][0], &name)
			json.Unmarshal(want.State[i][1], &shape)
			if e.Name != name || fmt.Sprint(e.Tensor.Shape()) != fmt.Sprint(shape) {
				t.Errorf("%s: entry %d is %s %v, torchvision has %s %v", label, i, e.Name, e.Tensor.Shape(), name, shape)
				break
			}
		}
		if n := nn.NumParameters(m); n != want.NumParameters {
			t.Errorf("%s: %d parameters, torchvision has %d", label, n, want.NumParameters)
		}
		if opts.opts.NumClasses == 0 && m.FeatureDim() != 2048 {
			t.Errorf("%s: FeatureDim %d", label, m.FeatureDim())
		}
	}
}

func TestResNetParity(t *testing.T) {
	for _, group := range []string{"resnet18-w8", "resnet50-w4", "resnet18-w4-imagenet"} {
		g, err := fixture.Load("../testdata", group)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range g.Cases {
			t.Run(c.Name(), func(t *testing.T) {
				classes := c.Int("classes")
				if classes == 0 {
					classes = 10
				}
				m, err := New(c.String("arch"), Options{NumClasses: classes, ImageNetStem: c.Bool("imagenet"), Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				checkParity(t, g, c, m)
			})
		}
	}
}

// checkParity runs case c on m and compares with the fixture.
func checkParity(t *testing.T, g *fixture.Group, c fixture.Case, m *ResNet) {
	name := c.Name()
	must := func(k string) *autograd.Var {
		v, err := g.Tensor(name + "/" + k)
		if err != nil {
			t.Fatal(err)
		}
		return autograd.NewVar(v, false)
	}
	sd, err := g.State(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadStateDict(sd, true); err != nil {
		t.Fatal(err)
	}
	m.Train(c.Training())
	x := must("x")
	x.RequiresGrad = true
	tp := autograd.NewTape()
	out := m.Forward(tp, x)
	if msg := fixture.Compare(out.Value, must("out").Value, parityRtol, parityAtol); msg != "" {
		t.Errorf("output: %s", msg)
	}
	tp.BackwardWith(out, must("gout").Value)
	if msg := fixture.Compare(x.Grad, must("grad.x").Value, parityRtol, parityAtol); msg != "" {
		t.Errorf("grad of input: %s", msg)
	}
	checked := 0
	for _, p := range m.NamedParameters() {
		k := "grad." + p.Name
		if !g.Has(name + "/" + k) {
			continue
		}
		checked++
		if msg := fixture.Compare(p.Var.Grad, must(k).Value, parityRtol, parityAtol); msg != "" {
			t.Errorf("grad of %s: %s", p.Name, msg)
		}
	}
	if checked < 10 {
		t.Errorf("only %d parameter gradients checked", checked)
	}
	if c.Training() {
		for _, b := range m.NamedBuffers() {
			if msg := fixture.Compare(b.Buffer.Tensor, must("after."+b.Name).Value, parityRtol, parityAtol); msg != "" {
				t.Errorf("buffer %s: %s", b.Name, msg)
			}
		}
	}
}

// TestArena checks that a network using an arena computes exactly what it
// computes without one, step after step (the recycled buffers' old
// contents never read), and stops allocating after the first step: on the
// CPU and on "hostlessfused" (the arena's device buffers).
func TestArena(t *testing.T) {
	for _, dev := range []tensor.Device{tensor.CPU, hostless.FusedDevice} {
		t.Run(string(dev), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 5))
			plain, _ := New("resnet18-w4", Options{NumClasses: 3, Seed: 9})
			pooled, _ := New("resnet18-w4", Options{NumClasses: 3, Seed: 9})
			if dev != tensor.CPU {
				toDevice(t, plain, dev)
				toDevice(t, pooled, dev)
			}
			a := nn.NewArena()
			pooled.UseArena(a)
			x, g := randOn(t, r, dev, 4, 3, 16, 16), randOn(t, r, dev, 4, 3)
			var allocs int
			for step := range 4 {
				a.Reset()
				var outs [2][]float32
				for k, m := range []*ResNet{plain, pooled} {
					in := autograd.NewVar(x, true)
					tp := autograd.NewTape()
					out := m.Forward(tp, in)
					tp.BackwardWith(out, g)
					outs[k] = append(hostless.HostData(t, out.Value), hostless.HostData(t, in.Grad)...)
					for _, p := range m.Parameters() {
						outs[k] = append(outs[k], hostless.HostData(t, p.Grad)...)
						p.Grad = nil
					}
				}
				for i := range outs[0] {
					if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
						t.Fatalf("step %d: value %d differs with the arena: %g vs %g", step, i, outs[1][i], outs[0][i])
					}
				}
				if step == 1 {
					allocs = a.Allocs()
				}
				if step > 1 && a.Allocs() != allocs {
					t.Errorf("step %d: arena allocated %d buffers, %d after step 1", step, a.Allocs(), allocs)
				}
			}
			if allocs == 0 {
				t.Error("the arena handed out no buffer")
			}
		})
	}
}

// TestFeatureDimOf checks that FeatureDimOf gives every depth's built
// model's FeatureDim, at several widths, and refuses an unknown name.
func TestFeatureDimOf(t *testing.T) {
	for depth := range depths {
		for _, w := range []string{"-w4", "-w16", ""} {
			name := fmt.Sprintf("resnet%d%s", depth, w)
			if w == "" && depth > 34 {
				continue // a full-width ResNet-50+ is slow to build for this
			}
			m, err := New(name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := FeatureDimOf(name); err != nil || got != m.FeatureDim() {
				t.Errorf("FeatureDimOf(%s) = %d, %v; the model's is %d", name, got, err, m.FeatureDim())
			}
		}
	}
	if _, err := FeatureDimOf("vit-b16"); err == nil {
		t.Error("FeatureDimOf(vit-b16): no error")
	}
}

// TestSizeOf: the sizes computed from the shapes are those of the built
// networks, and a ResNet-18's convolutions output 9600 x width values per
// 32 x 32 image with the CIFAR stem.
func TestSizeOf(t *testing.T) {
	for _, name := range []string{"resnet18-w4", "resnet34-w2", "resnet50-w4", "resnet101-w1", "resnet152-w1", "resnet18-w3"} {
		for _, stem := range []bool{false, true} {
			m, err := New(name, Options{ImageNetStem: stem})
			if err != nil {
				t.Fatal(err)
			}
			var params, buffers int64
			for _, p := range m.Parameters() {
				params += int64(p.Value.Numel())
			}
			for _, b := range m.NamedBuffers() {
				buffers += int64(b.Buffer.Tensor.Numel())
			}
			sz, err := SizeOf(name, stem, 32, 32)
			if err != nil {
				t.Fatal(err)
			}
			if sz.Params != params || sz.Buffers != buffers {
				t.Errorf("%s (imagenet stem %v): %d parameters and %d buffer values, built %d and %d", name, stem, sz.Params, sz.Buffers, params, buffers)
			}
		}
	}
	for _, w := range []int{4, 16, 64} {
		sz, err := SizeOf(fmt.Sprintf("resnet18-w%d", w), false, 32, 32)
		if err != nil {
			t.Fatal(err)
		}
		if sz.Activations != 9600*int64(w) {
			t.Errorf("resnet18-w%d: %d activations per image, expected %d", w, sz.Activations, 9600*w)
		}
	}
	if sz, _ := SizeOf("resnet18", false, 32, 32); sz.Params != 11168832 {
		t.Errorf("resnet18: %d parameters, torchvision's has 11168832 without fc", sz.Params)
	}
	if _, err := SizeOf("resnet19", false, 32, 32); err == nil {
		t.Error("resnet19 sized")
	}
}
