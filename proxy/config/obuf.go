package config

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
)

// ClientClass is a client class of client-output-buffer-limit.
type ClientClass int

// The classes, in Redis's order (CONFIG GET lists them so).
const (
	ClassNormal ClientClass = iota
	ClassReplica
	ClassPubSub
	numClientClasses
)

// String returns the class's name as CONFIG GET prints it.
func (k ClientClass) String() string {
	switch k {
	case ClassNormal:
		return "normal"
	case ClassReplica:
		return "slave"
	case ClassPubSub:
		return "pubsub"
	}
	return "unknown"
}

// OutputBufferLimit is one class's client-output-buffer-limit: a client
// whose pending output reaches Hard bytes, or stays at Soft bytes or more
// for more than SoftSeconds, is disconnected. Zero bytes means no limit.
type OutputBufferLimit struct {
	Hard, Soft  uint64
	SoftSeconds int64
}

// outputLimits is a parsed client-output-buffer-limit value: every class's
// limits, and which classes the directive named (a directive changes only
// those).
type outputLimits struct {
	lim [numClientClasses]OutputBufferLimit
	set [numClientClasses]bool
}

// defaultOutputLimits are Redis 7.0's defaults.
var defaultOutputLimits = [numClientClasses]OutputBufferLimit{
	ClassNormal:  {0, 0, 0},
	ClassReplica: {256 << 20, 64 << 20, 60},
	ClassPubSub:  {32 << 20, 8 << 20, 60},
}

// Reasons, worded as Redis 7.0 words them.
var (
	errOblArgs  = errors.New("Wrong number of arguments in buffer limit configuration.")
	errOblClass = errors.New("Invalid client class specified in buffer limit configuration.")
	errOblValue = errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
)

// parseOutputLimits parses `<class> <hard> <soft> <soft seconds>`
// groups as Redis's setConfigClientOutputBufferLimitOption does: classes
// normal, slave/replica and pubsub (case-insensitive; not master), sizes
// as memtoull, seconds as strtoll cast to int and not negative. The whole
// value is refused if any group is bad. The result names only the classes
// given; mergeOutputLimits applies it to the current value.
func parseOutputLimits(args []string) (*value, error) {
	if len(args)%4 != 0 {
		return nil, errOblArgs
	}
	ol := &outputLimits{}
	for j := 0; j < len(args); j += 4 {
		var class ClientClass
		switch strings.ToLower(args[j]) {
		case "normal":
			class = ClassNormal
		case "slave", "replica":
			class = ClassReplica
		case "pubsub":
			class = ClassPubSub
		default: // "master" included, as in Redis
			return nil, errOblClass
		}
		hard, ok1 := parseMemoryStrict(args[j+1])
		soft, ok2 := parseMemoryStrict(args[j+2])
		secs, ok3 := parseStrtollInt(args[j+3])
		if !ok1 || !ok2 || !ok3 || secs < 0 {
			return nil, errOblValue
		}
		ol.lim[class] = OutputBufferLimit{Hard: hard, Soft: soft, SoftSeconds: secs}
		ol.set[class] = true
	}
	return &value{obl: ol}, nil
}

// parseMemoryStrict is Redis's memtoull: ParseMemory, refusing a sign.
func parseMemoryStrict(s string) (uint64, bool) {
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	return ParseMemory(s)
}

// parseStrtollInt parses s as C's strtoll(s, &end, 10) with *end == '\0'
// required, then truncates the result to a C int, as Redis does for
// soft_seconds: leading blanks and a sign are accepted, an empty string
// is 0, overflow saturates before the truncation.
func parseStrtollInt(s string) (int64, bool) {
	v, n, _ := cstr.Strtoll(s, 10)
	if n != len(s) {
		return 0, false
	}
	return int64(int32(v)), true
}

// mergeOutputLimits returns the value of client-output-buffer-limit after
// applying v, which names some classes, to old (nil: the defaults).
func mergeOutputLimits(old, v *value) *value {
	base := defaultOutputLimits
	if old != nil && old.obl != nil {
		base = old.obl.lim
	}
	out := &outputLimits{lim: base}
	for k := range out.lim {
		if v.obl.set[k] {
			out.lim[k] = v.obl.lim[k]
		}
		out.set[k] = true
	}
	var b strings.Builder
	for k, l := range out.lim {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(ClientClass(k).String())
		b.WriteString(" " + strconv.FormatUint(l.Hard, 10))
		b.WriteString(" " + strconv.FormatUint(l.Soft, 10))
		b.WriteString(" " + strconv.FormatInt(l.SoftSeconds, 10))
	}
	return &value{obl: out, text: b.String()}
}

// outputLimitsLines renders the value for CONFIG REWRITE as Redis's
// rewriteConfigClientOutputBufferLimitOption does: one line per class
// ("replica" for slave), each forced into the file only when it differs
// from the default.
func outputLimitsLines(v *value) (lines []string, force []bool) {
	for k, l := range v.obl.lim {
		name := ClientClass(k).String()
		if name == "slave" {
			name = "replica"
		}
		lines = append(lines, "client-output-buffer-limit "+name+" "+FormatMemory(l.Hard)+" "+
			FormatMemory(l.Soft)+" "+strconv.FormatInt(l.SoftSeconds, 10))
		force = append(force, l != defaultOutputLimits[k])
	}
	return lines, force
}
