package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
)

// jsonFlag is the --json flag every command carries.
var jsonFlag = &cli.BoolFlag{
	Name:  "json",
	Usage: "print exactly one JSON object as the last line of stdout",
}

// deviceFlag is the --device flag of reproduce and memory replay (which
// compute on the device, computeDevice) and of bench step and memory stream
// (which compute on the CPU only in this version, checkDevice).
var deviceFlag = &cli.StringFlag{
	Name:  "device",
	Value: "cpu",
	Usage: "where to compute: cpu or cuda (cuda opens " + driver.DefaultLibrary + ", or the file the environment variable DUEL_CUDA_DRIVER names)",
}

// cpuDeviceFlag is the --device flag of the benchmarks that time work
// done on the CPU only, whatever the device (bench tsne, bench data;
// checkCPUOnly): cuda is refused.
var cpuDeviceFlag = &cli.StringFlag{
	Name:  "device",
	Value: "cpu",
	Usage: "where to compute: cpu (cuda is refused: this benchmark times work that runs on the CPU only)",
}

// modelDeviceFlag is the --device flag of the commands that place a model
// on the device (train, embed, eval, analyze; computeDevice).
var modelDeviceFlag = &cli.StringFlag{
	Name:  "device",
	Value: "cpu",
	Usage: "where the model computes: cpu or cuda (cuda opens " + driver.DefaultLibrary + ", or the file the environment variable DUEL_CUDA_DRIVER names, " +
		"and is refused, naming what is missing, while its backend lacks a layer the model needs); checkpoints load onto and are written from either; " +
		"on cuda, train's DUEL memory (protected, compete) decides on the GPU too, with the CPU's decisions (DUEL_CUDADUEL_TRAIN=off keeps it on the host)",
}

// precisionFlag is the --precision flag of train, reproduce, bench gemm
// and bench step: the precision of the matrix products, and of the convolutions
// unless --conv-precision is given (cuda.UsePrecision on a GPU,
// tensor.SetCPUPrecision on the CPU).
var precisionFlag = &cli.StringFlag{
	Name:  "precision",
	Value: "fp32",
	Usage: "precision of the matrix products, and of the convolutions when given without --conv-precision: fp32, tf32 or bf16 " +
		"(the factors rounded to TF32 or bfloat16, FP32 accumulation, as PyTorch with allow_tf32 or autocast; on a GPU on tensor cores from compute capability 8.0, " +
		"fp32 below; on the CPU fp32 or bf16, which runs on AVX512_BF16 where the CPU has it, its convolutions by direct kernels, im2col + GEMM over bfloat16 pairs, or (the weight gradients of wide 3x3 layers) Winograd with bfloat16 GEMMs)",
}

// convPrecisionFlag is the --conv-precision flag of train, reproduce and
// bench step:
// the precision of the convolutions (cuda.UseConvPrecision on a GPU,
// tensor.SetCPUPrecision on the CPU).
var convPrecisionFlag = &cli.StringFlag{
	Name: "conv-precision",
	Usage: "precision of the convolutions: fp32, tf32 or bf16 (on a GPU the default is: --precision when it is given, else tf32, " +
		"as PyTorch's torch.backends.cudnn.allow_tf32; $DUEL_CUDA_CONV_PRECISION overrides that default; fp32 below compute capability 8.0); " +
		"on the CPU fp32 (the default) or bf16",
}

// emitJSON writes v as one line of JSON on stdout when --json is set.
func emitJSON(c *cli.Context, v any) error {
	if !c.Bool("json") {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the JSON result: %w", err)
	}
	_, err = fmt.Fprintln(c.App.Writer, string(b))
	return err
}

// flagError reports a bad flag value: which flag, what was found, what was expected.
func flagError(flag string, found any, expected string) error {
	return fmt.Errorf("%s: got %v, expected %s", flagName(flag), found, expected)
}

