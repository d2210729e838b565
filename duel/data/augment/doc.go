// Package augment implements the image augmentations of the SSL recipes with
// torchvision's semantics: RandomResizedCrop, RandomHorizontalFlip,
// ColorJitter (inside RandomApply), RandomGrayscale, GaussianBlur and
// Normalize, plus the paper's, MoCoV2's and SimCLR's presets.
//
// Images come in as uint8 HWC and leave as normalised float32 CHW. In
// between, the work happens on a planar float32 Image in [0, 1], exactly as
// torchvision's functional ops on float tensors. Differences from the usual
// torchvision recipe (which runs the transforms on PIL images and converts to
// a tensor at the end) are documented in docs/data.md: values are not rounded
// to uint8 between ops, resizing is bilinear without antialiasing (the
// default of torchvision 0.14's resize on tensors, antialias=None; the crops
// of a 32x32 image are upscaled, where antialiasing does nothing), the ops
// run in one fixed order (crop, flip, jitter, grayscale, blur, normalise;
// inside ColorJitter the four colour ops still run in a random order drawn
// per view, as torchvision's) and random numbers come from a per-view
// splitmix.RNG, not torch's generator.
//
// parity_test.go checks every op, and whole views of the presets, against
// torchvision 0.14.1's outputs (testdata/, written by gen_fixtures.py), and
// the random draws against torchvision's in distribution (draws_test.go).
package augment
