package cmdtable

// Flag is a bit set of command flags.
type Flag uint32

// Command flags, in the order Redis 7.0 reports them.
const (
	FlagWrite Flag = 1 << iota
	FlagReadonly
	FlagDenyOOM
	FlagModule
	FlagAdmin
	FlagPubSub
	FlagNoScript
	FlagBlocking
	FlagLoading
	FlagStale
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagAsking
	FlagFast
	FlagNoAuth
	FlagMayReplicate
	FlagNoMandatoryKeys
	FlagNoAsyncLoading
	FlagNoMulti
	FlagMovableKeys
	FlagAllowBusy
)

var flagNames = [...]string{
	"write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
	"blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking",
	"fast", "no_auth", "may_replicate", "no_mandatory_keys",
	"no_async_loading", "no_multi", "movablekeys", "allow_busy",
}

// FlagByName returns the bit of a command flag as COMMAND INFO spells it
// (exact, lower case), or 0.
func FlagByName(name string) Flag {
	for i, n := range flagNames {
		if n == name {
			return 1 << i
		}
	}
	return 0
}

// KeyFlag is a bit set of key spec flags.
type KeyFlag uint16

// Key spec flags, in the order Redis 7.0 reports them.
const (
	KeyRO KeyFlag = 1 << iota
	KeyRW
	KeyOW
	KeyRM
	KeyAccess
	KeyUpdate
	KeyInsert
	KeyDelete
	KeyNotKey
	KeyIncomplete
	KeyVariableFlags
)

var keyFlagNames = [...]string{
	"RO", "RW", "OW", "RM", "access", "update", "insert", "delete",
	"not_key", "incomplete", "variable_flags",
}

// KeyFlagByName returns the bit of a key spec flag as COMMAND INFO spells
// it ("RO", "access", ...), or 0.
func KeyFlagByName(name string) KeyFlag {
	for i, n := range keyFlagNames {
		if n == name {
			return 1 << i
		}
	}
	return 0
}

// Names appends the names of the flags in f, in Redis's order.
func (f KeyFlag) Names(dst []string) []string {
	for i, n := range keyFlagNames {
		if f&(1<<i) != 0 {
			dst = append(dst, n)
		}
	}
	return dst
}

// MayReplicate reports Redis's may_replicate flag (CMD_MAY_REPLICATE),
// which Redis 7.0's COMMAND reply does not show, so the table generated
// from it never sets FlagMayReplicate: Redis's command definitions give it
// to PUBLISH, SPUBLISH, PFCOUNT, EVAL, EVALSHA and FCALL. CLIENT PAUSE
// WRITE holds these commands and read-only scripts may not call them.
func (c *Command) MayReplicate() bool {
	if c.bits&FlagMayReplicate != 0 {
		return true
	}
	switch c.Name {
	case "publish", "spublish", "pfcount", "eval", "evalsha", "fcall":
		return true
	}
	return false
}
