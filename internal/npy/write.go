package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/duel-ssl/duel/internal/atomicfile"
)

// Write writes a as a .npy file: version 1.0 when the header fits (always,
// in practice), 2.0 otherwise; the header is padded so that the data starts
// at a multiple of 64 bytes, as NumPy does.
func Write(w io.Writer, a *Array) error {
	if err := a.check(); err != nil {
		return err
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = strconv.Itoa(d)
	}
	shape := "(" + strings.Join(dims, ", ") + ")"
	if len(a.Shape) == 1 {
		shape = "(" + dims[0] + ",)"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", a.descr(), shape)

	var pre bytes.Buffer
	pre.WriteString(magic)
	lenBytes := 2
	if len(dict)+1+len(magic)+2+2 > math.MaxUint16 {
		lenBytes = 4
	}
	pad := 63 - (len(magic)+2+lenBytes+len(dict))%64 // spaces, then '\n'
	hlen := len(dict) + pad + 1
	if lenBytes == 2 {
		pre.Write([]byte{1, 0})
		binary.Write(&pre, binary.LittleEndian, uint16(hlen))
	} else {
		pre.Write([]byte{2, 0})
		binary.Write(&pre, binary.LittleEndian, uint32(hlen))
	}
	pre.WriteString(dict)
	pre.WriteString(strings.Repeat(" ", pad) + "\n")

	bw := bufio.NewWriter(w)
	bw.Write(pre.Bytes())
	var err error
	switch {
	case a.Float32 != nil:
		err = binary.Write(bw, binary.LittleEndian, a.Float32)
	case a.Float64 != nil:
		err = binary.Write(bw, binary.LittleEndian, a.Float64)
	case a.Int32 != nil:
		err = binary.Write(bw, binary.LittleEndian, a.Int32)
	case a.Int64 != nil:
		err = binary.Write(bw, binary.LittleEndian, a.Int64)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// WriteFile writes a to path atomically: to a temporary file in the same
// directory, then renamed.
func WriteFile(path string, a *Array) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, a) })
}
