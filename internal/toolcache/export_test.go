package toolcache

import "time"

// SetClock makes c read the time from now, so a test can make the re-hash
// due without waiting a second. Call it before c is used.
func SetClock(c *Cache, now func() time.Time) { c.now = now }

// OnRehash runs fn in the lock-free re-hash, before the file is read. Call
// it before c is used.
func OnRehash(c *Cache, fn func()) { c.beforeRehash = fn }
