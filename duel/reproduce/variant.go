package reproduce

import (
	"fmt"
	"slices"
	"strings"

	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/duel/train"
)

// Override is one training setting, "key=value" with key a `duelctl train`
// flag name (train.SetFlag).
type Override struct {
	Key, Value string
}

// String returns "key=value".
func (o Override) String() string { return o.Key + "=" + o.Value }

// gridKeys are the settings every run gets from the grid itself, which
// neither an override nor a variant may change.
var gridKeys = map[string]string{
	"seed":      "the grid's seeds (--seeds)",
	"rho-max":   "the grid's rho_max values (--rho)",
	"imbalance": "the grid (dominant, the paper's profile)",
}

// ParseOverride parses "key=value": key must be a training flag that the
// grid does not set itself, and value must parse as that flag's value (its
// range is checked with the whole configuration).
func ParseOverride(s string) (Override, error) {
	key, value, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(key), "--"))
	if !ok || key == "" {
		return Override{}, fmt.Errorf("%q is not key=value (e.g. steps=3000)", s)
	}
	if by, ok := gridKeys[key]; ok {
		return Override{}, fmt.Errorf("%s is set by %s, not by an override", key, by)
	}
	set, ok := train.LookupSetting(key)
	if !ok {
		return Override{}, fmt.Errorf("unknown training flag --%s (expected one of %s)", key, strings.Join(train.SettingNames(), ", "))
	}
	var scratch train.Config
	if err := set.Set(&scratch, value); err != nil {
		return Override{}, err
	}
	return Override{Key: key, Value: value}, nil
}

// Variant is a method with its own settings, written
// method[:key=value,...] (e.g. dsimclr:negatives=memory,eps=0). The
// settings apply on top of the grid's overrides, in the order given.
type Variant struct {
	Method   string
	Settings []Override
}

// ParseVariant parses a variant spec. The method must be registered
// (ssl.Names), every key a training flag given once, every value valid for
// its flag.
func ParseVariant(spec string) (Variant, error) {
	method, rest, hasSettings := strings.Cut(strings.TrimSpace(spec), ":")
	v := Variant{Method: strings.TrimSpace(method)}
	if _, ok := ssl.Lookup(v.Method); !ok {
		return Variant{}, fmt.Errorf("--method: got %q, expected %s", v.Method, strings.Join(ssl.Names(), ", "))
	}
	if !hasSettings {
		return v, nil
	}
	if strings.TrimSpace(rest) == "" {
		return Variant{}, fmt.Errorf("nothing after %q: expected method:key=value,... (e.g. dsimclr:negatives=memory,eps=0)", method+":")
	}
	for _, kv := range strings.Split(rest, ",") {
		o, err := ParseOverride(kv)
		if err != nil {
			return Variant{}, err
		}
		if _, dup := v.Get(o.Key); dup {
			return Variant{}, fmt.Errorf("%s given twice", o.Key)
		}
		v.Settings = append(v.Settings, o)
	}
	return v, nil
}

// ParseVariantList parses a comma-separated list of variant specs, as
// --methods takes them: a key=value item belongs to the variant before it,
// so "moco,dsimclr:negatives=memory,eps=0" is two variants. It returns the
// specs in canonical form (Variant.String).
func ParseVariantList(s string) ([]string, error) {
	var specs []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			continue
		case strings.Contains(item, "=") && !strings.Contains(item, ":"):
			if len(specs) == 0 {
				return nil, fmt.Errorf("setting %q before any method: expected method:key=value[,key=value]", item)
			}
			last := specs[len(specs)-1]
			if !strings.Contains(last, ":") {
				return nil, fmt.Errorf("setting %q after method %q without a colon: expected %s:%s", item, last, last, item)
			}
			specs[len(specs)-1] = last + "," + item
		default:
			specs = append(specs, item)
		}
	}
	for i, spec := range specs {
		v, err := ParseVariant(spec)
		if err != nil {
			return nil, fmt.Errorf("variant %q: %w", spec, err)
		}
		specs[i] = v.String()
	}
	return specs, nil
}

// Get returns the value of the variant's setting key.
func (v Variant) Get(key string) (string, bool) {
	for _, o := range v.Settings {
		if o.Key == key {
			return o.Value, true
		}
	}
	return "", false
}

// Plain says whether the variant is a method with its defaults.
func (v Variant) Plain() bool { return len(v.Settings) == 0 }

// String returns the spec: method[:key=value,...].
func (v Variant) String() string {
	if v.Plain() {
		return v.Method
	}
	kv := make([]string, len(v.Settings))
	for i, o := range v.Settings {
		kv[i] = o.String()
	}
	return v.Method + ":" + strings.Join(kv, ",")
}

// DirName is the variant's part of a run directory's name: the method, then
// _key-value for each setting, with characters other than letters, digits,
// '.' and '-' replaced by '-' (dsimclr_negatives-memory_eps-0).
func (v Variant) DirName() string {
	var b strings.Builder
	b.WriteString(sanitise(v.Method))
	for _, o := range v.Settings {
		b.WriteString("_" + sanitise(o.Key) + "-" + sanitise(o.Value))
	}
	return b.String()
}

// sanitise keeps letters, digits, '.' and '-' of s and replaces the rest by '-'.
func sanitise(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// runName is the directory name of one run: dmoco-rho0.75-seed0,
// dsimclr_negatives-memory_eps-0-rho0.75-seed1.
func runName(v Variant, rho float64, seed int) string {
	return fmt.Sprintf("%s-rho%g-seed%d", v.DirName(), rho, seed)
}

// parseVariants parses the grid's method entries, which must name distinct
// run directories.
func parseVariants(specs []string) ([]Variant, error) {
	var out []Variant
	var dirs []string
	for _, spec := range specs {
		v, err := ParseVariant(spec)
		if err != nil {
			return nil, fmt.Errorf("--methods: variant %q: %w", spec, err)
		}
		if i := slices.Index(dirs, v.DirName()); i >= 0 {
			return nil, fmt.Errorf("--methods: variants %q and %q share the run name %s, expected distinct variants", out[i], v, v.DirName())
		}
		dirs = append(dirs, v.DirName())
		out = append(out, v)
	}
	return out, nil
}
