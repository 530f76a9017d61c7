package config

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
)

// parseArgs parses a directive's arguments as read from a file or the
// command line (the loader has split a multi-argument setting's single
// argument).
func (s *setting) parseArgs(args []string) (*value, error) {
	if !s.kind.multiArg() {
		if len(args) != 1 {
			return nil, errWrongArgs
		}
		return s.parseOne(args[0])
	}
	return s.parseMulti(args)
}

// parseSet parses a CONFIG SET value; a multi-argument setting splits it
// on single spaces, as Redis does (so "1  0" holds an empty argument).
func (s *setting) parseSet(arg string) (*value, error) {
	if !s.kind.multiArg() {
		return s.parseOne(arg)
	}
	var args []string
	if arg != "" {
		args = strings.Split(arg, " ")
	}
	return s.parseMulti(args)
}

func (s *setting) parseMulti(args []string) (*value, error) {
	switch s.kind {
	case kindObuf:
		return parseOutputLimits(args)
	case kindFlags:
		return s.parseFlags(args)
	}
	list, text, err := s.list(args)
	if err != nil {
		return nil, err
	}
	v := &value{list: list, text: text}
	return v, s.runCheck(v)
}

// parseFlags combines enum words: enum[0] is 0, enum[i] is bit i-1; the
// CONFIG GET form names the set bits in enum order.
func (s *setting) parseFlags(args []string) (*value, error) {
	if len(args) == 0 {
		return nil, &enumError{s.enum}
	}
	var bits int64
	for _, a := range args {
		i := s.enumIndex(a)
		if i < 0 {
			return nil, &enumError{s.enum}
		}
		if i > 0 {
			bits |= 1 << (i - 1)
		}
	}
	v := &value{n: bits, text: s.enum[0]}
	if bits != 0 {
		var names []string
		for i := 1; i < len(s.enum); i++ {
			if bits&(1<<(i-1)) != 0 {
				names = append(names, s.enum[i])
			}
		}
		v.text = strings.Join(names, " ")
	}
	return v, s.runCheck(v)
}

func (s *setting) enumIndex(arg string) int {
	for j, e := range s.enum {
		if strings.EqualFold(arg, e) {
			return j
		}
	}
	return -1
}

func (s *setting) parseOne(arg string) (*value, error) {
	v := &value{text: arg}
	switch s.kind {
	case kindInt:
		n, ok := cstr.ParseInt(arg)
		if !ok {
			return nil, errNotInteger
		}
		if n < s.min || n > s.max {
			return nil, errRange(strconv.FormatInt(s.min, 10), strconv.FormatInt(s.max, 10))
		}
		v.n, v.text = n, strconv.FormatInt(n, 10)
	case kindOctal:
		n, end, erange := cstr.Strtoll(arg, 8)
		if end != len(arg) || erange {
			return nil, errNotOctal
		}
		if n < s.min || n > s.max {
			return nil, errRange(strconv.FormatInt(s.min, 8), strconv.FormatInt(s.max, 8))
		}
		v.n, v.text = n, strconv.FormatInt(n, 8)
	case kindMemory:
		u, ok := parseMemoryStrict(arg)
		if !ok {
			return nil, errNotMemory
		}
		if u < s.umin || u > s.umax {
			return nil, errRange(strconv.FormatUint(s.umin, 10), strconv.FormatUint(s.umax, 10))
		}
		v.u, v.text = u, strconv.FormatUint(u, 10)
	case kindPercent:
		return s.parsePercent(arg)
	case kindBool:
		switch {
		case strings.EqualFold(arg, "yes"):
			v.n, v.text = 1, "yes"
		case strings.EqualFold(arg, "no"):
			v.n, v.text = 0, "no"
		default:
			return nil, errNotBool
		}
	case kindEnum:
		i := s.enumIndex(arg)
		if i < 0 {
			return nil, &enumError{s.enum}
		}
		v.n, v.text = int64(i), s.enum[i]
	case kindString:
		v.s = arg
	}
	return v, s.runCheck(v)
}

