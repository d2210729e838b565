package memory

// scatter writes row[slots[i]] = src[i] for every i with slots[i] >= 0, in
// order (a later i wins on a repeated slot). slots and src have the same
// length; every slot is below len(row), which the caller guarantees (the
// AVX-512 kernel does not check).
func scatter(row, src []int32, slots []int32) {
	n := len(slots)
	src = src[:n]
	m := 0
	if scoreAsm {
		m = n &^ 15
		if m > 0 {
			scatterAsm(row, src[:m], slots[:m])
		}
	}
	scatterGo(row, src[m:], slots[m:])
}

// scatterGo is scatter's loop in Go.
func scatterGo(row, src []int32, slots []int32) {
	for i, s := range slots {
		if s >= 0 {
			row[s] = src[i]
		}
	}
}
