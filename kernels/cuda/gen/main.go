// Command gen compiles the CUDA kernels of package kernels/cuda and writes
// their Go launchers.
//
//	go run ./kernels/cuda/gen [-dir kernels/cuda] [-nvcc nvcc] [-nvcc-sm90a nvcc12]
//
// For every .cu file in dir it
//   - runs nvcc -ptx for sm_60, sm_70 and sm_80 and embeds the three PTX
//     texts (the sm_80 one doubles as forward-compatible PTX: the driver JITs
//     it on newer devices); a file with a line "// gen: min-arch NN" is
//     compiled only for the targets from sm_NN on (gemm_tc.cu: sm_80, for
//     its tensor-core instructions), and its module records MinArch NN;
//     NN may also be 90 (duel_cluster.cu: thread-block clusters), whose
//     module then embeds sm_90 PTX only; a file with a line "// gen: arch
//     90a" (gemm_wg.cu: wgmma) is compiled for sm_90a only, by the CUDA 12
//     nvcc named by -nvcc-sm90a (CUDA 11.8 has no sm_90a), and its module
//     records MinArch 90 and ArchSpecific (the PTX loads on compute
//     capability 9.0 only);
//   - runs nvcc -cubin -Xptxas -v for the same targets and sm_90 and fails if ptxas
//     reports any spill store or load; the per-kernel summary goes to
//     dir/ptxas.txt;
//   - parses every extern "C" __global__ kernel's signature and the one-line
//     comment above it, and writes zz_generated_<name>.go: the module (PTX,
//     the SHA-256 of the source and of the headers it includes, see
//     cuda.SourceSHA256, the toolkit version) and one typed launcher per
//     kernel that checks the launch configuration and device pointers.
//
// Headers shared by several families (*.cuh, such as common.cuh) are not
// modules: a .cu file includes them with #include "name.cuh", found next to
// it (nvcc also gets -I dir).
//
// Files are written atomically (temporary file, then rename).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/duel-ssl/duel/internal/atomicfile"
	"github.com/duel-ssl/duel/kernels/cuda"
)

// archs are the compute capabilities compiled for.
var archs = []int{60, 70, 80}

// checkArchs are the compute capabilities whose ptxas must report no
// spills: archs, and sm_90 (Hopper JIT-compiles the sm_80 PTX; its own
// ptxas run checks that the kernels fit its registers there too).
var checkArchs = []int{60, 70, 80, 90}

func main() {
	dir := flag.String("dir", "kernels/cuda", "directory of the .cu files")
	nvcc := flag.String("nvcc", "nvcc", "the nvcc to run")
	nvccA := flag.String("nvcc-sm90a", "", "a CUDA 12 nvcc for the files marked \"// gen: arch 90a\" (default: -nvcc, if it is CUDA 12 or later)")
	flag.Parse()
	if *nvccA == "" {
		*nvccA = *nvcc
	}
	if err := run(*dir, *nvcc, *nvccA); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir, nvcc, nvccA string) error {
	toolkit, err := toolkitVersion(nvcc)
	if err != nil {
		return err
	}
	var toolkitA string // nvccA's, asked for when a file needs it
	srcs, err := filepath.Glob(filepath.Join(dir, "*.cu"))
	if err != nil {
		return err
	}
	if len(srcs) == 0 {
		return fmt.Errorf("no .cu files in %s", dir)
	}
	sort.Strings(srcs)
	var summary bytes.Buffer
	for _, src := range srcs {
		text, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		tk := tool{nvcc, toolkit}
		if archSpecificRE.Match(text) {
			if toolkitA == "" {
				if toolkitA, err = toolkitVersion(nvccA); err != nil {
					return err
				}
			}
			if !cuda12(toolkitA) {
				return fmt.Errorf("%s needs sm_90a (CUDA 12 or later), and %s is %q: pass -nvcc-sm90a (see docs/cuda.md)", src, nvccA, toolkitA)
			}
			tk = tool{nvccA, toolkitA}
		}
		if err := generate(src, tk, &summary); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
	}
	head := toolkit
	if toolkitA != "" {
		head += "; sm_90a: " + toolkitA
	}
	return atomicfile.WriteFile(filepath.Join(dir, "ptxas.txt"),
		append([]byte(fmt.Sprintf("# ptxas -v summary (%s), written by go run ./kernels/cuda/gen\n", head)), summary.Bytes()...))
}