// parsePercent parses a memory size or a percentage "N%", stored as -N,
// as Redis's PERCENT_CONFIG does (a size above 2⁶³ wraps to a negative
// number and so reads as a percentage there too).
func (s *setting) parsePercent(arg string) (*value, error) {
	n, ok := int64(0), false
	if u, isMem := parseMemoryStrict(arg); isMem {
		n, ok = int64(u), true
	} else if len(arg) > 1 && arg[len(arg)-1] == '%' {
		if p, isInt := cstr.ParseInt(arg[:len(arg)-1]); isInt && p >= 0 {
			n, ok = -p, true
		}
	}
	if !ok {
		return nil, errNotMemoryOrPercent
	}
	v := &value{n: n}
	switch {
	case n < 0 && n < s.min:
		return nil, errors.New("percentage argument must be less or equal to " + strconv.FormatInt(-s.min, 10))
	case n < 0:
		v.text = strconv.FormatInt(-n, 10) + "%"
	case uint64(n) > s.umax || uint64(n) < s.umin:
		return nil, errRange(strconv.FormatUint(s.umin, 10), strconv.FormatUint(s.umax, 10))
	default:
		v.u, v.text = uint64(n), strconv.FormatInt(n, 10)
	}
	return v, s.runCheck(v)
}

func (s *setting) runCheck(v *value) error {
	if s.check == nil {
		return nil
	}
	return s.check(v)
}

type enumError struct{ enum []string }

func (e *enumError) Error() string {
	return "argument(s) must be one of the following: " + strings.Join(e.enum, ", ")
}

// fileLines renders v as the directive lines CONFIG REWRITE writes.
func (s *setting) fileLines(v *value) []string {
	switch s.kind {
	case kindObuf:
		lines, _ := outputLimitsLines(v)
		return lines
	case kindMemory:
		return []string{s.name + " " + FormatMemory(v.u)}
	case kindString:
		return []string{s.name + " " + repr(v.s)}
	case kindList:
		if s.name == "save" {
			if len(v.list) == 0 {
				return []string{`save ""`}
			}
			lines := make([]string, 0, len(v.list)/2)
			for i := 0; i+1 < len(v.list); i += 2 {
				lines = append(lines, "save "+v.list[i]+" "+v.list[i+1])
			}
			return lines
		}
		if len(v.list) == 0 {
			if s.name == "replicaof" {
				return nil // "no one": no line, as Redis rewrites it
			}
			return []string{s.name + ` ""`}
		}
		parts := make([]string, len(v.list))
		for i, a := range v.list {
			parts[i] = bareOrRepr(a)
		}
		return []string{s.name + " " + strings.Join(parts, " ")}
	}
	return []string{s.name + " " + v.text}
}

func checkHz(v *value) error {
	v.n = min(max(v.n, 1), 500)
	v.text = strconv.FormatInt(v.n, 10)
	return nil
}

func checkNotify(v *value) error {
	c, err := canonicalNotify(v.s)
	if err != nil {
		return err
	}
	v.n = notifyFlagsOf(v.s) // the classes as given (see NotifyKeyspaceClasses)
	v.s, v.text = c, c
	return nil
}

func checkDefrag(v *value) error {
	if v.n != 0 {
		return errDefrag
	}
	return nil
}

func checkDBFilename(v *value) error {
	if strings.ContainsRune(v.s, '/') {
		return errDBFilenamePath
	}
	return nil
}

func checkDir(v *value) error {
	if v.s == "" {
		return errEmptyDir
	}
	if abs, err := filepath.Abs(v.s); err == nil {
		v.s = abs
	}
	v.text = v.s
	return nil
}

func checkUpstream(v *value) error {
	if v.s == "" {
		return nil
	}
	_, err := ParseUpstream(v.s)
	return err
}
