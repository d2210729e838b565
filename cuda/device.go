package cuda

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// Device is one GPU: its primary context, the stream its work is queued
// on, its compute capability and the kernels loaded on it. It implements
// GPU (and so kernels/cuda.Launcher): launches and copies to the device
// are queued on the stream without waiting, and the calls that read the
// device (CopyFromDevice, Synchronize) wait. Its methods are safe for
// concurrent use.
type Device struct {
	ctx    *driver.Context
	stream *driver.Stream
	dev    driver.Device
	cc     int // compute capability, 10*major + minor
	name   string
	sms    int
	clock  int // the multiprocessors' peak clock, kHz (0: not known)

	mu       sync.Mutex
	mods     map[*kc.Module]*loaded
	loadLog  io.Writer     // where the slow module loads are told (LogSlowLoads; nil: nowhere)
	slowLoad time.Duration // the loading time from which one is told

	staging staging // pinned buffers of CopyToDevice

	prof      atomic.Pointer[profiler] // the profiler while a session is open (StartProfile), else nil
	profState profState
}

// loaded is a module loaded on a device, with the PTX target that loaded.
type loaded struct {
	mod   *driver.Module
	cc    int
	funcs map[string]*driver.Function
}

// Open opens device i (its primary context). The error says why the device
// is unusable and ends with "use --device cpu".
func Open(i int) (*Device, error) {
	n, err := driver.DeviceCount()
	if err != nil {
		return nil, unusable(err)
	}
	v, err := driver.DriverVersion()
	if err != nil {
		return nil, unusable(err)
	}
	if v < minDriver {
		return nil, unusable(fmt.Errorf("the NVIDIA driver supports CUDA %d.%d; duel's PTX (ISA 7.8, from CUDA 11.8) needs CUDA %d.%d or newer (driver 520+)",
			v/1000, v%1000/10, minDriver/1000, minDriver%1000/10))
	}
	if i < 0 || i >= n {
		return nil, unusable(fmt.Errorf("device %d requested, %d present", i, n))
	}
	dev, err := driver.GetDevice(i)
	if err != nil {
		return nil, unusable(err)
	}
	cc, err := dev.ComputeCapability()
	if err != nil {
		return nil, unusable(err)
	}
	name, _ := dev.Name()
	if cc < minCapability {
		return nil, unusable(fmt.Errorf("device %d (%s) has compute capability %d.%d, duel's kernels need %d.%d or newer",
			i, name, cc/10, cc%10, minCapability/10, minCapability%10))
	}
	sms, err := dev.Attribute(driver.AttrMultiprocessorCount)
	if err != nil {
		return nil, unusable(err)
	}
	clock, _ := dev.Attribute(driver.AttrClockRate) // only the peak figures need it
	ctx, err := driver.PrimaryContext(dev)
	if err != nil {
		return nil, unusable(err)
	}
	stream, err := ctx.NewStream()
	if err != nil {
		ctx.Close()
		return nil, unusable(err)
	}
	return &Device{ctx: ctx, stream: stream, dev: dev, cc: cc, name: name, sms: sms, clock: clock, mods: map[*kc.Module]*loaded{}}, nil
}

// String describes the device, e.g. "cuda:0 (NVIDIA A100, sm_80)".
func (d *Device) String() string {
	return fmt.Sprintf("cuda:%d (%s, sm_%d)", d.dev, d.name, d.cc)
}

// Capability returns the compute capability as 10*major + minor.
func (d *Device) Capability() int { return d.cc }

// Launch queues kernel of module m on the device's stream
// (kernels/cuda.Launcher) and returns without waiting for it: a failure
// while the kernel runs is reported by the next call that waits
// (CopyFromDevice, Synchronize). The module is loaded on first use, from
// the PTX of the highest compute capability the device accepts. While a
// profiling session is open (StartProfile) the launch is queued between
// two events, which time it on the device.
func (d *Device) Launch(m *kc.Module, kernel string, cfg kc.Config, args ...any) error {
	f, err := d.function(m, kernel)
	if err != nil {
		return err
	}
	if p := d.profiling(); p != nil {
		return p.around(profKey{m, kernel}, 0, func() error {
			return f.LaunchAsync(d.stream, cfg.Grid, cfg.Block, cfg.Shared, args...)
		})
	}
	return f.LaunchAsync(d.stream, cfg.Grid, cfg.Block, cfg.Shared, args...)
}

// Record records a new event on the device's stream (for timing: see
// Elapsed); close it with its Close method.
func (d *Device) Record() (*driver.Event, error) {
	e, err := d.ctx.NewEvent()
	if err != nil {
		return nil, err
	}
	if err := e.Record(d.stream); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Elapsed waits for end and returns the device time from start to end,
// two events from Record.
func (d *Device) Elapsed(start, end *driver.Event) (time.Duration, error) {
	if err := end.Synchronize(); err != nil {
		return 0, err
	}
	return end.Since(start)
}

// slowModuleLoad is the loading time from which LogSlowLoads tells a
// module's load: the driver compiled its PTX.
const slowModuleLoad = time.Second

// LogSlowLoads makes the device write a line to w for each module whose
// loading takes a second or more, which is the driver compiling the
// module's PTX for the device: it does so on a machine's first use of
// the module, then takes it from its cache (~/.nv/ComputeCache). On a
// fresh machine a GPU run's first step can so take a minute (ptxas's time
// for every module: bench/RESULTS.md, "The driver's JIT of every
// module"); the lines say why. A nil w stops them.
func (d *Device) LogSlowLoads(w io.Writer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loadLog, d.slowLoad = w, slowModuleLoad
}

// function returns kernel of m, loading m if needed.
func (d *Device) function(m *kc.Module, kernel string) (*driver.Function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	lm := d.mods[m]
	if lm == nil {
		var errs []error
		for _, cc := range m.Targets(d.cc) {
			t0 := time.Now()
			mod, err := d.ctx.LoadModule([]byte(m.PTX[cc]))
			if err == nil {
				lm = &loaded{mod: mod, cc: cc, funcs: map[string]*driver.Function{}}
				if took := time.Since(t0); d.loadLog != nil && took >= d.slowLoad {
					target := fmt.Sprintf("sm_%d", cc)
					if m.ArchSpecific {
						target += "a"
					}
					fmt.Fprintf(d.loadLog, "cuda: loading %s on %v took %.1f s: the driver compiled its %s PTX (once a machine: it caches the result in ~/.nv/ComputeCache)\n",
						m.Source, d, took.Seconds(), target)
				}
				break
			}
			errs = append(errs, fmt.Errorf("PTX for sm_%d: %w", cc, err))
		}
		if lm == nil {
			return nil, fmt.Errorf("cuda: %s: no PTX loads on %v: %w", m.Source, d, errors.Join(errs...))
		}
		d.mods[m] = lm
	}
	f := lm.funcs[kernel]
	if f == nil {
		var err error
		if f, err = lm.mod.Function(kernel); err != nil {
			return nil, fmt.Errorf("cuda: %s: %w", m.Source, err)
		}
		lm.funcs[kernel] = f
	}
	return f, nil
}
