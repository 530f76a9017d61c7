package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/proxy/cstr"
)

func init() {
	register("dbsize", cmdDBSize)
	register("flushdb", cmdFlushDB)
	register("flushall", cmdFlushAll)
	register("swapdb", cmdSwapDB)
	register("time", cmdTime)
	register("lastsave", func(c *Client, _ [][]byte) { c.w.Int(c.s.lastSave.Load()) })
	register("save", cmdSave)
	register("bgsave", cmdBgsave)
	register("shutdown", cmdShutdown)
	register("config|get", cmdConfigGet)
	register("config|set", cmdConfigSet)
	register("config|resetstat", cmdConfigResetStat)
	register("config|rewrite", cmdConfigRewrite)
	register("config|help", func(c *Client, _ [][]byte) { c.help(configHelp) })
}

// replyError writes the reply for a failed engine operation.
func (c *Client) replyError(err error) {
	c.w.Truncate(c.mark)
	c.s.log.Error("command failed", "client", c.id, "err", err)
	c.err("ERR " + err.Error())
}

func cmdDBSize(c *Client, _ [][]byte) {
	tx := c.begin()
	n := tx.DBSize(c.db)
	c.release(tx)
	c.w.Int(n)
}

// parseFlushMode parses FLUSHDB/FLUSHALL's optional SYNC|ASYNC. Both are
// O(1) here: the store drops a database with range deletions.
func parseFlushMode(c *Client, args [][]byte) bool {
	if len(args) == 1 {
		return true
	}
	if len(args) == 2 && (eqFold(args[1], "sync") || eqFold(args[1], "async")) {
		return true
	}
	c.err("ERR syntax error")
	return false
}

func cmdFlushDB(c *Client, args [][]byte) {
	if !parseFlushMode(c, args) {
		return
	}
	tx := c.begin()
	if err := c.s.touchWatchedInDB(tx, c.db, -1); err != nil {
		c.txErr(tx, err)
		return
	}
	if err := tx.FlushDB(c.db); err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.OK()
	c.commit(tx)
}

func cmdFlushAll(c *Client, args [][]byte) {
	if !parseFlushMode(c, args) {
		return
	}
	tx := c.begin()
	for db := range c.s.engine.Databases() {
		if err := c.s.touchWatchedInDB(tx, db, -1); err != nil {
			c.txErr(tx, err)
			return
		}
	}
	if err := tx.FlushAll(); err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.OK()
	c.commit(tx)
}

func cmdSwapDB(c *Client, args [][]byte) {
	a, ok := cstr.ParseInt(args[1])
	if !ok {
		c.err("ERR invalid first DB index")
		return
	}
	b, ok := cstr.ParseInt(args[2])
	if !ok {
		c.err("ERR invalid second DB index")
		return
	}
	n := int64(c.s.engine.Databases())
	if a < 0 || a >= n || b < 0 || b >= n {
		c.err("ERR DB index is out of range")
		return
	}
	tx := c.begin()
	if a != b {
		for _, p := range [][2]int{{int(a), int(b)}, {int(b), int(a)}} {
			if err := c.s.touchWatchedInDB(tx, p[0], p[1]); err != nil {
				c.txErr(tx, err)
				return
			}
		}
	}
	if err := tx.SwapDB(int(a), int(b)); err != nil {
		c.txErr(tx, err)
		return
	}
	c.s.blocking.noteBlockedKeys(tx, int(a), int(b))
	c.w.OK()
	c.commit(tx)
}

func cmdTime(c *Client, _ [][]byte) {
	now := time.Now()
	c.w.Array(2)
	c.w.BulkInt(now.Unix())
	c.w.BulkInt(int64(now.Nanosecond() / 1000))
}

// save makes everything durable now: the WAL is synced and the memtable
// flushed, so a restart needs no log replay.
func (c *Client) save() error {
	if err := c.s.engine.Cold().SyncWAL(); err != nil {
		return err
	}
	if err := c.s.engine.Cold().Flush(); err != nil {
		return err
	}
	c.s.lastSave.Store(time.Now().Unix())
	return nil
}

func cmdSave(c *Client, _ [][]byte) {
	if err := c.save(); err != nil {
		c.replyError(err)
		return
	}
	c.w.OK()
}

func cmdBgsave(c *Client, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !eqFold(args[1], "schedule")) {
		c.err("ERR syntax error")
		return
	}
	go func() {
		if err := c.save(); err != nil {
			c.s.log.Error("background save failed", "err", err)
		}
	}()
	c.w.Simple("Background saving started")
}

func cmdShutdown(c *Client, args [][]byte) {
	for _, a := range args[1:] {
		switch {
		case eqFold(a, "nosave"), eqFold(a, "save"), eqFold(a, "now"), eqFold(a, "force"):
		case eqFold(a, "abort"):
			c.err("ERR No shutdown in progress.")
			return
		default:
			c.err("ERR syntax error")
			return
		}
	}
	if c.up == nil {
		if _, function, busy := c.s.scripts.Busy(); busy {
			// As Redis: only NOSAVE ends a busy script, and then what the
			// script wrote is discarded (its transaction is aborted).
			if !hasArg(args[1:], "nosave") {
				if function {
					c.err("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
				} else {
					c.err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
				}
				return
			}
			c.s.abortScript.Store(true)
			if !c.s.scripts.ForceKill() {
				c.s.abortScript.Store(false) // it ended meanwhile
			}
		}
	}
	// Every acknowledged write is already in the store's log; the shutdown
	// path syncs and closes it, so SAVE and NOSAVE both lose nothing.
	c.s.log.Info("shutdown requested by client", "client", c.id)
	c.s.requestShutdown()
	c.quit = true
}

// hasArg reports whether args hold word (any case).
func hasArg(args [][]byte, word string) bool {
	for _, a := range args {
		if eqFold(a, word) {
			return true
		}
	}
	return false
}

func cmdConfigGet(c *Client, args [][]byte) {
	pairs := c.s.cfg.Get(args[2:]...)
	c.w.Map(len(pairs))
	for _, p := range pairs {
		c.w.BulkString(p[0])
		c.w.BulkString(p[1])
	}
}

func cmdConfigSet(c *Client, args [][]byte) {
	if len(args)%2 != 0 {
		c.err("ERR wrong number of arguments for 'config|set' command")
		return
	}
	pairs := make([][2]string, 0, (len(args)-2)/2)
	for i := 2; i < len(args); i += 2 {
		pairs = append(pairs, [2]string{string(args[i]), string(args[i+1])})
	}
	if err := c.s.cfg.Set(pairs); err != nil {
		c.err(err.Error())
		return
	}
	c.w.OK()
}

func cmdConfigResetStat(c *Client, _ [][]byte) {
	c.s.engine.Stats.ResetStats()
	st := &c.s.stats
	st.commands.Store(0)
	st.connections.Store(0)
	st.rejectedConns.Store(0)
	st.netIn.Store(0)
	st.netOut.Store(0)
	st.errorReplies.Store(0)
	c.w.OK()
}

func cmdConfigRewrite(c *Client, _ [][]byte) {
	if err := c.s.cfg.Rewrite(); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "ERR ") {
			msg = "ERR " + msg
		}
		c.err(msg)
		return
	}
	c.w.OK()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