// tool is an nvcc and its release line.
type tool struct{ nvcc, toolkit string }

// cuda12 reports whether a release line names CUDA 12 or later.
func cuda12(toolkit string) bool {
	m := regexp.MustCompile(`release (\d+)\.`).FindStringSubmatch(toolkit)
	if m == nil {
		return false
	}
	v, _ := strconv.Atoi(m[1])
	return v >= 12
}

// toolkitVersion returns nvcc's release line, e.g. "Cuda compilation
// tools, release 11.8, V11.8.89".
func toolkitVersion(nvcc string) (string, error) {
	out, err := exec.Command(nvcc, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v (is the CUDA toolkit installed? see docs/cuda.md)", nvcc, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Cuda compilation tools") {
			return strings.TrimSpace(l), nil
		}
	}
	return "", fmt.Errorf("%s --version: no release line in %q", nvcc, out)
}

// kernel is one parsed extern "C" __global__ function.
type kernel struct {
	name    string
	comment string
	bounds  int // __launch_bounds__, or 1024
	params  []param
	warps   bool // needs a block of whole warps (uses warp shuffles)
}

type param struct{ ctype, name string }

// kernelRE matches a kernel's declaration: its __launch_bounds__ (group
// 1), name (2) and parameters (3); a __cluster_dims__ after the launch
// bounds (a cluster shape compiled in, duel_cluster.cu) is skipped.
var kernelRE = regexp.MustCompile(`(?m)^extern "C" __global__ void\s+(?:__launch_bounds__\((\d+)(?:\s*,\s*\d+)?\)\s+)?(?:__cluster_dims__\([^)]*\)\s+)?(\w+)\s*\(([^)]*)\)`)

// parse returns the kernels defined in src.
func parse(src string) ([]kernel, error) {
	var ks []kernel
	for _, m := range kernelRE.FindAllStringSubmatchIndex(src, -1) {
		k := kernel{name: src[m[4]:m[5]], bounds: 1024}
		if m[2] >= 0 {
			b, err := strconv.Atoi(src[m[2]:m[3]])
			if err != nil || b < 1 || b > 1024 {
				return nil, fmt.Errorf("kernel %s: __launch_bounds__(%s), expected 1..1024 threads", k.name, src[m[2]:m[3]])
			}
			k.bounds = b
		}
		// The comment is the last // line before the declaration.
		before := strings.Split(strings.TrimRight(src[:m[0]], "\n"), "\n")
		if last := strings.TrimSpace(before[len(before)-1]); strings.HasPrefix(last, "//") {
			k.comment = strings.TrimSpace(strings.TrimPrefix(last, "//"))
		} else {
			return nil, fmt.Errorf("kernel %s: no one-line math comment above it", k.name)
		}
		list := strings.TrimSpace(src[m[6]:m[7]])
		if list == "" || list == "void" {
			list = ""
		}
		for _, p := range strings.Split(list, ",") {
			if list == "" {
				break
			}
			p = strings.Join(strings.Fields(p), " ")
			i := strings.LastIndexAny(p, " *")
			if i < 0 {
				return nil, fmt.Errorf("kernel %s: cannot parse parameter %q", k.name, p)
			}
			k.params = append(k.params, param{ctype: strings.TrimSpace(p[:i+1]), name: p[i+1:]})
		}
		body := src[m[1]:]
		if next := kernelRE.FindStringIndex(body); next != nil {
			body = body[:next[0]]
		}
		k.warps = strings.Contains(body, "_sync(") || strings.Contains(src, k.name+"_warps")
		ks = append(ks, k)
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("no extern \"C\" __global__ kernel")
	}
	return ks, nil
}

// goType maps a kernel parameter's C type to the launcher's Go type and the
// expression passing it.
func goType(ctype, name string) (gotype, arg string, ptr bool, err error) {
	switch t := strings.TrimPrefix(ctype, "const "); {
	case strings.HasSuffix(t, "*"):
		return "driver.DevicePtr", name, true, nil
	case t == "int":
		return "int32", name, false, nil
	case t == "long long":
		return "int64", name, false, nil
	case t == "float":
		return "float32", name, false, nil
	case t == "double":
		return "float64", name, false, nil
	case t == "Layout":
		return "Layout", name + ".Bytes()", false, nil
	}
	return "", "", false, fmt.Errorf("parameter %s: unsupported C type %q", name, ctype)
}

