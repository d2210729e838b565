package cpu

import (
	"fmt"
	"strconv"
	"strings"
)

// armImplementers names the MIDR implementer codes of the arm64 cores
// duel is likely to meet.
var armImplementers = map[uint64]string{
	0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x48: "HiSilicon", 0x4e: "NVIDIA",
	0x50: "APM", 0x51: "Qualcomm", 0x61: "Apple", 0x6d: "Microsoft", 0xc0: "Ampere",
}

// armParts names the part numbers of Arm Ltd's cores (implementer 0x41),
// as Linux's lscpu spells them.
var armParts = map[int]string{
	0xd03: "Cortex-A53", 0xd04: "Cortex-A35", 0xd05: "Cortex-A55", 0xd07: "Cortex-A57",
	0xd08: "Cortex-A72", 0xd09: "Cortex-A73", 0xd0a: "Cortex-A75", 0xd0b: "Cortex-A76",
	0xd0c: "Neoverse-N1", 0xd0d: "Cortex-A77", 0xd40: "Neoverse-V1", 0xd41: "Cortex-A78",
	0xd44: "Cortex-X1", 0xd46: "Cortex-A510", 0xd47: "Cortex-A710", 0xd48: "Cortex-X2",
	0xd49: "Neoverse-N2", 0xd4a: "Neoverse-E1", 0xd4b: "Cortex-A78C", 0xd4d: "Cortex-A715",
	0xd4e: "Cortex-X3", 0xd4f: "Neoverse-V2", 0xd80: "Cortex-A520", 0xd81: "Cortex-A720",
	0xd82: "Cortex-X4", 0xd84: "Neoverse-V3", 0xd8e: "Neoverse-N3",
}

// applyMIDR fills i's Vendor (the implementer's name, or "arm64-0xNN"),
// Family (the variant), Model (the part number) and Stepping (the
// revision) from the text of a midr_el1 file ("0x00000000410fd0c1\n"),
// and, for an Arm Ltd core it knows, Brand ("Neoverse-N1"), so that
// Info.Key tells arm64 cores apart. It reports false, leaving i alone, for
// text that is not a MIDR.
func applyMIDR(i *Info, text string) bool {
	s := strings.TrimSpace(text)
	if !strings.HasPrefix(s, "0x") || len(s) > 18 {
		return false
	}
	v, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil || v>>32 != 0 || v == 0 {
		return false
	}
	impl := v >> 24 & 0xff
	vendor, ok := armImplementers[impl]
	if !ok {
		vendor = fmt.Sprintf("arm64-%#02x", impl)
	}
	i.Vendor = vendor
	i.Family = int(v >> 20 & 0xf)
	i.Model = int(v >> 4 & 0xfff)
	i.Stepping = int(v & 0xf)
	if impl == 0x41 {
		i.Brand = armParts[i.Model]
	}
	return true
}
