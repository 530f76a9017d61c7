// Package cstr holds the C-compatible string and number helpers Redis
// semantics need: what Redis's C code does with strtod, strtoll/strtoull and
// string2ll, isspace, sdssplitargs, stringmatchlen, "%.17g" and "%.17Lf"
// formatting, so that replies, errors and configuration parsing match Redis
// byte for byte.
//
// Each function mirrors one C function (glibc in the "C" locale, or Redis's
// own util.c/sds.c) and its doc comment says which, and how the edge cases
// (NUL bytes, blanks, overflow, NaN) behave. Functions taking Text accept a
// string or a []byte alike and never allocate for the conversion.
//
// The package imports nothing from the project, so that every package (resp
// and config included) can use it.
package cstr

// Text is a string or byte slice read as C text.
type Text interface {
	~string | ~[]byte
}
