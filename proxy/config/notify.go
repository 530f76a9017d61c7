package config

// NotifyKeyspaceClasses returns the notify-keyspace-events classes as
// Redis's NOTIFY_* flags (bit 0 K, 1 E, 2 g, 3 $, 4 l, 5 s, 6 h, 7 z,
// 8 x, 9 e, 10 t, 11 m, 13 d, 14 n), parsed once when the setting is set.
// They are the classes as given: the CONFIG GET form (NotifyKeyspaceEvents)
// drops n next to A, as Redis's does, but Redis keeps notifying it.
func (c *Config) NotifyKeyspaceClasses() int {
	return int(c.load(idxNotifyKeyspaceEvents).n)
}

// notifyFlagsOf parses notify-keyspace-events classes as Redis's
// keyspaceEventsStringToFlags does; unknown characters (rejected by
// canonicalNotify) are ignored.
func notifyFlagsOf(s string) int64 {
	flags := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 'A':
			flags |= notifyAll
		case 'K':
			flags |= notifyKeyspace
		case 'E':
			flags |= notifyKeyevent
		case 'm':
			flags |= notifyKeyMiss
		default:
			for _, nc := range notifyClasses {
				if nc.c == c {
					flags |= nc.flag
				}
			}
		}
	}
	return int64(flags)
}
