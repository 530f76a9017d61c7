package coldstore

import "fmt"

// CrashForTest stops s as a kill -9 would leave it once the log writer has
// written what was queued (a kill before that loses those writes, as
// appendfsync everysec allows): nothing pending is applied, Pebble's
// memtables are not flushed (it runs without a WAL, so what they held is
// gone), the log is left as written. For tests of recovery; s is unusable
// afterwards.
func (s *Store) CrashForTest() error {
	if err := s.q.waitWritten(s.q.queued.Load()); err != nil {
		return err
	}
	close(s.stop)
	s.wg.Wait()
	s.log.mu.Lock()
	s.log.f.Close()
	s.log.f = nil
	s.log.mu.Unlock()
	s.closeOnce.Do(func() {})
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close pebble: %w", err)
	}
	return nil
}
