// Package cmdtable holds Redis 7.0's command table (names, arity, flags,
// key specs, ACL categories, tips and COMMAND DOCS documentation), generated
// from a real redis-server into table_gen.go, plus lookups, key extraction
// that follows COMMAND GETKEYS, and byte-exact rendering of the COMMAND
// family's replies.
//
// The table is read-only: callers must not modify any *Command or slice
// reached from this package.
package cmdtable

//go:generate go run ./internal/gen -out table_gen.go

// Command is one Redis command or subcommand.
type Command struct {
	// Name is the lower-case full name: "get", or "client|kill" for a
	// subcommand.
	Name string
	// Arity is Redis's arity: the exact argument count including the
	// command name (and subcommand name), or, when negative, its minimum.
	Arity int
	// Flags are the command flags in the order COMMAND INFO reports them.
	Flags []string
	// FirstKey, LastKey and Step are COMMAND INFO's legacy key range.
	FirstKey, LastKey, Step int
	// ACLCategories are as COMMAND INFO reports them, e.g. "@read".
	ACLCategories []string
	// Tips are the command tips, e.g. "nondeterministic_output".
	Tips []string
	// KeySpecs are the key specifications.
	KeySpecs []KeySpec
	// Subcommands are sorted by name; empty for plain commands.
	Subcommands []*Command
	// Docs is what COMMAND DOCS reports.
	Docs Docs

	// Filled by init.
	parent   *Command
	bits     Flag
	specAll  KeyFlag // union of all key spec flags
	specMiss KeyFlag // flags missing from at least one key spec
	subs     map[string]*Command
	getKeys  keyFinder
	id       int // dense index over commands and subcommands (ID)
}

// Docs is the documentation part of a command (COMMAND DOCS).
type Docs struct {
	Summary    string
	Since      string
	Group      string
	Complexity string // omitted from replies when empty
	// DocFlags are "deprecated" and/or "syscmd".
	DocFlags        []string
	DeprecatedSince string // omitted when empty
	ReplacedBy      string // omitted when empty
	History         []HistoryEntry
	Arguments       []Arg
}

// HistoryEntry is one change of a command's behaviour.
type HistoryEntry struct {
	Version string
	Change  string
}

// Arg is one node of a command's argument tree.
type Arg struct {
	Name string
	// Type is string, integer, double, key, pattern, unix-time,
	// pure-token, oneof or block.
	Type string
	// HasKeySpec reports that the argument names keys (or key patterns)
	// described by KeySpecs[KeySpecIndex].
	HasKeySpec   bool
	KeySpecIndex int
	Token        string // omitted when empty, unless EmptyToken
	// EmptyToken marks a token that is the empty string (MIGRATE's ""
	// placeholder), which replies include.
	EmptyToken      bool
	Summary         string // omitted when empty
	Since           string // omitted when empty
	DeprecatedSince string // omitted when empty
	// Flags are "optional", "multiple", "multiple_token".
	Flags []string
	// Arguments are the children of a oneof or block.
	Arguments []Arg
}

// KeySpec is one Redis key specification.
type KeySpec struct {
	Notes       string // omitted when empty
	Flags       []string
	BeginSearch BeginSearch
	FindKeys    FindKeys

	bits KeyFlag // filled by init
}

// BeginSearchType says how a key spec finds its first key.
type BeginSearchType uint8

// Begin-search types.
const (
	BeginUnknown BeginSearchType = iota
	BeginIndex
	BeginKeyword
)

// BeginSearch locates the first key of a key spec.
type BeginSearch struct {
	Type BeginSearchType
	// Index is the argument index of the first key (BeginIndex).
	Index int
	// Keyword is searched for from StartFrom (negative: from the end,
	// backwards); the first key follows it (BeginKeyword).
	Keyword   string
	StartFrom int
}

// FindKeysType says how a key spec finds its keys after the first.
type FindKeysType uint8

// Find-keys types.
const (
	FindUnknown FindKeysType = iota
	FindRange
	FindKeyNum
)

// FindKeys locates the keys of a key spec from its first key.
type FindKeys struct {
	Type FindKeysType
	// FindRange: LastKey (relative to the first key; negative counts from
	// the end), KeyStep, Limit.
	LastKey int
	KeyStep int
	Limit   int
	// FindKeyNum: the key count is at KeyNumIdx (relative to the begin
	// search result), keys start at FirstKey (relative) every KeyStep.
	KeyNumIdx int
	FirstKey  int
}

