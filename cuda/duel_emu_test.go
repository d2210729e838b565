package cuda

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
)

// emuDUEL compiles kernels/cuda/emu/duel_emu.cpp (duel.cu on the CPU
// emulator) and returns an update function running it at block threads.
func emuDUEL(t *testing.T) func(block int) func(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
	t.Helper()
	if testing.Short() {
		t.Skip("emulated DUEL kernel skipped under -short")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found: emulated DUEL kernel test skipped")
	}
	// Read g++'s inputs so that go test's cache notices their changes.
	for _, pat := range []string{"*.cu", "emu/*"} {
		files, _ := filepath.Glob(filepath.Join("..", "kernels", "cuda", pat))
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "duel_emu")
	src := filepath.Join("..", "kernels", "cuda", "emu", "duel_emu.cpp")
	if out, err := exec.Command(gxx, "-std=c++20", "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++ duel_emu.cpp: %v\n%s", err, out)
	}
	return func(block int) func(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
		return func(mem, batch []float32, z int, opt DUELOptions) (DUELResult, error) {
			k, b, _, err := checkDUEL(mem, batch, z, opt)
			if err != nil {
				return DUELResult{}, err
			}
			var in bytes.Buffer
			protect, have := 0, 0
			if opt.Admission == memory.Protected {
				protect = 1
			}
			if opt.Scores != nil {
				have = 1
			}
			binary.Write(&in, binary.LittleEndian, []int32{int32(k), int32(b), int32(z), int32(protect), int32(have), int32(block)})
			binary.Write(&in, binary.LittleEndian, mem)
			binary.Write(&in, binary.LittleEndian, batch)
			if opt.Scores != nil {
				binary.Write(&in, binary.LittleEndian, opt.Scores)
			}
			cmd := exec.Command(bin)
			cmd.Stdin = &in
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				return DUELResult{}, fmt.Errorf("duel_emu: %v: %s", err, stderr.String())
			}
			ev, kept := make([]int32, b), make([]int32, k)
			res := DUELResult{Scores: make([]float64, k)}
			r := bytes.NewReader(out)
			for _, v := range []any{ev, kept, res.Scores} {
				if err := binary.Read(r, binary.LittleEndian, v); err != nil {
					return DUELResult{}, fmt.Errorf("duel_emu output: %v", err)
				}
			}
			res.Evicted, res.Kept = widen(ev), widen(kept)
			return res, nil
		}
	}
}

// TestDUELEmulated runs duel.cu itself (on the CPU emulator of
// kernels/cuda/emu) through the same streams as TestDUELHost, at several
// block sizes, and compares with memory.DUEL: evictions, kept positions and
// carried scores bit for bit.
func TestDUELEmulated(t *testing.T) {
	run := emuDUEL(t)
	small := []duelCase{{1, 1, 1}, {1, 3, 2}, {2, 0, 3}, {3, 5, 4}, {5, 2, 7}, {7, 7, 1}, {16, 4, 8}, {33, 9, 5}, {40, 64, 3}}
	stream(t, "emu32", small, run(32))
	stream(t, "emu96", small, run(96))
	stream(t, "emu256", []duelCase{{64, 16, 17}, {100, 37, 12}}, run(256))
	stream(t, "emu1024", []duelCase{{129, 31, 33}}, run(1024))
}
