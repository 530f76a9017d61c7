package cmdtable

import (
	"errors"

	"github.com/spillway/spillway/proxy/cstr"
)

// Errors of key extraction, worded as COMMAND GETKEYS words them.
var (
	ErrNoKeyArgs      = errors.New("ERR The command has no key arguments")
	ErrInvalidArgs    = errors.New("ERR Invalid arguments specified for command")
	ErrInvalidNumArgs = errors.New("ERR Invalid number of arguments specified for command")
)

// KeyRef is one key argument: its index in the argument vector and the key
// spec flags Redis attaches to it (0 when Redis reports none).
type KeyRef struct {
	Pos   int
	Flags KeyFlag
}

// HasKeys reports whether COMMAND GETKEYS accepts the command at all (it has
// a key finder or a key spec that is not marked not_key).
func (c *Command) HasKeys() bool {
	return c.getKeys.kind != findNone || c.specMiss&KeyNotKey != 0
}

// KeyPositions appends to dst the indexes of the key arguments of this
// invocation (args[0] is the command name; for a subcommand args[1] is the
// subcommand name), in the order COMMAND GETKEYS reports them. Errors are
// ErrNoKeyArgs, ErrInvalidNumArgs (arity) and ErrInvalidArgs (a key count
// or layout Redis rejects). A command flagged no_mandatory_keys may yield
// no positions and no error. It does not allocate when dst has room.
func (c *Command) KeyPositions(args [][]byte, dst []int) ([]int, error) {
	var buf [16]KeyRef
	refs, err := c.KeyRefs(args, buf[:0])
	for _, r := range refs {
		dst = append(dst, r.Pos)
	}
	return dst, err
}

// KeyRefs is KeyPositions with the key flags COMMAND GETKEYSANDFLAGS
// reports.
func (c *Command) KeyRefs(args [][]byte, dst []KeyRef) ([]KeyRef, error) {
	if !c.HasKeys() {
		return dst, ErrNoKeyArgs
	}
	if !c.ArityOK(len(args)) {
		return dst, ErrInvalidNumArgs
	}
	start := len(dst)
	dst = c.findKeys(args, dst)
	if len(dst) == start && c.bits&FlagNoMandatoryKeys == 0 {
		return dst, ErrInvalidArgs
	}
	return dst, nil
}

// findKeys follows getKeysFromCommandWithSpecs: key specs when they are
// complete and their flags fixed, else the command's own finder.
func (c *Command) findKeys(args [][]byte, dst []KeyRef) []KeyRef {
	if c.specMiss&KeyNotKey != 0 && c.specAll&KeyVariableFlags == 0 {
		if out, ok := c.keysFromSpecs(args, dst); ok {
			return out
		}
	}
	return c.getKeys.find(args, dst)
}

// keysFromSpecs applies every key spec (skipping not_key ones). Any spec
// that cannot be resolved, or is incomplete, discards all keys and reports
// false.
func (c *Command) keysFromSpecs(args [][]byte, dst []KeyRef) ([]KeyRef, bool) {
	start := len(dst)
	argc := len(args)
	for i := range c.KeySpecs {
		ks := &c.KeySpecs[i]
		if ks.bits&KeyNotKey != 0 {
			continue
		}
		first := 0
		switch ks.BeginSearch.Type {
		case BeginIndex:
			first = ks.BeginSearch.Index
		case BeginKeyword:
			first = keywordSearch(args, ks.BeginSearch.Keyword, ks.BeginSearch.StartFrom)
			if first == 0 {
				continue // keyword absent: this spec has no keys
			}
		default:
			return dst[:start], false
		}
		var last, step int
		switch ks.FindKeys.Type {
		case FindRange:
			fk := &ks.FindKeys
			step = fk.KeyStep
			switch {
			case fk.LastKey >= 0:
				last = first + fk.LastKey
			case fk.Limit == 0:
				last = argc + fk.LastKey
			default:
				last = first + (argc-first)/fk.Limit + fk.LastKey
			}
		case FindKeyNum:
			fk := &ks.FindKeys
			step = fk.KeyStep
			idx := first + fk.KeyNumIdx
			if fk.KeyNumIdx >= argc || idx >= argc || idx < 0 {
				return dst[:start], false
			}
			n, ok := cstr.ParseInt(args[idx])
			if !ok || n < 0 {
				return dst[:start], false
			}
			first += fk.FirstKey
			last = first + int(n) - 1
		default:
			return dst[:start], false
		}
		if last >= argc || last < first || first >= argc {
			return dst[:start], false
		}
		if step <= 0 {
			return dst[:start], false // never in Redis's table; avoids a loop
		}
		for p := first; p <= last; p += step {
			dst = append(dst, KeyRef{Pos: p, Flags: ks.bits})
		}
		if ks.bits&KeyIncomplete != 0 {
			return dst[:start], false
		}
	}
	return dst, true
}

// keywordSearch returns the index after the keyword, or 0 when it is not
// found. A positive startFrom searches forwards from there up to (not
// including) the last argument; a negative one searches backwards from
// len(args)+startFrom down to (not including) index 1.
func keywordSearch(args [][]byte, keyword string, startFrom int) int {
	argc := len(args)
	begin, end := startFrom, argc-1
	if startFrom <= 0 {
		begin, end = argc+startFrom, 1
	}
	for i := begin; i != end; {
		if i >= argc || i < 1 {
			break
		}
		if cstr.EqualFold(args[i], keyword) {
			return i + 1
		}
		if begin <= end {
			i++
		} else {
			i--
		}
	}
	return 0
}

// atoi mimics glibc atoi: (int)strtol(s, NULL, 10), with strtol clamping to
// the int64 range and the conversion to C int keeping the low 32 bits.
// Parsing stops at a NUL byte, as it would in C.
func atoi(b []byte) int {
	v, _, _ := cstr.Strtoll(b, 10)
	return int(int32(v))
}
