package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/nn/safetensors"
)

// writeSTL10 writes a small STL-10 binary set into dir: n train and n test
// images of 96x96x3 (channel-major, column-major planes, as the real files)
// with labels 1..10.
func writeSTL10(t *testing.T, dir string, n int) {
	t.Helper()
	const side, img = 96, 96 * 96 * 3
	for _, split := range []string{"train", "test"} {
		x := make([]byte, n*img)
		y := make([]byte, n)
		for i := 0; i < n; i++ {
			y[i] = byte(1 + i%10)
			for c := 0; c < 3; c++ {
				for p := 0; p < side*side; p++ {
					x[i*img+c*side*side+p] = byte((i*37 + c*91 + p*(1+i%10)) % 251)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(dir, split+"_X.bin"), x, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, split+"_y.bin"), y, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTrainPaperSTL10 trains two steps of the paper-stl10 preset (scaled
// down with flags) on STL-10 files the test writes, and checks what the
// preset is: torchvision's ImageNet stem, the 2-layer 512 projector with
// ReLU, and, for BYOL, heads of width 4096 with BatchNorm.
func TestTrainPaperSTL10(t *testing.T) {
	data := t.TempDir()
	writeSTL10(t, data, 20)
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runCLI("train", "--preset", "paper-stl10", "--method", "dmoco", "--data", data,
		"--arch", "resnet18-w4", "--batch", "8", "--bn-splits", "2", "--steps", "2", "--memory-size", "16",
		"--knn-every", "0", "--log-every", "1", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	cfg, err := train.ReadConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dataset != "stl10" || cfg.Stem != "imagenet" || cfg.ProjHidden != 512 || cfg.ProjDim != 512 || cfg.EMA != 0.9 || cfg.LR != 0.05 {
		t.Errorf("config %+v", cfg)
	}
	f, err := safetensors.Read(filepath.Join(out, train.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, shape := range map[string][]int{
		"conv1.weight":       {4, 3, 7, 7}, // ImageNet stem
		"projector.0.weight": {512, 32},    // 2-layer projector: Linear, ReLU, Linear
		"projector.2.weight": {512, 512},
	} {
		tn, ok := f.Get(name)
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if !slices.Equal(tn.Shape, shape) {
			t.Errorf("%s: shape %v, expected %v", name, tn.Shape, shape)
		}
	}
	var res struct{ Steps int }
	if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil || res.Steps != 2 {
		t.Errorf("result %q: %v", lastLine(stdout), err)
	}
	byol, err := train.Preset("paper-stl10", "byol")
	if err != nil {
		t.Fatal(err)
	}
	if byol.ProjHidden != 4096 || byol.PredHidden != 4096 || !byol.HeadBN || byol.Steps != 40000 {
		t.Errorf("paper-stl10 byol: %+v", byol)
	}
}
