// Package config holds memstream's one typed configuration.
//
// Values are layered: built-in defaults, then a YAML file, then
// MEMSTREAM_<SECTION>_<KEY> environment variables, then command-line
// overrides. Validate names the offending key so a bad value stops start-up
// with a message an operator can act on.
package config
