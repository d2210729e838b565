package heads

// Linear is the paper's CIFAR-10 projection: a single Linear layer from the
// backbone features to out (256 in the paper); the caller L2-normalises
// the output.
func Linear(in, out int) Spec { return Spec{Dims: []int{in, out}} }

// MoCoV2 is MoCo v2's projection head: Linear(in, hidden)-ReLU-Linear(hidden,
// out), with biases (2048-2048-128 on a ResNet-50).
func MoCoV2(in, hidden, out int) Spec { return Spec{Dims: []int{in, hidden, out}} }

// SimCLR is SimCLR's projection head as the paper uses it on STL-10: two
// Linear layers with a ReLU between them (512-d output in the paper).
func SimCLR(in, hidden, out int) Spec { return Spec{Dims: []int{in, hidden, out}} }

// BYOLProjector is BYOL's projector: Linear(in, hidden)-[BN]-ReLU-
// Linear(hidden, out). The paper uses hidden 2048 without BatchNorm on
// CIFAR-10 and hidden 4096 with BatchNorm on STL-10 (BYOL's own: 4096, BN,
// out 256).
func BYOLProjector(in, hidden, out int, bn bool) Spec {
	return Spec{Dims: []int{in, hidden, out}, HiddenBN: bn}
}

// BYOLPredictor is BYOL's predictor, the same MLP from the projection
// dimension back to itself: Linear(dim, hidden)-[BN]-ReLU-Linear(hidden, dim).
func BYOLPredictor(dim, hidden int, bn bool) Spec {
	return Spec{Dims: []int{dim, hidden, dim}, HiddenBN: bn}
}

// Barlow is Barlow Twins' projector (facebookresearch/barlowtwins): three
// Linear layers without bias, BatchNorm1d and ReLU after the first two:
// Linear(in, hidden)-BN-ReLU-Linear(hidden, hidden)-BN-ReLU-Linear(hidden,
// out) (8192-8192-8192 in the original).
func Barlow(in, hidden, out int) Spec {
	return Spec{Dims: []int{in, hidden, hidden, out}, HiddenBN: true, NoBias: true}
}
