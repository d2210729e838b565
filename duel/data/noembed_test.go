//go:build duel_noembed

package data

import (
	"strings"
	"testing"
)

// TestDefaultWithoutEmbed: a binary built with the tag duel_noembed
// refuses the default dataset in one line naming the tag and the remedy
// (.ci/run runs this test with the tag).
func TestDefaultWithoutEmbed(t *testing.T) {
	for _, train := range []bool{true, false} {
		_, err := Open("default", "", train)
		if err == nil || !strings.Contains(err.Error(), "duel_noembed") || !strings.Contains(err.Error(), "--data") {
			t.Errorf("Open(default, train %v): %v, want an error naming duel_noembed and --data", train, err)
		}
	}
}
