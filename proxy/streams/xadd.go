package streams

import (
	"math"
	"strconv"

	"github.com/spillway/spillway/codec"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// addArgs are XADD's and XTRIM's options.
type addArgs struct {
	trim       stream.TrimArgs
	id         stream.ID
	idGiven    bool
	seqGiven   bool
	noMkStream bool
	// trimIdx is the index of the trim threshold argument (0: none);
	// an approximate trim's "~" is at trimIdx-1.
	trimIdx int
}

// parseAddTrim parses XADD's options up to its ID, or XTRIM's, as
// Redis's streamParseAddOrTrimArgsOrReply; it returns the index of XADD's
// ID argument.
func parseAddTrim(x *server.Ctx, args [][]byte, xadd bool) (a addArgs, idpos int, err error) {
	i := 2
	limitGiven := false
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			idpos = i
			goto done
		case (cstr.EqualFold(opt, "maxlen") || cstr.EqualFold(opt, "minid")) && more > 0:
			if a.trim.Strategy != stream.TrimNone {
				return a, 0, resp.Err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
			}
			maxlen := cstr.EqualFold(opt, "maxlen")
			a.trim.Approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				a.trim.Approx = next[0] == '~'
				i++
			}
			if maxlen {
				n, err := parseInt(args[i+1], "")
				if err != nil {
					return a, 0, err
				}
				if n < 0 {
					return a, 0, resp.Err("ERR The MAXLEN argument must be >= 0.")
				}
				a.trim.MaxLen, a.trim.Strategy = n, stream.TrimMaxLen
			} else {
				id, err := parseID(args[i+1])
				if err != nil {
					return a, 0, err
				}
				a.trim.MinID, a.trim.Strategy = id, stream.TrimMinID
			}
			i++
			a.trimIdx = i
		case cstr.EqualFold(opt, "limit") && more > 0:
			n, err := parseInt(args[i+1], "")
			if err != nil {
				return a, 0, err
			}
			if n < 0 {
				return a, 0, resp.Err("ERR The LIMIT argument must be >= 0.")
			}
			a.trim.Limit, limitGiven = n, true
			i++
		case xadd && cstr.EqualFold(opt, "nomkstream"):
			a.noMkStream = true
		case xadd:
			id, seqGiven, ok := stream.ParseID(opt, 0, true, true)
			if !ok {
				return a, 0, resp.Err(errInvalidID)
			}
			a.id, a.seqGiven, a.idGiven, idpos = id, seqGiven, true, i
			goto done
		default:
			return a, 0, resp.Err(strops.ErrSyntax)
		}
	}
	idpos = i
done:
	if a.trim.Limit != 0 && a.trim.Strategy == stream.TrimNone {
		return a, 0, resp.Err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
	}
	if !xadd && a.trim.Strategy == stream.TrimNone {
		return a, 0, resp.Err("ERR syntax error, XTRIM must be called with a trimming strategy")
	}
	switch {
	case x.FromMaster():
		// The master rewrote the trim to what it removed: no node limit
		// (LIMIT, given or not, is ignored), as Redis's replicas do.
		a.trim.Limit = 0
	case limitGiven && !a.trim.Approx:
		return a, 0, resp.Err("ERR syntax error, LIMIT cannot be used without the special ~ option")
	case !limitGiven && a.trim.Approx:
		entries, _ := nodeSettings(x)
		a.trim.Limit = 100 * entries
		if a.trim.Limit <= 0 {
			a.trim.Limit = 10000
		}
		a.trim.Limit = min(a.trim.Limit, 1000000)
	case !limitGiven:
		a.trim.Limit = 0
	}
	return a, idpos, nil
}

