package driver

import "syscall"

// DefaultLibrary is the driver library Load opens, installed by the NVIDIA
// driver (not by the CUDA toolkit) and found by Windows' DLL search.
const DefaultLibrary = "nvcuda.dll"

// openLibrary opens the DLL at path (LoadLibrary) and returns its handle.
func openLibrary(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

// symbol returns the address of the function name in the DLL h
// (GetProcAddress).
func symbol(h uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(h), name)
}
