package data

import "testing"

// TestLayouts: every dataset name but "folder" has a layout with the side
// of its images and a normalisation of 1 or 3 channels, and every layout
// is named in Names.
func TestLayouts(t *testing.T) {
	named := map[string]bool{}
	for _, name := range Names {
		named[name] = true
		side, ok := ImageSide(name)
		if name == "folder" {
			if ok || side != 0 {
				t.Errorf("ImageSide(folder) = %d, %v; want 0, false", side, ok)
			}
			continue
		}
		if !ok || side <= 0 {
			t.Errorf("ImageSide(%s) = %d, %v; want a side", name, side, ok)
		}
		mean, std, ok := NormStats(name)
		if !ok || len(mean) != len(std) || (len(mean) != 1 && len(mean) != 3) {
			t.Errorf("NormStats(%s) = %v, %v, %v; want 1 or 3 channels", name, mean, std, ok)
		}
	}
	for key, l := range layouts {
		if !named[key] || l.key != key {
			t.Errorf("layout %q (key %q) is not in Names %v", key, l.key, Names)
		}
	}
	for _, tc := range []struct {
		name string
		side int
	}{{"default", 32}, {"cifar10", 32}, {"cifar100", 32}, {"stl10", 96}, {"mnist", 28}, {"fashion-mnist", 28}} {
		if side, _ := ImageSide(tc.name); side != tc.side {
			t.Errorf("ImageSide(%s) = %d, want %d", tc.name, side, tc.side)
		}
	}
	if _, ok := ImageSide("nope"); ok {
		t.Error("ImageSide of an unknown name is ok")
	}
}