var minArchRE = regexp.MustCompile(`(?m)^// gen: min-arch (\d+)\s*$`)

// archSpecificRE matches the line that compiles a file for sm_90a only.
var archSpecificRE = regexp.MustCompile(`(?m)^// gen: arch 90a\s*$`)

// minArch returns the compute capability named by src's "// gen: min-arch
// NN" line, or 0 without one.
func minArch(src string) (int, error) {
	m := minArchRE.FindStringSubmatch(src)
	if m == nil {
		return 0, nil
	}
	a, _ := strconv.Atoi(m[1])
	if !slices.Contains(checkArchs, a) {
		return 0, fmt.Errorf("gen: min-arch %d: not one of the targets %v", a, checkArchs)
	}
	return a, nil
}

// generate compiles one .cu file and writes its Go file.
func generate(src string, tk tool, summary *bytes.Buffer) error {
	nvcc, toolkit := tk.nvcc, tk.toolkit
	text, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	sum, err := cuda.SourceSHA256(src)
	if err != nil {
		return err
	}
	ks, err := parse(string(text))
	if err != nil {
		return err
	}
	min, err := minArch(string(text))
	if err != nil {
		return err
	}
	specific := archSpecificRE.Match(text)
	if specific {
		if min != 0 {
			return fmt.Errorf("both \"// gen: min-arch %d\" and \"// gen: arch 90a\"", min)
		}
		min = 90
	}
	// sm names the target of capability a: sm_90a for an arch-specific file.
	sm := func(a int) string {
		if specific {
			return fmt.Sprintf("sm_%da", a)
		}
		return fmt.Sprintf("sm_%d", a)
	}
	var targets []int // the embedded PTX's targets
	for _, a := range archs {
		if a >= min && !specific {
			targets = append(targets, a)
		}
	}
	if min > 0 && !slices.Contains(targets, min) {
		targets = append(targets, min) // a checked arch beyond archs (sm_90: clusters): its own PTX only
	}
	tmp, err := os.MkdirTemp("", "duel-cuda-gen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	base := strings.TrimSuffix(filepath.Base(src), ".cu")

	ptx := map[int]string{}
	for _, a := range checkArchs {
		if a < min {
			continue
		}
		if slices.Contains(targets, a) {
			out := filepath.Join(tmp, fmt.Sprintf("%s_%d.ptx", base, a))
			if msg, err := exec.Command(nvcc, "-ptx", "-O3", "-arch="+sm(a), "-I", filepath.Dir(src), "-o", out, src).CombinedOutput(); err != nil {
				return fmt.Errorf("nvcc -ptx %s: %v\n%s", sm(a), err, msg)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				return err
			}
			ptx[a] = string(b)
		}

		cubin := filepath.Join(tmp, fmt.Sprintf("%s_%d.cubin", base, a))
		msg, err := exec.Command(nvcc, "-cubin", "-O3", "-arch="+sm(a), "-I", filepath.Dir(src), "-Xptxas", "-v", "-o", cubin, src).CombinedOutput()
		if err != nil {
			return fmt.Errorf("nvcc -cubin %s: %v\n%s", sm(a), err, msg)
		}
		if err := ptxasSummary(summary, filepath.Base(src), sm(a), string(msg)); err != nil {
			return err
		}
	}

	var g bytes.Buffer
	fmt.Fprintf(&g, "// Code generated by go run ./kernels/cuda/gen from %s; DO NOT EDIT.\n", filepath.Base(src))
	fmt.Fprintf(&g, "// Toolkit: %s\n// Source SHA-256: %s\n\npackage cuda\n\n", toolkit, sum)
	fmt.Fprintf(&g, "import \"github.com/duel-ssl/duel/cuda/driver\"\n\n")
	mod := camel(base) + "Module"
	list := archList(targets)
	if specific {
		list = sm(90) + " (compute capability 9.0 only)"
	}
	fmt.Fprintf(&g, "// %s is %s compiled to PTX for %s.\nvar %s = &Module{\n", mod, filepath.Base(src), list, mod)
	fmt.Fprintf(&g, "Source: %q,\nSHA256: %q,\nToolkit: %q,\nKernels: []string{", filepath.Base(src), sum, toolkit)
	for _, k := range ks {
		fmt.Fprintf(&g, "%q, ", k.name)
	}
	fmt.Fprintf(&g, "},\nParams: map[string][]string{\n")
	for _, k := range ks {
		fmt.Fprintf(&g, "%q: {", k.name)
		for _, p := range k.params {
			gt, _, _, err := goType(p.ctype, p.name)
			if err != nil {
				return fmt.Errorf("kernel %s: %w", k.name, err)
			}
			fmt.Fprintf(&g, "%q, ", gt)
		}
		fmt.Fprintf(&g, "},\n")
	}
	fmt.Fprintf(&g, "},\n")
	if min > 0 {
		fmt.Fprintf(&g, "MinArch: %d,\n", min)
	}
	if specific {
		fmt.Fprintf(&g, "ArchSpecific: true,\n")
	}
	fmt.Fprintf(&g, "PTX: map[int]string{\n")
	for _, a := range targets {
		fmt.Fprintf(&g, "%d: %s,\n", a, strconv.Quote(ptx[a]))
	}
	fmt.Fprintf(&g, "},\n}\n\nfunc init() { modules = append(modules, %s) }\n", mod)

	for _, k := range ks {
		var sig, args, checks []string
		for _, p := range k.params {
			gt, arg, ptr, err := goType(p.ctype, p.name)
			if err != nil {
				return fmt.Errorf("kernel %s: %w", k.name, err)
			}
			sig = append(sig, p.name+" "+gt)
			args = append(args, arg)
			if ptr {
				checks = append(checks, fmt.Sprintf("if err := checkPtr(%q, %q, %s); err != nil {\nreturn err\n}\n", k.name, p.name, p.name))
			}
		}
		fmt.Fprintf(&g, "\n// %s launches %s (%s):\n//\n//\t%s\n", camel(k.name), k.name, filepath.Base(src), k.comment)
		fmt.Fprintf(&g, "//\n// It fails before launching on a bad configuration (at most %d threads per block", k.bounds)
		if k.warps {
			fmt.Fprintf(&g, ", whole warps")
		}
		fmt.Fprintf(&g, ") or a nil device pointer.\n")
		fmt.Fprintf(&g, "func %s(l Launcher, cfg Config, %s) error {\n", camel(k.name), strings.Join(sig, ", "))
		fmt.Fprintf(&g, "if err := cfg.check(%q, %d, %v); err != nil {\nreturn err\n}\n", k.name, k.bounds, k.warps)
		for _, c := range checks {
			g.WriteString(c)
		}
		fmt.Fprintf(&g, "return l.Launch(%s, %q, cfg, %s)\n}\n", mod, k.name, strings.Join(args, ", "))
	}
	out, err := format.Source(g.Bytes())
	if err != nil {
		return fmt.Errorf("formatting the generated code: %v", err)
	}
	return atomicfile.WriteFile(filepath.Join(filepath.Dir(src), "zz_generated_"+base+".go"), out)
}

var (
	entryRE = regexp.MustCompile(`Compiling entry function '(\w+)' for '(\w+)'`)
	spillRE = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	usedRE  = regexp.MustCompile(`Used (\d+) registers(.*)`)
)

// ptxasSummary appends one line per kernel of ptxas -v output and fails on
// any spill.
func ptxasSummary(w *bytes.Buffer, src, arch string, out string) error {
	var name string
	var frame, st, ld string
	for _, l := range strings.Split(out, "\n") {
		if m := entryRE.FindStringSubmatch(l); m != nil {
			name = m[1]
		}
		if m := spillRE.FindStringSubmatch(l); m != nil && name != "" {
			frame, st, ld = m[1], m[2], m[3]
			if st != "0" || ld != "0" {
				return fmt.Errorf("ptxas %s: kernel %s spills (%s bytes stores, %s bytes loads): reduce its register use", arch, name, st, ld)
			}
		}
		if m := usedRE.FindStringSubmatch(l); m != nil && name != "" {
			fmt.Fprintf(w, "%-16s %-16s %-6s %3s registers  stack %s B  spill stores %s B  spill loads %s B  (%s)\n",
				src, name, arch, m[1], frame, st, ld, strings.TrimLeft(m[2], ", "))
			name = ""
		}
	}
	return nil
}

// archList returns "sm_60, sm_70, sm_80" for targets 60, 70, 80.
func archList(targets []int) string {
	var s []string
	for _, a := range targets {
		s = append(s, fmt.Sprintf("sm_%d", a))
	}
	return strings.Join(s, ", ")
}

// camel turns a snake_case name into CamelCase ("duel_update" ->
// "DuelUpdate").
func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}
