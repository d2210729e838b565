package npy

import (
	"fmt"
	"strconv"
	"strings"
)

// header is the parsed header dictionary of a .npy file.
type header struct {
	descr   string
	fortran bool
	shape   []int
}

// maxElements bounds the element count a header may declare, so that sizes
// never overflow.
const maxElements = 1 << 40

// parseHeader parses the Python literal dictionary of a .npy header, e.g.
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//
// Keys may come in any order, with any spacing, single or double quotes and
// a trailing comma; the three keys must all be present and no other.
func parseHeader(s string) (header, error) {
	var h header
	p := &literal{s: s}
	if !p.eat('{') {
		return h, p.errorf("expected '{' at the start of the header dictionary")
	}
	seen := map[string]bool{}
	for !p.eat('}') {
		key, err := p.str()
		if err != nil {
			return h, err
		}
		if seen[key] {
			return h, p.errorf("key %q repeated", key)
		}
		seen[key] = true
		if !p.eat(':') {
			return h, p.errorf("expected ':' after key %q", key)
		}
		switch key {
		case "descr":
			if p.peek() == '[' {
				return h, p.errorf("structured dtype (a list descr), expected a plain dtype")
			}
			h.descr, err = p.str()
		case "fortran_order":
			h.fortran, err = p.boolean()
		case "shape":
			h.shape, err = p.shape()
		default:
			return h, p.errorf("unexpected key %q, expected descr, fortran_order and shape", key)
		}
		if err != nil {
			return h, err
		}
		if !p.eat(',') && p.peek() != '}' {
			return h, p.errorf("expected ',' or '}' after the value of %q", key)
		}
	}
	if p.skipSpace(); p.i != len(p.s) {
		return h, p.errorf("unexpected text after the header dictionary")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("npy header: missing key %q", k)
		}
	}
	return h, nil
}

// literal is a cursor over a Python literal.
type literal struct {
	s string
	i int
}

func (p *literal) errorf(format string, args ...any) error {
	return fmt.Errorf("npy header: %s (at byte %d of %q)", fmt.Sprintf(format, args...), p.i, p.s)
}

func (p *literal) skipSpace() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *literal) peek() byte {
	p.skipSpace()
	if p.i == len(p.s) {
		return 0
	}
	return p.s[p.i]
}

// eat consumes c if it is the next non-space byte.
func (p *literal) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// str parses a quoted string without escapes (numpy never writes any).
func (p *literal) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("expected a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.errorf("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", p.errorf("escape sequences in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

func (p *literal) boolean() (bool, error) {
	p.skipSpace()
	for _, w := range []struct {
		word string
		v    bool
	}{{"True", true}, {"False", false}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return w.v, nil
		}
	}
	return false, p.errorf("expected True or False")
}

// shape parses a tuple of non-negative integers: (), (n,), (n, m), ...
func (p *literal) shape() ([]int, error) {
	if !p.eat('(') {
		return nil, p.errorf("expected a tuple for the shape")
	}
	shape := []int{}
	total, comma := 1, false
	for !p.eat(')') {
		p.skipSpace()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j == p.i || j-p.i > 15 {
			return nil, p.errorf("expected a non-negative integer dimension of at most 15 digits")
		}
		d, _ := strconv.Atoi(p.s[p.i:j])
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 long
			p.i++
		}
		if d > 0 && total > maxElements/d {
			return nil, p.errorf("shape holds more than %d elements", maxElements)
		}
		total *= d
		shape = append(shape, d)
		if len(shape) > 32 {
			return nil, p.errorf("more than 32 dimensions")
		}
		comma = p.eat(',')
		if !comma && p.peek() != ')' {
			return nil, p.errorf("expected ',' or ')' in the shape")
		}
	}
	if len(shape) == 1 && !comma {
		return nil, p.errorf("shape (%d) is not a tuple, expected (%d,)", shape[0], shape[0])
	}
	return shape, nil
}