// Parent returns the container of a subcommand, or nil.
func (c *Command) Parent() *Command { return c.parent }

// ArityOK reports whether argc arguments (counting the command name, and
// the subcommand name for subcommands) satisfy the command's arity.
func (c *Command) ArityOK(argc int) bool {
	if c.Arity >= 0 {
		return argc == c.Arity
	}
	return argc >= -c.Arity
}

// Bits returns the command flags as a bit set.
func (c *Command) Bits() Flag { return c.bits }

// Is reports whether the command has every flag in f.
func (c *Command) Is(f Flag) bool { return c.bits&f == f && f != 0 }

// HasFlag reports whether the command has the named flag (as COMMAND INFO
// spells it, e.g. "write", "movablekeys"). Unknown names report false.
func (c *Command) HasFlag(f string) bool {
	b := FlagByName(f)
	return b != 0 && c.bits&b != 0
}

// All returns every top-level command, sorted by name.
func All() []*Command { return commandTable }

// Count returns the number of top-level commands (COMMAND COUNT).
func Count() int { return len(commandTable) }

// maxNameLen bounds the names Lookup and Sub accept; longer names cannot
// be commands.
const maxNameLen = 64

var index map[string]*Command

// Lookup returns the top-level command named name (any case), or nil. It
// does not resolve "container|sub" names; see LookupFullName. It does not
// allocate.
func Lookup(name []byte) *Command {
	var buf [maxNameLen]byte
	l, ok := lower(buf[:], name)
	if !ok {
		return nil
	}
	return index[string(l)]
}

// Sub returns the subcommand of c named name (without the container prefix,
// any case), or nil. It does not allocate.
func (c *Command) Sub(name []byte) *Command {
	if c.subs == nil {
		return nil
	}
	var buf [maxNameLen]byte
	l, ok := lower(buf[:], name)
	if !ok {
		return nil
	}
	return c.subs[string(l)]
}

// LookupFullName resolves a name as COMMAND INFO and COMMAND DOCS do: "get",
// "config" (the container) or "config|get". Anything else, including
// "get|x" and names with two '|', yields nil.
func LookupFullName(name []byte) *Command {
	for i, ch := range name {
		if ch != '|' {
			continue
		}
		rest := name[i+1:]
		for _, ch2 := range rest {
			if ch2 == '|' {
				return nil
			}
		}
		base := Lookup(name[:i])
		if base == nil {
			return nil
		}
		return base.Sub(rest)
	}
	return Lookup(name)
}

// LookupArgs resolves the command an argument vector invokes, as Redis's
// lookupCommand does: args[0] names the command and, for a container with
// at least two arguments, args[1] the subcommand. It returns nil for an
// unknown command or subcommand; with a single argument a container is
// returned itself.
func LookupArgs(args [][]byte) *Command {
	if len(args) == 0 {
		return nil
	}
	base := Lookup(args[0])
	if base == nil || len(args) == 1 || base.subs == nil {
		return base
	}
	return base.Sub(args[1])
}

func lower(buf []byte, name []byte) ([]byte, bool) {
	if len(name) > len(buf) {
		return nil, false
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return buf[:len(name)], true
}

func init() {
	index = make(map[string]*Command, len(commandTable))
	for _, c := range commandTable {
		index[c.Name] = c
		initCommand(c)
		if len(c.Subcommands) > 0 {
			c.subs = make(map[string]*Command, len(c.Subcommands))
			for _, s := range c.Subcommands {
				s.parent = c
				initCommand(s)
				c.subs[s.Name[len(c.Name)+1:]] = s
			}
		}
	}
	Full = NewView(func(*Command) bool { return true })
}

// numIDs is how many commands and subcommands the table holds.
var numIDs int

// ID returns the command's dense index, 0 <= ID < NumIDs(): a server keeps
// per-command state (statistics) in a slice indexed by it, with no map
// lookup per command.
func (c *Command) ID() int { return c.id }

// NumIDs returns how many commands and subcommands there are (one ID each).
func NumIDs() int { return numIDs }

func initCommand(c *Command) {
	c.id = numIDs
	numIDs++
	for _, f := range c.Flags {
		c.bits |= FlagByName(f)
	}
	for i := range c.KeySpecs {
		ks := &c.KeySpecs[i]
		for _, f := range ks.Flags {
			ks.bits |= KeyFlagByName(f)
		}
		c.specAll |= ks.bits
		c.specMiss |= ^ks.bits
	}
	c.getKeys = getKeysProcs[c.Name]
}
