//go:build (!amd64 || noasm) && !darwin

package cpu

// osDescribe adds nothing where the operating system is not macOS: Linux
// answers through sysfs (detect), the rest not at all.
func osDescribe(*Info) {}
