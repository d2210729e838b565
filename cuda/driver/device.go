package driver

import (
	"fmt"
	"unsafe"
)

// Device is a CUDA device ordinal as the driver numbers it.
type Device int32

// Attribute is a CUdevice_attribute.
type Attribute int32

// Device attributes used by duel.
const (
	AttrMaxThreadsPerBlock      Attribute = 1
	AttrMaxSharedMemoryPerBlock Attribute = 8
	AttrWarpSize                Attribute = 10
	// AttrClockRate is the peak clock of the multiprocessors, in kHz.
	AttrClockRate              Attribute = 13
	AttrMultiprocessorCount    Attribute = 16
	AttrComputeCapabilityMajor Attribute = 75
	AttrComputeCapabilityMinor Attribute = 76
	// AttrMaxSharedMemoryPerBlockOptin is the most shared memory a block
	// may use once its kernel opts in (Function.SetMaxDynamicShared):
	// 227 KiB on sm_90, 163 KiB on sm_80.
	AttrMaxSharedMemoryPerBlockOptin Attribute = 97
)

// DriverVersion returns the driver's CUDA version as 1000*major + 10*minor.
func DriverVersion() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var v int32
	return int(v), check("cuDriverGetVersion", callRaw(lib.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))))
}

// DeviceCount returns the number of CUDA devices.
func DeviceCount() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var n int32
	return int(n), check("cuDeviceGetCount", callRaw(lib.cuDeviceGetCount, uintptr(unsafe.Pointer(&n))))
}

// GetDevice returns device i (0 <= i < DeviceCount).
func GetDevice(i int) (Device, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var d int32
	if err := check("cuDeviceGet", callRaw(lib.cuDeviceGet, uintptr(unsafe.Pointer(&d)), uintptr(i))); err != nil {
		return 0, fmt.Errorf("device %d: %w", i, err)
	}
	return Device(d), nil
}

// Attribute returns the value of a device attribute.
func (d Device) Attribute(a Attribute) (int, error) {
	var v int32
	err := check("cuDeviceGetAttribute", callRaw(lib.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(d)))
	return int(v), err
}

// ComputeCapability returns the device's compute capability as 10*major +
// minor (e.g. 80 for sm_80).
func (d Device) ComputeCapability() (int, error) {
	major, err := d.Attribute(AttrComputeCapabilityMajor)
	if err != nil {
		return 0, err
	}
	minor, err := d.Attribute(AttrComputeCapabilityMinor)
	return 10*major + minor, err
}

// Name returns the device's name.
func (d Device) Name() (string, error) {
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", callRaw(lib.cuDeviceGetName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(d))); err != nil {
		return "", err
	}
	for i, c := range buf {
		if c == 0 {
			return string(buf[:i]), nil
		}
	}
	return string(buf), nil
}

// TotalMem returns the device's memory in bytes.
func (d Device) TotalMem() (int64, error) {
	var n uint64
	err := check("cuDeviceTotalMem", callRaw(lib.cuDeviceTotalMem, uintptr(unsafe.Pointer(&n)), uintptr(d)))
	return int64(n), err
}
