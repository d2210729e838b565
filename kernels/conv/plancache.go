package conv

import "sync"

// plans caches the plans of the map sizes and strides seen so far.
var plans sync.Map // [3]int{h, w, stride} -> *Plan

// CachedPlan returns NewPlan(h, w, stride), computed once per process for
// each map size and stride.
func CachedPlan(h, w, stride int) *Plan {
	key := [3]int{h, w, stride}
	if pl, ok := plans.Load(key); ok {
		return pl.(*Plan)
	}
	pl, _ := plans.LoadOrStore(key, NewPlan(h, w, stride))
	return pl.(*Plan)
}
