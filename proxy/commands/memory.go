package commands

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
)

// MEMORY, as Redis 7.0's memoryCommand, with Spillway's figures: a hot
// key's usage is what the hot tier's byte accounting charges for its
// decoded copy; a cold key's is the size of its records on disk (before
// compression). STATS reports the server's memory figures under Redis's
// field names (server.MemoryFigures: the startup baseline, the hot tier,
// the Go runtime's heap).

func registerMemory(t *server.Table) {
	t.Register("memory|usage", cmdMemoryUsage)
	t.Register("memory|stats", cmdMemoryStats)
	t.Register("memory|doctor", cmdMemoryDoctor)
	t.Register("memory|malloc-stats", cmdMemoryMallocStats)
	t.Register("memory|purge", cmdMemoryPurge)
	t.Register("memory|help", server.HelpHandler(memoryHelp))
}

// memoryHelp is MEMORY HELP's reply, exactly as Redis 7.0 sends it.
var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Prints this help.",
}

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES count]: the key's bytes, or
// a null for a missing key. SAMPLES is checked as Redis checks it; the
// figure needs no sampling (the hot tier accounts every element, a cold
// key's meta record holds its totals).
func cmdMemoryUsage(x *server.Ctx, args [][]byte) error {
	for j := 3; j < len(args); j++ {
		if !cstr.EqualFold(args[j], "samples") || j+1 >= len(args) {
			return resp.Err("ERR syntax error")
		}
		n, ok := cstr.ParseInt(args[j+1])
		if !ok {
			return resp.Err("ERR value is not an integer or out of range")
		}
		if n < 0 {
			return resp.Err("ERR syntax error")
		}
		j++
	}
	return x.View(func(tx *tiering.Tx) error {
		u, ok, err := tx.KeyUsage(x.DB(), args[2])
		if err != nil {
			return err
		}
		if !ok {
			x.W.Null()
			return nil
		}
		x.W.Int(u.Bytes)
		return nil
	})
}

// memOverhead is getMemoryOverheadData's result, from Spillway's figures.
type memOverhead struct {
	m         server.MemoryFigures
	dbs       []dbOverhead
	overhead  int64 // startup, scripts and the hot entries' overhead
	keys      int64
	dataset   int64
	netUsage  int64 // used less startup (at least 1)
	allocFrag float64
	allocRSS  float64
	rssExtra  float64
	totalFrag float64
}

type dbOverhead struct {
	db   int
	main int64
}

func memoryOverhead(x *server.Ctx) (memOverhead, error) {
	o := memOverhead{m: x.Memory()}
	o.overhead = o.m.Startup + o.m.Lua
	err := x.View(func(tx *tiering.Tx) error {
		for db := range x.Engine().Databases() {
			n := tx.DBSize(db)
			if n == 0 {
				continue
			}
			o.keys += n
			d := dbOverhead{db: db, main: tx.HotOverhead(db)}
			o.overhead += d.main
			o.dbs = append(o.dbs, d)
		}
		return nil
	})
	m := &o.m
	o.dataset = max(m.Used-o.overhead, 0)
	o.netUsage = max(m.Used-m.Startup, 1)
	o.allocFrag = fratio(m.HeapInuse, m.HeapAlloc)
	o.allocRSS = fratio(m.HeapResident, m.HeapInuse)
	o.rssExtra = fratio(m.RSS, m.HeapResident)
	o.totalFrag = fratio(m.RSS, m.Used)
	return o, err
}

// fratio is a/b as Redis's float fields hold it (single precision).
func fratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(float32(float64(a) / float64(b)))
}

