// Package docs_test keeps the guides in docs/ true to the code: every Go
// block of a guide must be found in the repository's Go sources, either
// as an excerpt of the file it quotes or as a snippet compiled, and where
// it can be run, run, in this package's snippets_test.go.
package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sourceLines indexes the normalised non-empty lines of every Go file
// under the repository root.
type sourceLines struct {
	files map[string][]string  // file -> its normalised non-empty lines
	at    map[string][]filePos // line -> where it occurs
}

// filePos is one occurrence of a normalised line.
type filePos struct {
	file string
	i    int
}

// readSources walks root for .go files (skipping .git and hidden
// directories) and indexes their normalised lines.
func readSources(root string) (*sourceLines, error) {
	s := &sourceLines{files: map[string][]string{}, at: map[string][]filePos{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if n := normalise(l); n != "" {
				s.at[n] = append(s.at[n], filePos{path, len(lines)})
				lines = append(lines, n)
			}
		}
		s.files[path] = lines
		return nil
	})
	return s, err
}

// contains reports whether lines occur one after another in one file,
// and otherwise the longest prefix of them that does.
func (s *sourceLines) contains(lines []string) (bool, int) {
	best := 0
	for _, p := range s.at[lines[0]] {
		f := s.files[p.file]
		n := 0
		for n < len(lines) && p.i+n < len(f) && f[p.i+n] == lines[n] {
			n++
		}
		if n == len(lines) {
			return true, n
		}
		best = max(best, n)
	}
	return false, best
}

var spaces = regexp.MustCompile(`\s+`)

// normalise drops a line's comment and collapses its white space, so that
// a guide may annotate or align what it quotes: `x := f()   // why` and
// `x := f()` are the same line, and a comment line is no line.
func normalise(line string) string {
	if i := commentStart(line); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(spaces.ReplaceAllString(line, " "))
}

// commentStart returns the index of the `//` that starts line's comment,
// or -1: a `//` inside a string or rune literal does not.
func commentStart(line string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '`' || c == '\'':
			quote = c
		case c == '/' && i+1 < len(line) && line[i+1] == '/':
			return i
		}
	}
	return -1
}

// goBlock is one fenced Go block of a guide.
type goBlock struct {
	guide string // the guide's path
	line  int    // the line of its opening fence
	text  string // its contents
}

// goBlocks returns the ```go blocks of a Markdown file's text.
func goBlocks(guide, text string) ([]goBlock, error) {
	var blocks []goBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: the go block is never closed", guide, start+1)
		}
		blocks = append(blocks, goBlock{guide, start + 1, strings.Join(body, "\n")})
	}
	return blocks, nil
}

// excerpts splits a block at its elisions (a line of "...", which may
// carry a comment, or "// ...") into the runs
// of normalised non-empty lines that must each occur in one file.
func excerpts(block string) [][]string {
	runs := [][]string{nil}
	for _, l := range strings.Split(block, "\n") {
		if n := normalise(l); n == "..." || strings.TrimSpace(l) == "// ..." {
			runs = append(runs, nil)
			continue
		}
		if n := normalise(l); n != "" {
			runs[len(runs)-1] = append(runs[len(runs)-1], n)
		}
	}
	var out [][]string
	for _, r := range runs {
		if len(r) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// TestGoBlocks checks that every Go block of README.md and docs/*.md is
// found, excerpt by excerpt, in the repository's Go files (this package's
// snippets included): a guide that quotes code the code no longer has, or
// shows a call the API no longer takes, fails here with its line.
func TestGoBlocks(t *testing.T) {
	src, err := readSources("..")
	if err != nil {
		t.Fatalf("reading the Go sources: %v", err)
	}
	guides, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	guides = append(guides, "../README.md")
	total := 0
	for _, g := range guides {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatalf("reading %s: %v", g, err)
		}
		blocks, err := goBlocks(strings.TrimPrefix(g, "../"), string(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			total++
			for _, ex := range excerpts(b.text) {
				if ok, n := src.contains(ex); !ok {
					t.Errorf("%s:%d: the go block's line %q is not in any Go file after the %d line(s) before it (%q...): "+
						"quote the code as it is, or compile the snippet in docs/snippets_test.go",
						b.guide, b.line, ex[n], n, ex[0])
				}
			}
		}
	}
	if total == 0 {
		t.Fatal("no go block found in the guides: has docs/ moved?")
	}
	t.Logf("%d go blocks checked", total)
}

// TestGoBlocksParsing checks the block and excerpt rules on made-up
// guides, including what must fail.
func TestGoBlocksParsing(t *testing.T) {
	src := &sourceLines{files: map[string][]string{}, at: map[string][]filePos{}}
	for i, l := range []string{"func f() {", `s := "http://x" // a comment`, "return s", "}"} {
		n := normalise(l)
		src.files["f.go"] = append(src.files["f.go"], n)
		src.at[n] = append(src.at[n], filePos{"f.go", i})
	}
	tests := []struct {
		name  string
		guide string
		found bool
		err   bool
	}{
		{"verbatim", "```go\nfunc f() {\n\ts := \"http://x\"\n\treturn s\n}\n```\n", true, false},
		{"annotated and aligned", "```go\nfunc f() {\n  s :=   \"http://x\"   // why\n// a note\n\treturn s\n}\n```", true, false},
		{"elided", "```go\nfunc f() {\n\t...\n}\n```", true, false},
		{"elided with a note", "```go\nfunc f() {\n\t... // the rest\n}\n```", true, false},
		{"a line the code lacks", "```go\nfunc f() {\n\treturn t\n}\n```", false, false},
		{"out of order", "```go\nreturn s\nfunc f() {\n```", false, false},
		{"not a comment inside a string", "```go\ns := \"http://y\"\n```", false, false},
		{"unclosed", "```go\nfunc f() {\n", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := goBlocks("g.md", tc.guide)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			found := true
			for _, ex := range excerpts(blocks[0].text) {
				if ok, _ := src.contains(ex); !ok {
					found = false
				}
			}
			if found != tc.found {
				t.Errorf("found = %v, want %v", found, tc.found)
			}
		})
	}
}

// FuzzGoBlocks checks the block and excerpt parsing on any text: no
// panic, every block's line inside the text, every excerpt line
// normalised and non-empty, never an elision.
func FuzzGoBlocks(f *testing.F) {
	for _, s := range []string{
		"```go\nfunc f() {\n\t...\n}\n```\n",
		"```go\nx := 1 // a\n```",
		"```go\nunclosed",
		"text\n```go\n\"//\" `//` '/' // c\n... // more\n```\nafter",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		blocks, err := goBlocks("g.md", text)
		if err != nil {
			return
		}
		lines := strings.Count(text, "\n") + 1
		for _, b := range blocks {
			if b.line < 1 || b.line > lines {
				t.Fatalf("block at line %d of %d", b.line, lines)
			}
			for _, ex := range excerpts(b.text) {
				if len(ex) == 0 {
					t.Fatal("an empty excerpt")
				}
				for _, l := range ex {
					if l == "" || l == "..." || normalise(l) != l {
						t.Fatalf("excerpt line %q is not a normalised line", l)
					}
				}
			}
		}
	})
}
