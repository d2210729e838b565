package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// smallNet is a network with parameters and buffers (BatchNorm's running
// statistics and num_batches_tracked) for the placement tests.
func smallNet(seed uint64) Module {
	r := rand.New(rand.NewPCG(seed, 1))
	return NewSequential(NewLinear(3, 4, true, r), NewBatchNorm1d(4), NewReLU(), NewLinear(4, 2, false, r))
}

// hostState returns every tensor of m's state dict, read on the host.
func hostState(t *testing.T, m Module) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, e := range StateDictOf(m) {
		out = append(out, hostless.HostData(t, e.Tensor))
	}
	return out
}

// TestStateDictAcrossDevices places a network on the host-less devices
// with To, loads a host state dict into it (LoadStateDict copies in
// through the backend), reads it back with ToHost and loads that into a
// CPU network: every tensor keeps its bits, and every tensor of the placed
// network is on the device.
func TestStateDictAcrossDevices(t *testing.T) {
	for _, dev := range []tensor.Device{hostless.Device, hostless.FusedDevice, tensor.CPU} {
		t.Run(string(dev), func(t *testing.T) {
			src := smallNet(1)
			for _, e := range StateDictOf(src) {
				if e.Name == "1.running_mean" {
					e.Tensor.Fill(0.25)
				}
			}
			want := hostState(t, src)

			m := smallNet(2)
			if err := To(m, dev); err != nil {
				t.Fatal(err)
			}
			if got := DeviceOf(m); got != dev {
				t.Fatalf("DeviceOf = %s, want %s", got, dev)
			}
			if err := LoadStateDict(m, StateDictOf(src), true); err != nil {
				t.Fatal(err)
			}
			for _, e := range StateDictOf(m) {
				if e.Tensor.Device() != dev {
					t.Fatalf("%s on %s after loading, want %s", e.Name, e.Tensor.Device(), dev)
				}
			}
			host, err := StateDictOf(m).ToHost()
			if err != nil {
				t.Fatal(err)
			}
			back := smallNet(3)
			if err := LoadStateDict(back, host, true); err != nil {
				t.Fatal(err)
			}
			for i, got := range hostState(t, back) {
				if host[i].Tensor.Device() != tensor.CPU {
					t.Fatalf("ToHost left %s on %s", host[i].Name, host[i].Tensor.Device())
				}
				if !hostless.SameBits(got, want[i]) {
					t.Fatalf("%s: %v after the round trip, want %v", host[i].Name, got, want[i])
				}
			}
		})
	}
}

// TestToUnknownDevice checks that placing on a device without a backend
// is an error that leaves the network on the CPU.
func TestToUnknownDevice(t *testing.T) {
	m := smallNet(1)
	if err := To(m, "nosuchdevice:0"); err == nil {
		t.Fatal("To an unregistered device: no error")
	}
	for _, e := range StateDictOf(m) {
		if e.Tensor.Device() != tensor.CPU {
			t.Fatalf("%s moved to %s by a failed To", e.Name, e.Tensor.Device())
		}
	}
}
