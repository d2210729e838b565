package autograd_test

import (
	"os"
	"strings"
	"testing"
)

// TestSoftplusGuide checks that docs/extending.md shows autograd/softplus.go
// as it is: the guide's worked example, the whole file but its package
// clause and import.
func TestSoftplusGuide(t *testing.T) {
	guide, err := os.ReadFile("../docs/extending.md")
	if err != nil {
		t.Fatalf("reading the guide: %v", err)
	}
	src, err := os.ReadFile("softplus.go")
	if err != nil {
		t.Fatalf("reading the example: %v", err)
	}
	const intro = "Softplus (autograd/softplus.go"
	i := strings.Index(string(guide), intro)
	if i < 0 {
		t.Fatalf("docs/extending.md no longer introduces the example with %q", intro)
	}
	rest := string(guide[i:])
	start := strings.Index(rest, "```go\n")
	end := strings.Index(rest[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/extending.md: no go block after the example's introduction")
	}
	shown := rest[start+6 : start+6+end]
	body := string(src)
	body = body[strings.Index(body, "// Softplus"):]
	if shown != body {
		t.Errorf("docs/extending.md's Softplus block differs from autograd/softplus.go:\n--- guide\n%s--- file\n%s", shown, body)
	}
}