// cmdXAdd is XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT
// count]] *|id field value [field value ...].
func cmdXAdd(x *server.Ctx, args [][]byte) error {
	a, idpos, err := parseAddTrim(x, args, true)
	if err != nil {
		return err
	}
	fieldPos := idpos + 1
	if n := len(args) - fieldPos; n < 2 || n%2 == 1 {
		return resp.Err("ERR wrong number of arguments for 'xadd' command")
	}
	if a.idGiven && a.seqGiven && stream.IsZero(a.id) {
		return resp.Err("ERR The ID specified in XADD must be greater than 0-0")
	}
	var tot int64
	for _, f := range args[fieldPos:] {
		tot += int64(len(f))
	}
	key := args[1]
	maxEntries, maxBytes := nodeSettings(x)
	err = x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenStream(x.DB(), key, !a.noMkStream)
		if err != nil {
			return err
		}
		if s == nil {
			x.W.Null()
			return nil
		}
		created := s.Created()
		x.NotifyNewKey(created, key) // before the reply, as Redis's dbAdd
		id, err := addID(s, &a, tx.Now())
		if err == nil && tot > 1<<30 {
			err = resp.Err("ERR Elements are too large to be stored")
		}
		if err != nil {
			if cerr := s.Close(); cerr != nil {
				return cerr
			}
			return err
		}
		s.Append(id, args[fieldPos:], maxEntries, maxBytes)
		trimmed := s.Trim(a.trim) > 0
		if x.Replicating() {
			x.RewriteArgs(addPropagated(args, &a, s.Stream, id, idpos)...)
		}
		if err := s.Close(); err != nil {
			return err
		}
		writeID(x.W, id)
		// After the reply, and before the blocked readers this XADD
		// serves (at commit), as in Redis.
		x.Notify(server.NotifyStream, "xadd", key)
		if trimmed {
			x.Notify(server.NotifyStream, "xtrim", key)
		}
		tx.NoteReady(x.DB(), key)
		return nil
	})
	return err
}

// addPropagated returns the form XADD or XTRIM replicates as, given the
// stream after the command (Redis's streamRewriteApproxSpecifier and
// streamRewriteTrimArgument, and XADD's ID rewriting): an approximate
// trim becomes an exact one to the length (MAXLEN) or first ID (MINID,
// the greatest ID if the stream is empty) the stream has now, LIMIT kept
// (a replica ignores it); XADD's "*" or "ms-*" becomes the ID it made
// (idpos >= 0). Argument slices not rewritten are shared with args.
func addPropagated(args [][]byte, a *addArgs, s *stream.Stream, id stream.ID, idpos int) [][]byte {
	out := append([][]byte(nil), args...)
	if a.trim.Approx && a.trimIdx > 0 {
		out[a.trimIdx-1] = []byte("=")
		if a.trim.Strategy == stream.TrimMaxLen {
			out[a.trimIdx] = strconv.AppendInt(nil, s.Len(), 10)
		} else {
			first := stream.MaxID
			if e := s.FirstEntry(); e != nil {
				first = e.ID
			}
			out[a.trimIdx] = stream.AppendID(nil, first)
		}
	}
	if idpos >= 0 && (!a.idGiven || !a.seqGiven) {
		out[idpos] = stream.AppendID(nil, id)
	}
	return out
}

// addID is the ID XADD gives its entry, or Redis's error.
func addID(s *tiering.Stream, a *addArgs, now int64) (stream.ID, error) {
	if s.Last == stream.MaxID {
		return stream.ID{}, resp.Err("ERR The stream has exhausted the last possible ID, unable to add more items")
	}
	var id stream.ID
	switch {
	case a.idGiven && a.seqGiven:
		id = a.id
	case a.idGiven && s.Last.Ms == a.id.Ms:
		if s.Last.Seq == math.MaxUint64 {
			return id, resp.Err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
		}
		id = stream.ID{Ms: s.Last.Ms, Seq: s.Last.Seq + 1}
	case a.idGiven:
		id = a.id
	default:
		id, _ = s.NextID(now)
	}
	if !stream.Less(s.Last, id) {
		return id, resp.Err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
	}
	return id, nil
}

// cmdXTrim is XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count].
func cmdXTrim(x *server.Ctx, args [][]byte) error {
	a, _, err := parseAddTrim(x, args, false)
	if err != nil {
		return err
	}
	var n int64
	err = x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenStream(x.DB(), args[1], false)
		if err != nil || s == nil {
			x.W.Int(0)
			return err
		}
		n = s.Trim(a.trim)
		if n > 0 && x.Replicating() && a.trim.Approx {
			x.RewriteArgs(addPropagated(args, &a, s.Stream, stream.ID{}, -1)...)
		}
		if err := s.Close(); err != nil {
			return err
		}
		if n > 0 {
			x.Notify(server.NotifyStream, "xtrim", args[1]) // before the reply, as in Redis
		}
		x.W.Int(n)
		return nil
	})
	return err
}

