package train

import (
	"reflect"
	"strings"
	"testing"
)

func TestSetFlag(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		check       func(c *Config) bool
	}{
		{"steps", " 5000", func(c *Config) bool { return c.Steps == 5000 }},
		{"rho-max", "0.75", func(c *Config) bool { return c.RhoMax == 0.75 }},
		{"dataset", "cifar10", func(c *Config) bool { return c.Dataset == "cifar10" }},
		{"seed", "7", func(c *Config) bool { return c.Seed == 7 }},
		{"keep-checkpoints", "true", func(c *Config) bool { return c.KeepCheckpoints }},
		{"shuffle-bn", "false", func(c *Config) bool { return !c.ShuffleBN }},
		{"mem-refresh", "64", func(c *Config) bool { return c.MemRefresh == 64 }},
		{"eps", "0", func(c *Config) bool { return c.Eps == 0 }},
	} {
		cfg, err := Preset("cpu-small", "dmoco")
		if err != nil {
			t.Fatal(err)
		}
		if err := SetFlag(&cfg, tc.name, tc.value); err != nil {
			t.Errorf("SetFlag(%s, %q): %v", tc.name, tc.value, err)
		} else if !tc.check(&cfg) {
			t.Errorf("SetFlag(%s, %q) left %+v", tc.name, tc.value, cfg)
		}
	}
}

func TestSetFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"steps", "abc", `--steps: got "abc", expected an integer`},
		{"lr", "fast", `--lr: got "fast", expected a number`},
		{"seed", "-1", `--seed: got "-1", expected a non-negative integer`},
		{"keep-checkpoints", "yes please", `--keep-checkpoints: got "yes please", expected true or false`},
		{"stepz", "3", "unknown training flag --stepz (expected one of "},
		{"method", "moco", "unknown training flag --method"},
	} {
		cfg, _ := Preset("tiny", "moco")
		err := SetFlag(&cfg, tc.name, tc.value)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("SetFlag(%s, %q) = %v, want an error starting with %q", tc.name, tc.value, err, tc.want)
		}
	}
}

// TestSettingsNameConfigFields checks that every setting's name is the JSON
// name of the field it sets, with dashes, and that its kind is the field's type.
func TestSettingsNameConfigFields(t *testing.T) {
	var cfg Config
	v := reflect.ValueOf(&cfg).Elem()
	byAddr := map[uintptr]reflect.StructField{}
	for i := 0; i < v.NumField(); i++ {
		byAddr[v.Field(i).Addr().Pointer()] = v.Type().Field(i)
	}
	kinds := map[SettingKind]reflect.Kind{IntSetting: reflect.Int, FloatSetting: reflect.Float64,
		StringSetting: reflect.String, BoolSetting: reflect.Bool, UintSetting: reflect.Uint64}
	seen := map[string]bool{}
	for _, s := range Settings() {
		if seen[s.Name] {
			t.Errorf("setting %s listed twice", s.Name)
		}
		seen[s.Name] = true
		p := reflect.ValueOf(s.field(&cfg))
		f, ok := byAddr[p.Pointer()]
		if !ok {
			t.Errorf("setting %s: not a field of Config", s.Name)
			continue
		}
		if want := strings.ReplaceAll(strings.Split(f.Tag.Get("json"), ",")[0], "_", "-"); want != s.Name {
			t.Errorf("setting %s sets field %s (json %q)", s.Name, f.Name, want)
		}
		if f.Type.Kind() != kinds[s.Kind] {
			t.Errorf("setting %s: kind %d for a field of type %s", s.Name, s.Kind, f.Type)
		}
	}
}