// cmdMemoryStats is MEMORY STATS: Redis 7.0's map, field for field.
func cmdMemoryStats(x *server.Ctx, _ [][]byte) error {
	o, err := memoryOverhead(x)
	if err != nil {
		return err
	}
	m := &o.m
	w := x.W
	w.Map(27 + len(o.dbs))
	pair := func(name string, v int64) {
		w.BulkString(name)
		w.Int(v)
	}
	pairF := func(name string, v float64) {
		w.BulkString(name)
		w.Double(v)
	}
	pair("peak.allocated", m.Peak)
	pair("total.allocated", m.Used)
	pair("startup.allocated", m.Startup)
	pair("replication.backlog", 0)
	pair("clients.slaves", 0)
	pair("clients.normal", 0)
	pair("cluster.links", 0)
	pair("aof.buffer", 0)
	pair("lua.caches", m.Lua)
	pair("functions.caches", 0)
	for _, d := range o.dbs {
		w.BulkString("db." + strconv.Itoa(d.db))
		w.Map(3)
		pair("overhead.hashtable.main", d.main)
		pair("overhead.hashtable.expires", 0)
		pair("overhead.hashtable.slot-to-keys", 0)
	}
	pair("overhead.total", o.overhead)
	pair("keys.count", o.keys)
	perKey := int64(0)
	if o.keys > 0 {
		perKey = o.netUsage / o.keys
	}
	pair("keys.bytes-per-key", perKey)
	pair("dataset.bytes", o.dataset)
	pairF("dataset.percentage", float64(float32(float64(o.dataset)*100/float64(o.netUsage))))
	pairF("peak.percentage", float64(float32(float64(m.Used)*100/float64(max(m.Peak, 1)))))
	pair("allocator.allocated", m.HeapAlloc)
	pair("allocator.active", m.HeapInuse)
	pair("allocator.resident", m.HeapResident)
	pairF("allocator-fragmentation.ratio", o.allocFrag)
	pair("allocator-fragmentation.bytes", m.HeapInuse-m.HeapAlloc)
	pairF("allocator-rss.ratio", o.allocRSS)
	pair("allocator-rss.bytes", m.HeapResident-m.HeapInuse)
	pairF("rss-overhead.ratio", o.rssExtra)
	pair("rss-overhead.bytes", m.RSS-m.HeapResident)
	pairF("fragmentation", o.totalFrag)
	pair("fragmentation.bytes", m.RSS-m.Used)
	return nil
}

// Memory doctor's reports, Redis 7.0's texts.
const (
	doctorFine  = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
	doctorEmpty = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	doctorIntro = "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
	doctorPeak  = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n"
	doctorFrag  = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"go\".\n\n"
	doctorAlloc = " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n"
	doctorARSS  = " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n"
	doctorPRSS  = " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n"
	doctorOutro = "I'm here to keep you safe, Sam. I want to help you.\n"
)

// cmdMemoryDoctor is MEMORY DOCTOR: Redis's checks on Spillway's figures.
// "Empty" is judged on what the instance holds beyond its startup
// baseline (the Go runtime's baseline is several times Redis's 5 MB
// threshold).
func cmdMemoryDoctor(x *server.Ctx, _ [][]byte) error {
	o, err := memoryOverhead(x)
	if err != nil {
		return err
	}
	m := &o.m
	const tenMB = 10 << 20
	var report string
	if m.Used-m.Startup < 5<<20 {
		report = doctorEmpty
	} else {
		var issues string
		if float64(m.Peak)/float64(m.Used) > 1.5 {
			issues += doctorPeak
		}
		if o.totalFrag > 1.4 && m.RSS-m.Used > tenMB {
			issues += doctorFrag
		}
		if o.allocFrag > 1.1 && m.HeapInuse-m.HeapAlloc > tenMB {
			issues += doctorAlloc
		}
		if o.allocRSS > 1.1 && m.HeapResident-m.HeapInuse > tenMB {
			issues += doctorARSS
		}
		if o.rssExtra > 1.1 && m.RSS-m.HeapResident > tenMB {
			issues += doctorPRSS
		}
		report = doctorFine
		if issues != "" {
			report = doctorIntro + issues + doctorOutro
		}
	}
	x.W.Verbatim("txt", []byte(report))
	return nil
}