// cmdXDel is XDEL key id [id ...].
func cmdXDel(x *server.Ctx, args [][]byte) error {
	var n int64
	err := x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenStream(x.DB(), args[1], false)
		if err != nil || s == nil {
			x.W.Int(0)
			return err
		}
		ids := make([]stream.ID, 0, len(args)-2)
		for _, a := range args[2:] {
			id, err := parseID(a)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			if s.Delete(id) {
				n++
			}
		}
		if err := s.Close(); err != nil {
			return err
		}
		if n > 0 {
			x.Notify(server.NotifyStream, "xdel", args[1]) // before the reply, as in Redis
		}
		x.W.Int(n)
		return nil
	})
	return err
}

// cmdXLen is XLEN key.
func cmdXLen(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := tx.Peek(x.DB(), args[1]) // the meta record's count: a cold stream stays cold
		switch {
		case err != nil:
			return err
		case e == nil:
			x.NotifyKeyMiss(args[1])
			x.W.Int(0)
		case e.Type != codec.TypeStream:
			return tiering.ErrWrongType
		default:
			x.W.Int(e.Count)
		}
		return nil
	})
}

// cmdXRange is XRANGE key start end [COUNT n], and XREVRANGE key end
// start [COUNT n] (rev).
func cmdXRange(x *server.Ctx, args [][]byte, rev bool) error {
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, err := parseRangeID(startArg, 0, false)
	if err != nil {
		return err
	}
	end, err := parseRangeID(endArg, math.MaxUint64, true)
	if err != nil {
		return err
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if cstr.EqualFold(args[j], "count") && j+1 < len(args) {
			if count, err = parseInt(args[j+1], ""); err != nil {
				return err
			}
			count = max(count, 0)
			j++
			continue
		}
		return resp.Err(strops.ErrSyntax)
	}
	return x.View(func(tx *tiering.Tx) error {
		s, err := tx.OpenStream(x.DB(), args[1], false)
		if err != nil || s == nil {
			if s == nil && err == nil {
				x.NotifyKeyMiss(args[1])
			}
			x.W.Array(0)
			return err
		}
		if count == 0 {
			x.W.NullArray()
			return nil
		}
		writeRange(x.W, s.Stream, start, end, count, rev)
		return nil
	})
}

// writeRange writes the entries from start to end, at most count (-1 or
// 0: all).
func writeRange(w *resp.Writer, s *stream.Stream, start, end stream.ID, count int64, rev bool) {
	var items []*stream.Entry
	s.Range(start, end, rev, func(e *stream.Entry) bool {
		items = append(items, e)
		return count <= 0 || int64(len(items)) < count
	})
	w.Array(len(items))
	for _, e := range items {
		writeEntry(w, e)
	}
}

// cmdXSetID is XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id].
func cmdXSetID(x *server.Ctx, args [][]byte) error {
	id, err := parseID(args[2])
	if err != nil {
		return err
	}
	entriesAdded := int64(-1)
	var maxDel stream.ID
	for i := 3; i < len(args); i++ {
		more := len(args) - 1 - i
		switch {
		case cstr.EqualFold(args[i], "entriesadded") && more > 0:
			if entriesAdded, err = parseInt(args[i+1], ""); err != nil {
				return err
			}
			if entriesAdded < 0 {
				return resp.Err("ERR entries_added must be positive")
			}
		case cstr.EqualFold(args[i], "maxdeletedid") && more > 0:
			if maxDel, err = parseID(args[i+1]); err != nil {
				return err
			}
			if stream.Less(id, maxDel) {
				return resp.Err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
			}
		default:
			return resp.Err(strops.ErrSyntax)
		}
		i++
	}
	err = x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenStream(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if s == nil {
			return resp.Err(errNoKey)
		}
		if last, ok := s.LastValid(); ok {
			if stream.Less(id, last) {
				return resp.Err("ERR The ID specified in XSETID is smaller than the target stream top item")
			}
			if entriesAdded != -1 && s.Len() > entriesAdded {
				return resp.Err("ERR The entries_added specified in XSETID is smaller than the target stream length")
			}
		}
		s.Last = id
		if entriesAdded != -1 {
			s.EntriesAdded = uint64(entriesAdded)
		}
		if !stream.IsZero(maxDel) {
			s.MaxDeleted = maxDel
		}
		if err := s.Close(); err != nil {
			return err
		}
		x.W.OK()
		// Inside the transaction: the change it counts makes XSETID
		// propagate.
		x.Notify(server.NotifyStream, "xsetid", args[1])
		return nil
	})
	return err
}
