package reproduce

import (
	"fmt"
	"strings"
)

// PrecisionTag names the precision a grid's runs compute in, from the
// precisions of their matrix products and convolutions ("fp32", "tf32" or
// "bf16", as train.Ran records them): "" for the reference, float32
// products with float32 convolutions (the CPU's default) or TF32 ones (a
// GPU's, as PyTorch's cuDNN default), so that a grid may go on from one
// device to the other; otherwise the precision when both are the same
// ("bf16", "tf32"), else the two ("fp32-convbf16"). A run's directory and
// a grid's report directory end in -TAG when it is not "", so that runs of
// different precisions are never mixed under one name.
func PrecisionTag(products, convs string) string {
	if products == "" {
		products = "fp32"
	}
	if convs == "" {
		convs = "fp32"
	}
	switch {
	case products == "fp32" && (convs == "fp32" || convs == "tf32"):
		return ""
	case products == convs:
		return products
	default:
		return products + "-conv" + convs
	}
}

// tagSuffix is what a run's or report's directory name ends with for tag.
func tagSuffix(tag string) string {
	if tag == "" {
		return ""
	}
	return "-" + tag
}

// checkPrecision validates a grid's Precision tag: letters, digits and
// '-' only (it ends directory names).
func checkPrecision(tag string) error {
	if tag != sanitise(tag) || strings.ContainsAny(tag, ".") {
		return fmt.Errorf("precision tag %q: expected letters, digits and '-' (PrecisionTag's)", tag)
	}
	return nil
}

// precisionText describes the precisions a run computed in for the report.
func precisionText(products, convs string) string {
	if products == "" && convs == "" {
		return "unrecorded"
	}
	return fmt.Sprintf("products %s, convolutions %s", orFP32(products), orFP32(convs))
}

func orFP32(p string) string {
	if p == "" {
		return "fp32"
	}
	return p
}

// tagText describes a PrecisionTag for messages.
func tagText(tag string) string {
	if tag == "" {
		return "fp32 products (fp32 or tf32 convolutions)"
	}
	return "precision " + tag
}
