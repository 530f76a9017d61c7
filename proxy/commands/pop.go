package commands

import (
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// Argument parsing and pops shared by the list and sorted-set commands.

// listIndex parses an index argument (LINDEX, LRANGE, ZRANGE...).
func listIndex(arg []byte) (int64, error) {
	n, ok := cstr.ParseInt(arg)
	if !ok {
		return 0, resp.Err(strops.ErrNotInteger)
	}
	return n, nil
}

// indexPair parses a start and a stop index (LRANGE, LTRIM, ZRANGE...).
func indexPair(a, b []byte) (start, stop int64, err error) {
	if start, err = listIndex(a); err == nil {
		stop, err = listIndex(b)
	}
	return start, stop, err
}

// listEnd parses LEFT or RIGHT; it reports left.
func listEnd(arg []byte) (left bool, err error) {
	switch {
	case cstr.EqualFold(arg, "left"):
		return true, nil
	case cstr.EqualFold(arg, "right"):
		return false, nil
	}
	return false, resp.Err(strops.ErrSyntax)
}

// timeout parses a blocking command's timeout (seconds, fractional) into
// milliseconds; 0 means for ever.
func timeout(arg []byte) (int64, error) {
	ms, msg := strops.ParseTimeout(arg)
	if msg != "" {
		return 0, resp.Err(msg)
	}
	return ms, nil
}

// cmdMPop is LMPOP numkeys key... LEFT|RIGHT [COUNT n] and ZMPOP (MIN|MAX),
// and their blocking forms BLMPOP/BZMPOP, whose timeout comes first (and
// is checked after the other arguments). ends are the two accepted ends;
// newOp builds the pop for the first end or the other.
func cmdMPop(x *server.Ctx, args [][]byte, blocking bool, ends [2]string, newOp func(first bool, count int64) server.PopOp) error {
	at := 1
	if blocking {
		at = 2
	}
	numkeys, ok := cstr.ParseInt(args[at])
	if !ok || numkeys < 1 {
		return resp.Err("ERR numkeys should be greater than 0")
	}
	whereAt := int64(at) + numkeys + 1
	if numkeys >= int64(len(args)) || whereAt >= int64(len(args)) {
		return resp.Err(strops.ErrSyntax)
	}
	first := cstr.EqualFold(args[whereAt], ends[0])
	if !first && !cstr.EqualFold(args[whereAt], ends[1]) {
		return resp.Err(strops.ErrSyntax)
	}
	count := int64(-1)
	for j := int(whereAt) + 1; j < len(args); j++ {
		if count == -1 && cstr.EqualFold(args[j], "count") && j+1 < len(args) {
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 1 {
				return resp.Err("ERR count should be greater than 0")
			}
			count = n
			continue
		}
		return resp.Err(strops.ErrSyntax)
	}
	if count == -1 {
		count = 1
	}
	op := newOp(first, count)
	keys := args[at+1 : whereAt]
	x.PreventPropagation() // the pop propagates as [LR]POP or ZPOP* with a count
	if blocking {
		ms, err := timeout(args[1])
		if err != nil {
			return err
		}
		return x.PopOrBlock(op, keys, ms, false)
	}
	return x.Update(func(tx *tiering.Tx) error {
		done, err := x.RunPop(tx, op, keys)
		if !done && err == nil {
			x.W.NullArray()
		}
		return err
	})
}

// rankRange normalises Redis rank range arguments (LRANGE, LTRIM, ZRANGE)
// against length n. It returns ok false for an empty range.
func rankRange(start, stop, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}