// flagName writes the flag name as --help shows it: -k for a one-letter
// name, --name otherwise (a leading dash or two in name is dropped).
func flagName(name string) string {
	name = strings.TrimLeft(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// computeDevice validates --device for a command that places its model on
// the device and returns the name train.Options.Device and
// train.LoadRunOn take: "cpu", or "cuda" once cuda.Available has found a
// usable GPU and registered its backend (otherwise its error, which says
// why and ends with "use --device cpu"). Whether the backend can run the
// model is checked by package train when the model is built.
func computeDevice(c *cli.Context) (string, error) {
	switch d := c.String("device"); d {
	case "cpu":
		return d, useCPUPrecision(c)
	case "cuda":
		if err := cuda.Available(); err != nil {
			return "", fmt.Errorf("--device cuda: %w", err)
		}
		// A fresh machine's first step waits for the driver to compile
		// the kernels' PTX: say so on stderr, module by module.
		if d, err := cuda.Default(); err == nil {
			d.LogSlowLoads(c.App.ErrWriter)
		}
		// --precision sets the products' and the convolutions' precision,
		// then --conv-precision the convolutions' alone.
		for _, f := range []struct {
			name string
			use  func(string) (cuda.Precision, error)
		}{{"precision", cuda.UsePrecision}, {"conv-precision", cuda.UseConvPrecision}} {
			if err := usePrecision(c, f.name, f.use); err != nil {
				return "", err
			}
		}
		return d, nil
	default:
		return "", flagError("device", fmt.Sprintf("%q", d), "cpu or cuda")
	}
}

// useCPUPrecision sets the CPU backend's precisions from --precision (the
// products' and the convolutions') and then --conv-precision (the
// convolutions' alone), fp32 where the command has no such flag or it is
// not set: fp32 or bf16 (tf32 is refused: no CPU has it). Without
// AVX512_BF16 it says on stderr that bf16 runs as float32 products of
// rounded factors.
func useCPUPrecision(c *cli.Context) error {
	// Every command sets both, so that one run in a process (the tests',
	// reproduce's) never inherits another's.
	products, convs := "fp32", "fp32"
	for _, f := range []struct {
		name string
		dst  []*string
	}{{"precision", []*string{&products, &convs}}, {"conv-precision", []*string{&convs}}} {
		if !c.IsSet(f.name) {
			continue
		}
		p := c.String(f.name)
		if _, ok := tensor.ParseCPUPrecision(p); !ok {
			if strings.EqualFold(strings.TrimSpace(p), "tf32") {
				return fmt.Errorf("--%s tf32: the CPU has no TF32 arithmetic; use fp32 or bf16 on the CPU, or --device cuda", f.name)
			}
			return flagError(f.name, fmt.Sprintf("%q", p), "fp32 or bf16 on the CPU (tf32 on a GPU)")
		}
		for _, d := range f.dst {
			*d = p
		}
	}
	if err := tensor.SetCPUPrecision(products, convs); err != nil {
		return err
	}
	if pr, cv := tensor.CPUPrecisions(); (pr == "bf16" || cv == "bf16") && !gemm.NativeBF16() {
		fmt.Fprintf(c.App.ErrWriter, "duelctl: bf16 on this CPU (no AVX512_BF16, or DUEL_ISA below avx512): the factors are rounded to bfloat16 and multiplied as float32, slower than fp32\n")
	}
	return nil
}

// devicePrecisions returns the precisions of the matrix products and
// convolutions of the backend of devName ("cpu" or "cuda", a
// computeDevice result).
func devicePrecisions(devName string) (products, convs string, err error) {
	if devName == "cuda" {
		return cudaPrecisions()
	}
	products, convs = tensor.CPUPrecisions()
	return products, convs, nil
}

// precisionNote is what a command's first line says of the precisions:
// always on a GPU, on the CPU only when one is not fp32.
func precisionNote(devName, products, convs string) string {
	if devName != "cuda" && products == "fp32" && convs == "fp32" {
		return ""
	}
	return fmt.Sprintf(" (products %s, convolutions %s)", products, convs)
}

// cudaPrecisions returns the precisions of the registered CUDA backend's
// matrix products and convolutions ("fp32", "tf32" or "bf16").
func cudaPrecisions() (products, convs string, err error) {
	be, err := cuda.Registered()
	if err != nil {
		return "", "", err
	}
	return be.Precision().String(), be.ConvPrecision().String(), nil
}

// usePrecision applies the precision flag name, when it is set and the
// command has it, through use, and says on stderr when the GPU runs it in
// FP32 (no tensor cores).
func usePrecision(c *cli.Context, name string, use func(string) (cuda.Precision, error)) error {
	if !c.IsSet(name) {
		return nil
	}
	s := c.String(name)
	if _, err := cuda.ParsePrecision(s); err != nil {
		return flagError(name, fmt.Sprintf("%q", s), "fp32, tf32 or bf16")
	}
	p, err := use(s)
	if err != nil {
		return fmt.Errorf("--%s: %w", name, err)
	}
	if !strings.EqualFold(p.String(), s) {
		fmt.Fprintf(c.App.ErrWriter, "duelctl: --%s %s runs as %s on this GPU (tensor cores need compute capability 8.0)\n", name, s, p)
	}
	return nil
}

// checkDevice validates --device. "cuda" needs a usable GPU (cuda.Available
// says why there is none); the commands that take --device compute on the
// CPU in this version, so a usable GPU is reported rather than silently
// ignored.
func checkDevice(c *cli.Context) error {
	switch d := c.String("device"); d {
	case "cpu":
		return nil
	case "cuda":
		if err := cuda.Available(); err != nil {
			return fmt.Errorf("--device cuda: %w", err)
		}
		return fmt.Errorf("--device cuda: %s computes on the CPU in this version (the CUDA backend passes its kernel tests but is not wired into this command yet); use --device cpu", c.Command.FullName())
	default:
		return flagError("device", fmt.Sprintf("%q", d), "cpu or cuda")
	}
}

// checkCPUOnly validates --device (cpuDeviceFlag) for a command whose work
// runs on the CPU only, why saying which: "cpu" passes; "cuda" is refused,
// on a machine with a GPU or without one, saying so.
func checkCPUOnly(c *cli.Context, why string) error {
	switch d := c.String("device"); d {
	case "cpu":
		return nil
	case "cuda":
		name := c.Command.HelpName
		if name == "" {
			name = c.Command.FullName()
		}
		return fmt.Errorf("--device cuda: %s runs on the CPU only (%s), expected --device cpu", name, why)
	default:
		return flagError("device", fmt.Sprintf("%q", d), "cpu (or cuda, which this benchmark refuses: it runs on the CPU only)")
	}
}

// deviceSync returns a function that waits for the work queued on dev's
// backend (for timings: a device backend queues its launches and returns
// at once), or an error naming dev when its backend is not registered.
// Backends without a queue give a function that returns at once.
func deviceSync(dev tensor.Device) (func() error, error) {
	be, err := tensor.Lookup(dev.BackendName())
	if err != nil {
		return nil, fmt.Errorf("--device %s: %w", dev.BackendName(), err)
	}
	s, ok := be.(interface{ Synchronize() error })
	if !ok {
		return func() error { return nil }, nil
	}
	return s.Synchronize, nil
}

// trainingPrecision returns reproduce.Options.Precision for runs on devName
// ("cpu" or "cuda", a computeDevice result) that train with the products'
// and convolutions' precisions products and convs and are evaluated in the
// device's defaults (fp32 on the CPU; on a GPU cuda.DefaultPrecision and
// cuda.DefaultConvPrecision, what duelctl eval runs in).
func trainingPrecision(devName, products, convs string) (func(training bool) error, error) {
	if devName != "cuda" {
		return func(training bool) error {
			if training {
				return tensor.SetCPUPrecision(products, convs)
			}
			return tensor.SetCPUPrecision("fp32", "fp32")
		}, nil
	}
	defProducts, err := cuda.DefaultPrecision()
	if err != nil {
		return nil, err
	}
	defConvs, err := cuda.DefaultConvPrecision()
	if err != nil {
		return nil, err
	}
	return func(training bool) error {
		p, c := defProducts.String(), defConvs.String()
		if training {
			p, c = products, convs
		}
		if _, err := cuda.UsePrecision(p); err != nil {
			return err
		}
		_, err := cuda.UseConvPrecision(c)
		return err
	}, nil
}
