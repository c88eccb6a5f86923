package upstream

// ChildPID is the process id of a stdio connection's child (0 for other
// transports), so a benchmark can read the server's own CPU time.
func ChildPID(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}
