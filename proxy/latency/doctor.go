package latency

import (
	"fmt"
	"strings"
)

// DoctorInput is what LATENCY DOCTOR's advice depends on beyond the
// samples.
type DoctorInput struct {
	Now int64 // unix seconds
	// SlowlogSlowerThan is slowlog-log-slower-than (µs, -1: disabled).
	SlowlogSlowerThan int64
	// Hz is the server's hz.
	Hz int
	// FsyncAlways: appendfsync is always.
	FsyncAlways bool
	// AnonHugePages: the process uses transparent huge pages.
	AnonHugePages bool
}

// advice is one of the doctor's suggestions, in the order it prints them.
type advice int

const (
	adviseBetterVM advice = iota
	adviseSlowlogEnabled
	adviseSlowlogTuning
	adviseSlowlogInspect
	adviseScheduler
	adviseLocalDisk
	adviseSSD
	adviseDataWriteback
	adviseDiskContention
	adviseNoAppendfsync
	adviseRelaxFsync
	adviseWriteLoadInfo
	adviseHz
	adviseLargeObjects
	adviseMassEviction
	adviseDisableTHP
	numAdvice
)

// eventAdvice is the advice each event class calls for.
var eventAdvice = map[string][]advice{
	"fast-command":            {adviseScheduler},
	"aof-write-pending-fsync": {adviseLocalDisk, adviseDiskContention, adviseSSD, adviseDataWriteback},
	"aof-write-active-child":  {adviseNoAppendfsync, adviseDataWriteback, adviseSSD},
	"aof-write-alone":         {adviseLocalDisk, adviseDataWriteback, adviseSSD},
	"aof-fsync-always":        {adviseRelaxFsync},
	"aof-fstat":               {adviseDiskContention, adviseLocalDisk},
	"rdb-unlink-temp-file":    {adviseDiskContention, adviseLocalDisk},
	"aof-rewrite-diff-write":  {adviseWriteLoadInfo, adviseDataWriteback, adviseSSD, adviseLocalDisk},
	"aof-rename":              {adviseWriteLoadInfo, adviseDataWriteback, adviseSSD, adviseLocalDisk},
	"expire-cycle":            {adviseHz, adviseLargeObjects},
	"eviction-del":            {adviseLargeObjects},
	"eviction-cycle":          {adviseMassEviction},
}

// Doctor returns LATENCY DOCTOR's report, in Redis 7.0's words: each
// event's statistics (samples, average, mean deviation, period, worst),
// then the advice the events call for.
func (m *Monitor) Doctor(in DoctorInput) string {
	threshold := m.Threshold()
	m.mu.Lock()
	names := m.namesLocked()
	type stats struct {
		name                      string
		samples                   int
		avg, mad, period, allTime int64
	}
	all := make([]stats, 0, len(names))
	for _, name := range names {
		ts := m.events[name]
		st := stats{name: name, allTime: ts.max}
		h := ts.history()
		var sum, oldest int64
		for _, s := range h {
			sum += s.Latency
			if oldest == 0 || s.Time < oldest {
				oldest = s.Time
			}
		}
		if st.samples = len(h); st.samples > 0 {
			st.avg = sum / int64(st.samples)
			if st.period = in.Now - oldest; st.period == 0 {
				st.period = 1
			}
			var dev int64
			for _, s := range h {
				d := st.avg - s.Latency
				dev += max(d, -d)
			}
			st.mad = dev / int64(st.samples)
		}
		all = append(all, st)
	}
	m.mu.Unlock()

	if len(all) == 0 && threshold == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	var b strings.Builder
	var want [numAdvice]bool
	advices := 0
	add := func(a ...advice) {
		for _, x := range a {
			want[x] = true
			advices++
		}
	}
	for i, st := range all {
		if i == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		period := 0.0
		if st.samples > 0 {
			period = float64(st.period) / float64(st.samples)
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, st.name, st.samples, st.avg, st.mad, period, st.allTime)
		if strings.EqualFold(st.name, "command") {
			switch {
			case in.SlowlogSlowerThan < 0:
				add(adviseSlowlogEnabled)
			case in.SlowlogSlowerThan/1000 > threshold:
				add(adviseSlowlogTuning)
			}
			add(adviseSlowlogInspect, adviseLargeObjects)
		}
		for name, a := range eventAdvice {
			if strings.EqualFold(st.name, name) {
				add(a...)
			}
		}
		b.WriteByte('\n')
	}
	if in.AnonHugePages {
		add(adviseDisableTHP)
	}
	switch {
	case len(all) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
		return b.String()
	case len(all) > 0 && advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
		return b.String()
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	for a := advice(0); a < numAdvice; a++ {
		if !want[a] {
			continue
		}
		switch a {
		case adviseRelaxFsync:
			if !in.FsyncAlways {
				continue
			}
		case adviseHz:
			if in.Hz >= 100 {
				continue
			}
		case adviseSlowlogEnabled, adviseSlowlogTuning:
			b.WriteString(fmt.Sprintf(adviceText[a], threshold*1000))
			continue
		}
		b.WriteString(adviceText[a])
	}
	return b.String()
}

// adviceText is each advice's paragraph, as Redis prints it.
var adviceText = [numAdvice]string{
	adviseBetterVM:       "- If you are using a virtual machine, consider upgrading it with a faster one using a hypervisior that provides less latency during fork() calls. Xen is known to have poor fork() performance. Even in the context of the same VM provider, certain kinds of instances can execute fork faster than others.\n",
	adviseSlowlogEnabled: "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n",
	adviseSlowlogTuning:  "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n",
	adviseSlowlogInspect: "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n",
	adviseScheduler: "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
		"  1) Lower the system load.\n" +
		"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
		"  3) Check if you have a \"noisy neighbour\" problem.\n" +
		"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
		"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n",
	adviseLocalDisk:      "- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n",
	adviseSSD:            "- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log rewriting (resulting in smaller memory usage). With extremely high write load SSD disks can be a good option. However Redis should perform reasonably with high load using normal disks. Use this advice as a last resort.\n",
	adviseDataWriteback:  "- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that after a hard crash the AOF file will have a half-written command at the end and will require to be repaired before Redis restarts.\n",
	adviseDiskContention: "- Try to lower the disk contention. This is often caused by other disk intensive processes running in the same computer (including other Redis instances).\n",
	adviseNoAppendfsync:  "- Assuming from the point of view of data safety this is viable in your environment, you could try to enable the 'no-appendfsync-on-rewrite' option, so that fsync will not be performed while there is a child rewriting the AOF file or producing an RDB file (the moment where there is high disk contention).\n",
	adviseRelaxFsync:     "- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n",
	adviseWriteLoadInfo:  "- Latency during the AOF atomic rename operation or when the final difference is flushed to the AOF file at the end of the rewrite, sometimes is caused by very high write load, causing the AOF buffer to get very large. If possible try to send less commands to accomplish the same work, or use Lua scripts to group multiple operations into a single EVALSHA call.\n",
	adviseHz:             "- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n",
	adviseLargeObjects:   "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n",
	adviseMassEviction:   "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n",
	adviseDisableTHP:     "- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n",
}