// cmdMemoryMallocStats is MEMORY MALLOC-STATS: where Redis prints
// jemalloc's statistics, the Go runtime's (runtime.MemStats).
func cmdMemoryMallocStats(x *server.Ctx, _ [][]byte) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := fmt.Sprintf("___ Begin Go runtime statistics ___\n"+
		"Version: %q\n"+
		"HeapAlloc: %d\nHeapInuse: %d\nHeapIdle: %d\nHeapReleased: %d\nHeapSys: %d\nHeapObjects: %d\n"+
		"StackInuse: %d\nStackSys: %d\nMSpanInuse: %d\nMCacheInuse: %d\nGCSys: %d\nOtherSys: %d\nSys: %d\n"+
		"TotalAlloc: %d\nMallocs: %d\nFrees: %d\nNumGC: %d\nNextGC: %d\nPauseTotalNs: %d\n"+
		"___ End Go runtime statistics ___\n",
		runtime.Version(),
		ms.HeapAlloc, ms.HeapInuse, ms.HeapIdle, ms.HeapReleased, ms.HeapSys, ms.HeapObjects,
		ms.StackInuse, ms.StackSys, ms.MSpanInuse, ms.MCacheInuse, ms.GCSys, ms.OtherSys, ms.Sys,
		ms.TotalAlloc, ms.Mallocs, ms.Frees, ms.NumGC, ms.NextGC, ms.PauseTotalNs)
	x.W.Verbatim("txt", []byte(s))
	return nil
}

// cmdMemoryPurge is MEMORY PURGE: where Redis purges jemalloc's dirty
// pages, a garbage collection that returns free memory to the OS.
func cmdMemoryPurge(x *server.Ctx, _ [][]byte) error {
	debug.FreeOSMemory()
	x.W.OK()
	return nil
}

// lazyfreeThreshold is Redis's LAZYFREE_THRESHOLD: a value whose free
// effort is above it is freed in the background by UNLINK.
const lazyfreeThreshold = 64

// cmdUnlink is UNLINK: DEL, counting in INFO lazyfreed_objects the values
// Redis would free in the background (dbAsyncDelete: a free effort above
// LAZYFREE_THRESHOLD). Spillway frees them at once either way.
func cmdUnlink(x *server.Ctx, args [][]byte) error {
	var lazy int64
	err := x.View(func(tx *tiering.Tx) error {
		for _, k := range args[1:] {
			n, err := freeEffort(x, tx, k)
			if err != nil {
				return err
			}
			if n > lazyfreeThreshold {
				lazy++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := cmdDel(x, args); err != nil {
		return err
	}
	x.AddLazyFreed(lazy)
	return nil
}

// freeEffort is Redis 7.0's lazyfreeGetFreeEffort for key's value as
// Redis would encode it (0 for a missing key): the element count of a
// hashtable or skiplist, the quicklist nodes of a list (8 KB listpacks,
// list-max-listpack-size -2), 1 for anything compact. The key is not
// loaded.
func freeEffort(x *server.Ctx, tx *tiering.Tx, key []byte) (int64, error) {
	e, err := tx.Inspect(x.DB(), key)
	if e == nil || err != nil {
		return 0, err
	}
	switch e.Type {
	case codec.TypeList:
		const nodeBytes, entryOverhead = 8192, 2
		return (e.Bytes + entryOverhead*e.Count + nodeBytes - 1) / nodeBytes, nil
	case codec.TypeHash, codec.TypeSet:
		if e.Count <= lazyfreeThreshold {
			return 1, nil // at most the threshold either way
		}
		enc, err := collEncoding(tx.PeekColl(x.DB(), key, e), e.Type)
		if err != nil || enc != "hashtable" {
			return 1, err
		}
		return e.Count, nil
	case codec.TypeStream:
		s, err := tx.OpenStream(x.DB(), key, false)
		if s == nil || err != nil {
			return 1, err
		}
		return s.FreeEffort(), nil
	case codec.TypeZSet:
		if e.Count > lazyfreeThreshold {
			if enc, err := zsetEncoding(tx.PeekZSet(x.DB(), key, e)); err != nil || enc == "skiplist" {
				return e.Count, err
			}
		}
	}
	return 1, nil
}
