package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// leaf is one settable configuration value, addressed by its dotted key.
type leaf struct {
	key   string // e.g. "kafka.embedded_addr"
	env   string // e.g. "MEMSTREAM_KAFKA_EMBEDDED_ADDR"
	value reflect.Value
	// owner and field name the struct field, for the reference's comments.
	owner reflect.Type
	field string
}

// leaves walks the struct by its yaml tags so the key names, the
// environment names and the YAML file can never drift apart.
func leaves(cfg *Config) []leaf {
	var out []leaf
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			key := tag
			if prefix != "" {
				key = prefix + "." + tag
			}
			fv := v.Field(i)
			if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Duration(0)) {
				walk(key, fv)
				continue
			}
			out = append(out, leaf{
				key:   key,
				env:   "MEMSTREAM_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_")),
				value: fv,
				owner: t,
				field: t.Field(i).Name,
			})
		}
	}
	walk("", reflect.ValueOf(cfg).Elem())
	return out
}

// Keys lists every configuration key with its environment variable name.
func Keys() [][2]string {
	cfg := Default()
	var out [][2]string
	for _, l := range leaves(&cfg) {
		out = append(out, [2]string{l.key, l.env})
	}
	return out
}

func applyEnv(cfg *Config, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "MEMSTREAM_") {
			env[k] = v
		}
	}
	for _, l := range leaves(cfg) {
		v, ok := env[l.env]
		if !ok {
			continue
		}
		if err := setValue(l, v); err != nil {
			return fmt.Errorf("%s: %w", l.env, err)
		}
	}
	return nil
}

// Set assigns one value by its dotted key, as a flag override does.
func Set(cfg *Config, key, raw string) error {
	for _, l := range leaves(cfg) {
		if l.key == key {
			return setValue(l, raw)
		}
	}
	return &FieldError{Key: key, Msg: "unknown configuration key"}
}

func setValue(l leaf, raw string) error {
	v := l.value
	bad := func(want string) error {
		return &FieldError{Key: l.key, Msg: fmt.Sprintf("%q is not %s", raw, want)}
	}
	switch {
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(raw)
		if err != nil {
			return bad("a duration (e.g. 30s)")
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(raw)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return bad("a boolean")
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return bad("an integer")
		}
		v.SetInt(n)
	case v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return bad("a number")
		}
		v.SetFloat(f)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		var parts []string
		for _, p := range strings.Split(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	case v.Kind() == reflect.Slice:
		// Structured lists (auth.keys) come as JSON in the environment.
		ptr := reflect.New(v.Type())
		if err := json.Unmarshal([]byte(raw), ptr.Interface()); err != nil {
			if err := yaml.Unmarshal([]byte(raw), ptr.Interface()); err != nil {
				return bad("a JSON list")
			}
		}
		v.Set(ptr.Elem())
	default:
		return &FieldError{Key: l.key, Msg: "cannot be set from text"}
	}
	return nil
}

// secretKeys are masked by Print.
var secretKeys = map[string]bool{
	"llm.api_key": true, "embed.api_key": true, "rerank.api_key": true,
	"defense.audit_salt": true,
}

// Print renders the effective configuration as YAML with secrets masked.
func Print(cfg Config) string {
	masked := cfg
	masked.Auth.Keys = append([]Key(nil), cfg.Auth.Keys...)
	for i := range masked.Auth.Keys {
		if masked.Auth.Keys[i].Key != "" {
			masked.Auth.Keys[i].Key = "****"
		}
	}
	for _, l := range leaves(&masked) {
		if secretKeys[l.key] && l.value.String() != "" {
			l.value.SetString("****")
		}
	}
	if u := masked.Database.URL; u != "embedded" {
		masked.Database.URL = maskURL(u)
	}
	masked.Database.ReadURL = maskURL(masked.Database.ReadURL)
	out, _ := yaml.Marshal(masked)
	return string(out)
}

// maskURL hides the password of a URL while keeping it recognisable.
func maskURL(raw string) string {
	at := strings.LastIndex(raw, "@")
	scheme := strings.Index(raw, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return raw
	}
	userinfo := raw[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return raw[:scheme+3] + user + ":****" + raw[at:]
	}
	return raw
}

// SortedEnvNames lists the environment variables memstream reads, for --help.
func SortedEnvNames() []string {
	var names []string
	for _, k := range Keys() {
		names = append(names, k[1])
	}
	sort.Strings(names)
	return names
}
