//go:build duel_noembed

package embedded

// Included reports whether the subset is compiled in: not with the tag
// duel_noembed.
const Included = false

// TrainPNG, TrainLabels, TestPNG and TestLabels are empty with the tag
// duel_noembed.
var TrainPNG, TrainLabels, TestPNG, TestLabels []byte
