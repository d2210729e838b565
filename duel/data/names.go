package data

import "slices"

// Class names of the known datasets, in label order.
var (
	cifar10Classes = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}
	stl10Classes   = []string{"airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"}
	mnistClasses   = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	fashionClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	cifar100Fine   = []string{
		"apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle",
		"bowl", "boy", "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle",
		"chair", "chimpanzee", "clock", "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur",
		"dolphin", "elephant", "flatfish", "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard",
		"lamp", "lawn_mower", "leopard", "lion", "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain",
		"mouse", "mushroom", "oak_tree", "orange", "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree",
		"plain", "plate", "poppy", "porcupine", "possum", "rabbit", "raccoon", "ray", "road", "rocket",
		"rose", "sea", "seal", "shark", "shrew", "skunk", "skyscraper", "snail", "snake", "spider",
		"squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank", "telephone", "television", "tiger", "tractor",
		"train", "trout", "tulip", "turtle", "wardrobe", "whale", "willow_tree", "wolf", "woman", "worm",
	}
)

// NormStats returns the conventional per-channel normalisation mean and
// standard deviation for a known dataset (values in [0, 1]), and false for an
// unknown one (use Dataset.MeanStd then).
func NormStats(name string) (mean, std []float32, ok bool) {
	if l, ok := layoutOf(name); ok && l.mean != nil {
		return slices.Clone(l.mean), slices.Clone(l.std), true
	}
	return nil, nil, false
}
