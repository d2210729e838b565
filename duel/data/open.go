package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/duel-ssl/duel/duel/data/embedded"
)

// Names lists the dataset names Open accepts.
var Names = []string{"default", "cifar10", "cifar100", "stl10", "mnist", "fashion-mnist", "folder"}

// DefaultDir returns the default cache root, os.UserCacheDir()/duel. Each
// dataset lives in a sub-directory named after it.
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory (use --data DIR): %w", err)
	}
	return filepath.Join(d, "duel"), nil
}

// Open loads the train (train = true) or test split of a dataset.
//
// name is one of Names. "default" is the CIFAR-10 subset embedded in the
// binary and ignores dir. For the others dir is the dataset directory or a
// cache root holding it as a sub-directory named after the dataset (plus the
// usual archive sub-directories such as cifar-10-batches-bin); an empty dir
// means DefaultDir(). For "folder", dir is the image folder laid out as
// FolderLayouts says: its train/ and test/ (or val/) sub-directories, or dir
// itself as the train split; both splits number the classes by the sorted
// union of their class folders.
func Open(name, dir string, train bool) (*Dataset, error) {
	split := "test"
	if train {
		split = "train"
	}
	var d *Dataset
	var err error
	if name == "default" {
		d, err = openDefault(train)
	} else if name == "folder" {
		d, err = openFolder(dir, train)
	} else {
		l, ok := layouts[name]
		if !ok {
			return nil, fmt.Errorf("unknown dataset %q, expected one of %v", name, Names)
		}
		if dir == "" {
			if dir, err = DefaultDir(); err != nil {
				return nil, err
			}
		}
		d, err = l.find(dir, train)
	}
	if err != nil {
		return nil, err
	}
	d.Name, d.Split = name, split
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// layout describes a dataset: where its files are, how to read them, the
// side of its square images and its conventional normalisation. Adding a
// dataset is an entry here, its name in Names, its reader and its class
// names (docs/data.md, "Adding a dataset").
type layout struct {
	key     string // the name Open takes
	name    string
	subdirs []string // candidate sub-directories of a cache root, in order
	markers []string // a file any of which shows the directory holds the data
	read    func(dir string, train bool) (*Dataset, error)
	side    int // height and width of the images
	// mean and std are the per-channel normalisation (NormStats), values
	// in [0, 1]; nil to compute them from the training split.
	mean, std []float32
}

// idxSide is the side of MNIST's and Fashion-MNIST's images (an IDX file
// states its own, which Open reads).
const idxSide = 28

var layouts = map[string]*layout{
	"cifar10": {key: "cifar10", name: "CIFAR-10", subdirs: []string{"cifar10", "cifar-10-batches-bin", "cifar10/cifar-10-batches-bin", "package"}, markers: []string{"data_batch_1.bin", "data_batch_1.png"}, read: openCIFAR10,
		side: cifarSide, mean: []float32{0.4914, 0.4822, 0.4465}, std: []float32{0.2470, 0.2435, 0.2616}},
	"cifar100": {key: "cifar100", name: "CIFAR-100", subdirs: []string{"cifar100", "cifar-100-binary", "cifar100/cifar-100-binary"}, markers: []string{"train.bin"}, read: openCIFAR100,
		side: cifarSide, mean: []float32{0.5071, 0.4865, 0.4409}, std: []float32{0.2673, 0.2564, 0.2762}},
	"stl10": {key: "stl10", name: "STL-10", subdirs: []string{"stl10", "stl10_binary", "stl10/stl10_binary"}, markers: []string{"train_X.bin"}, read: openSTL10,
		side: stlSide, mean: []float32{0.4467, 0.4398, 0.4066}, std: []float32{0.2603, 0.2566, 0.2713}},
	"mnist": {key: "mnist", name: "MNIST", subdirs: []string{"mnist", "data", "mnist/data"}, markers: []string{"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"},
		read: func(d string, t bool) (*Dataset, error) { return openIDX(d, t, mnistClasses) },
		side: idxSide, mean: []float32{0.1307}, std: []float32{0.3081}},
	"fashion-mnist": {key: "fashion-mnist", name: "Fashion-MNIST", subdirs: []string{"fashion-mnist", "fashion-mnist/usr/share/datasets/fashion-mnist"}, markers: []string{"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"},
		read: func(d string, t bool) (*Dataset, error) { return openIDX(d, t, fashionClasses) },
		side: idxSide, mean: []float32{0.2860}, std: []float32{0.3530}},
}

// layoutOf returns the layout of a dataset name; "default", the embedded
// CIFAR-10 subset, has CIFAR-10's.
func layoutOf(name string) (*layout, bool) {
	if name == "default" {
		name = "cifar10"
	}
	l, ok := layouts[name]
	return l, ok
}

// ImageSide returns the height and width of a known dataset's images, and
// false for an image folder (known once read) or an unknown name.
func ImageSide(name string) (int, bool) {
	if l, ok := layoutOf(name); ok {
		return l.side, true
	}
	return 0, false
}

// find locates the directory holding the data under root and reads it.
func (l *layout) find(root string, train bool) (*Dataset, error) {
	for _, d := range append([]string{"."}, l.subdirs...) {
		dir := filepath.Join(root, d)
		for _, m := range l.markers {
			if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
				return l.read(dir, train)
			}
		}
	}
	hint := "download it and pass --data DIR"
	if _, ok := fetchSpecs[l.key]; ok {
		hint = fmt.Sprintf("run `duelctl data fetch %s` or pass --data DIR", l.key)
	}
	return nil, fmt.Errorf("no %s files in %s (looked for %v there and in %v); %s",
		l.name, root, l.markers, l.subdirs, hint)
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// firstExisting returns the first of the names under dir that exists.
func firstExisting(dir string, names ...string) (string, error) {
	for _, n := range names {
		if p := filepath.Join(dir, n); exists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("missing file: none of %v in %s", names, dir)
}

// openCIFAR10 reads CIFAR-10 from binary batches, or else from tfjs PNG
// strips; the batches are decoded in parallel.
func openCIFAR10(dir string, train bool) (*Dataset, error) {
	batches := []string{"test_batch"}
	if train {
		batches = []string{"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"}
	}
	d := &Dataset{H: cifarSide, W: cifarSide, C: 3, Classes: cifar10Classes}
	pix := make([][]uint8, len(batches))
	labs := make([][]int32, len(batches))
	errs := make([]error, len(batches))
	usePNG := !exists(filepath.Join(dir, "data_batch_1.bin"))
	var pngLabels []int32
	if usePNG {
		lf := "test_lables.json"
		if train {
			lf = "train_lables.json"
		}
		p, err := firstExisting(dir, lf, map[string]string{"test_lables.json": "test_labels.json", "train_lables.json": "train_labels.json"}[lf])
		if err != nil {
			return nil, fmt.Errorf("CIFAR-10 PNG strips: %w", err)
		}
		b, err := readFile(p)
		if err != nil {
			return nil, err
		}
		if pngLabels, err = ParseLabelsJSON(b, p, 10); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	for i, name := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ext := ".bin"
			if usePNG {
				ext = ".png"
			}
			path := filepath.Join(dir, name+ext)
			b, err := readFile(path)
			if err != nil {
				errs[i] = err
				return
			}
			if usePNG {
				pix[i], _, errs[i] = ParseTFJSStrip(b, path)
			} else {
				pix[i], labs[i], errs[i] = ParseCIFAR10(b, path)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range batches {
		d.Pixels = append(d.Pixels, pix[i]...)
		d.Labels = append(d.Labels, labs[i]...)
	}
	if usePNG {
		n := len(d.Pixels) / cifarImage
		if len(pngLabels) != n {
			return nil, fmt.Errorf("CIFAR-10 in %s: the PNG strips hold %d images but the label file has %d labels, expected equal counts", dir, n, len(pngLabels))
		}
		d.Labels = pngLabels
	}
	return d, nil
}

// openCIFAR100 reads CIFAR-100's train.bin or test.bin with the fine labels.
func openCIFAR100(dir string, train bool) (*Dataset, error) {
	path := filepath.Join(dir, "test.bin")
	if train {
		path = filepath.Join(dir, "train.bin")
	}
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	pix, labels, err := ParseCIFAR100(b, path, true)
	if err != nil {
		return nil, err
	}
	return &Dataset{H: cifarSide, W: cifarSide, C: 3, Pixels: pix, Labels: labels, Classes: cifar100Fine}, nil
}

// openSTL10 reads STL-10's labelled train or test split.
func openSTL10(dir string, train bool) (*Dataset, error) {
	prefix := "test"
	if train {
		prefix = "train"
	}
	xp, yp := filepath.Join(dir, prefix+"_X.bin"), filepath.Join(dir, prefix+"_y.bin")
	xb, err := readFile(xp)
	if err != nil {
		return nil, err
	}
	yb, err := readFile(yp)
	if err != nil {
		return nil, err
	}
	pix, n, err := ParseSTL10Images(xb, xp)
	if err != nil {
		return nil, err
	}
	labels, err := ParseSTL10Labels(yb, yp)
	if err != nil {
		return nil, err
	}
	if len(labels) != n {
		return nil, fmt.Errorf("%s has %d images but %s has %d labels, expected equal counts", xp, n, yp, len(labels))
	}
	return &Dataset{H: stlSide, W: stlSide, C: 3, Pixels: pix, Labels: labels, Classes: stl10Classes}, nil
}

// openIDX reads an MNIST-style pair of IDX files, plain or gzip.
func openIDX(dir string, train bool, classes []string) (*Dataset, error) {
	prefix := "t10k"
	if train {
		prefix = "train"
	}
	xp, err := firstExisting(dir, prefix+"-images-idx3-ubyte", prefix+"-images-idx3-ubyte.gz", prefix+"-images.idx3-ubyte")
	if err != nil {
		return nil, err
	}
	yp, err := firstExisting(dir, prefix+"-labels-idx1-ubyte", prefix+"-labels-idx1-ubyte.gz", prefix+"-labels.idx1-ubyte")
	if err != nil {
		return nil, err
	}
	xb, err := readFile(xp)
	if err != nil {
		return nil, err
	}
	yb, err := readFile(yp)
	if err != nil {
		return nil, err
	}
	x, err := ParseIDX(xb, xp)
	if err != nil {
		return nil, err
	}
	y, err := ParseIDX(yb, yp)
	if err != nil {
		return nil, err
	}
	pix, labels, h, w, err := idxImages(x, y, xp, yp, len(classes))
	if err != nil {
		return nil, err
	}
	return &Dataset{H: h, W: w, C: 1, Pixels: pix, Labels: labels, Classes: classes}, nil
}

// openFolder reads a split of an image folder laid out as FolderLayouts
// says, with the class list of the whole dataset.
func openFolder(dir string, train bool) (*Dataset, error) {
	if dir == "" {
		return nil, fmt.Errorf("dataset folder needs --data DIR, %s", folderExpected)
	}
	trainDir, testDir, classes, err := folderSplits(dir)
	if err != nil {
		return nil, err
	}
	if train {
		return loadFolder(trainDir, classes, 0)
	}
	if testDir == "" {
		return nil, fmt.Errorf("image folder %s has no test/ or val/ sub-directory for the test split, expected DIR/train/CLASS/*.png with DIR/test/CLASS/*.png (or DIR/val/CLASS/*.png)", dir)
	}
	return loadFolder(testDir, classes, 0)
}

// openDefault decodes the CIFAR-10 subset embedded in the binary.
func openDefault(train bool) (*Dataset, error) {
	if !embedded.Included {
		return nil, fmt.Errorf("this binary was built with the tag duel_noembed, without the embedded CIFAR-10 subset; use --data with a fetched dataset (duelctl data fetch) or a binary built without the tag")
	}
	strip, labelsJSON, file := embedded.TestPNG, embedded.TestLabels, "embedded test_batch.png"
	if train {
		strip, labelsJSON, file = embedded.TrainPNG, embedded.TrainLabels, "embedded data_batch.png"
	}
	pix, n, err := ParseTFJSStrip(strip, file)
	if err != nil {
		return nil, err
	}
	labels, err := ParseLabelsJSON(labelsJSON, file+" labels", 10)
	if err != nil {
		return nil, err
	}
	if len(labels) != n {
		return nil, fmt.Errorf("%s: %d images but %d labels", file, n, len(labels))
	}
	return &Dataset{H: cifarSide, W: cifarSide, C: 3, Pixels: pix, Labels: labels, Classes: cifar10Classes}, nil
}
