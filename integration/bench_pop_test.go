package integration

// Pop cells of the hot-path and proxy sections: SPOP and ZPOPMIN pop a
// structure filled, before each run, with as many members as the run
// pops, so a run never finds it empty (an SPOP of a missing key is a
// cheap nil reply, not a pop) and the preloaded myset and myzset keep
// their sizes. LPOP and RPOP pop mylist, which LPUSH and RPUSH fill.

import (
	"fmt"
	"strconv"

	"github.com/spillway/spillway/integration/harness"
)

const (
	popSetKey  = "popset"
	popZSetKey = "popzset"
	// popFillBatch is how many members one fill command adds.
	popFillBatch = 1000
)

// popCell is a row that pops a structure of its own, filled before the
// run and checked and deleted after it.
type popCell struct {
	key       string
	typ       string   // TYPE's reply for key
	count     string   // the command that counts key's members
	fill      string   // the command that adds members
	withScore bool     // fill takes score member pairs (ZADD)
	args      []string // the popping command
}

// popCells are the rows with a structure of their own, by label.
var popCells = map[string]popCell{
	"SPOP":    {key: popSetKey, typ: "set", count: "SCARD", fill: "SADD", args: []string{"SPOP", popSetKey}},
	"ZPOPMIN": {key: popZSetKey, typ: "zset", count: "ZCARD", fill: "ZADD", withScore: true, args: []string{"ZPOPMIN", popZSetKey}},
}

// sizeSource names the row whose calibrated -n a popping row reuses (it
// pops what that row pushed, or as many as it added), or "" when the row
// is calibrated on its own.
func sizeSource(label string) string {
	switch label {
	case "RPOP":
		return "LPUSH"
	case "LPOP":
		return "RPUSH"
	case "SPOP":
		return "SADD"
	case "ZPOPMIN":
		return "ZADD"
	}
	return ""
}

// popSlack is how many requests beyond -n a run of redis-benchmark may
// send: up to a pipeline per client.
func popSlack(p int) int { return benchClients * p }

// fillPop gives cell's structure n+popSlack(p) members (it must not exist),
// so a run of n pops never empties it.
func fillPop(c *harness.Conn, cell popCell, n, p int) error {
	if r := c.Do("EXISTS", cell.key); r.Type != ':' || r.Int != 0 {
		return fmt.Errorf("EXISTS %s before the fill = %s, want 0", cell.key, r.String())
	}
	total := n + popSlack(p)
	for lo := 0; lo < total; lo += popFillBatch {
		args := []string{cell.fill, cell.key}
		for i := lo; i < min(lo+popFillBatch, total); i++ {
			if cell.withScore {
				args = append(args, strconv.Itoa(i))
			}
			args = append(args, "pop:"+strconv.Itoa(i))
		}
		added := int64(min(lo+popFillBatch, total) - lo)
		if r := c.Do(args...); r.Type != ':' || r.Int != added {
			return fmt.Errorf("%s %s (%d members from %d) = %s, want %d", cell.fill, cell.key, added, lo, r.String(), added)
		}
	}
	return nil
}

// checkPop checks that a run of n pops with pipeline p left cell's
// structure with at most popSlack(p) members (it popped at least n, and
// at most what it may send), then deletes it.
func checkPop(c *harness.Conn, cell popCell, n, p int) error {
	left := int64(0)
	switch r := c.Do("TYPE", cell.key); {
	case r.Type == '+' && r.Str == cell.typ:
		rc := c.Do(cell.count, cell.key)
		if rc.Type != ':' {
			return fmt.Errorf("%s %s after the run: %s", cell.count, cell.key, rc.String())
		}
		left = rc.Int
	case r.Type == '+' && r.Str == "none":
	default:
		return fmt.Errorf("TYPE %s after the run = %s, want %s or none", cell.key, r.String(), cell.typ)
	}
	if left > int64(popSlack(p)) {
		return fmt.Errorf("%s -P %d -n %d left %d of %d members in %s, want at most %d",
			cell.args[0], p, n, left, n+popSlack(p), cell.key, popSlack(p))
	}
	if r := c.Do("DEL", cell.key); r.Type != ':' || r.Int != min(left, 1) {
		return fmt.Errorf("DEL %s after the run = %s", cell.key, r.String())
	}
	return nil
}
