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

// applyMIDR fills i's Vendor (the implementer's name, or "arm64-0xNN"),
// Family (the variant), Model (the part number) and Stepping (the
// revision) from the text of a midr_el1 file ("0x00000000410fd0c1\n"),
// so that Info.Key tells arm64 cores apart. It reports false, leaving i
// alone, for text that is not a MIDR.
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
	return true
}
